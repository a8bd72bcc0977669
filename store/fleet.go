package store

import "encoding/binary"

// appendFleet writes the records of picks and of a fleet of s
// (State.Lease, Picks, Asks, Reserve and Mailbox), after the tallies.
func appendFleet(b []byte, s *State) []byte {
	b = appendFlag(b, s.Lease != nil)
	if l := s.Lease; l != nil {
		b = appendBytes(b, []byte(l.Holder))
		b = binary.AppendUvarint(b, l.Term)
		b = binary.AppendVarint(b, l.Renewed)
		b = binary.AppendVarint(b, l.Fleet)
	}
	b = binary.AppendUvarint(b, uint64(len(s.Picks)))
	for _, p := range s.Picks {
		b = binary.AppendUvarint(b, p.Visitor)
		b = binary.AppendVarint(b, p.Bucket)
		b = binary.AppendVarint(b, p.From)
		b = binary.AppendVarint(b, p.Until)
	}
	b = appendAsks(b, s.Asks)
	b = appendFlag(b, s.Reserve != nil)
	if r := s.Reserve; r != nil {
		b = binary.AppendVarint(b, r.Slots)
		b = binary.AppendVarint(b, r.Upto)
		b = binary.AppendVarint(b, r.Set)
	}
	b = appendFlag(b, s.Mailbox != nil)
	if m := s.Mailbox; m != nil {
		b = appendMailbox(b, m)
	}
	return b
}

func appendFlag(b []byte, f bool) []byte {
	if f {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendMailbox(b []byte, m *Mailbox) []byte {
	for _, u := range []uint64{m.Term, m.Seq, m.Acked, m.Version, m.Base, m.Epoch, m.Adopted, m.In, m.Had, m.Upto} {
		b = binary.AppendUvarint(b, u)
	}
	for _, v := range []int64{m.Seen, m.Prev, m.Held, m.Fair} {
		b = binary.AppendVarint(b, v)
	}
	b = appendFlag(b, m.Scarce)
	b = appendFlag(b, m.Back)
	b = appendFlag(b, m.Left)
	b = appendCounts(b, m.Grant)
	b = binary.AppendUvarint(b, uint64(len(m.Batches)))
	for i := range m.Batches {
		x := &m.Batches[i]
		b = binary.AppendUvarint(b, x.Seq)
		b = binary.AppendVarint(b, x.Attempts)
		b = appendSessions(b, x.Sessions)
		b = appendCells(b, x.Waiting)
		b = appendCounts(b, x.Waits)
		b = appendAsks(b, x.Asks)
	}
	return b
}

func appendAsks(b []byte, as []Ask) []byte {
	b = binary.AppendUvarint(b, uint64(len(as)))
	for _, a := range as {
		b = binary.AppendUvarint(b, a.Visitor)
		b = binary.AppendVarint(b, a.Bucket)
		b = binary.AppendVarint(b, a.At)
	}
	return b
}

// fleet reads what appendFleet wrote into s.
func (d *decoder) fleet(s *State) {
	if d.flag() {
		l := &Lease{}
		l.Holder = string(d.bytes())
		l.Term = d.uvarint()
		l.Renewed = d.varint()
		l.Fleet = d.varint()
		s.Lease = l
	}
	if n := d.length(4); n > 0 {
		s.Picks = make([]Pick, n)
		for i := range s.Picks {
			p := &s.Picks[i]
			p.Visitor = d.uvarint()
			p.Bucket = d.varint()
			p.From = d.varint()
			p.Until = d.varint()
		}
	}
	s.Asks = d.asks()
	if d.flag() {
		s.Reserve = &Reserve{Slots: d.varint(), Upto: d.varint(), Set: d.varint()}
	}
	if d.flag() {
		s.Mailbox = d.mailbox()
	}
}

func (d *decoder) flag() bool {
	if len(d.b) == 0 || d.b[0] > 1 {
		d.fail("flag")
		return false
	}
	f := d.b[0] == 1
	d.b = d.b[1:]
	return f
}

func (d *decoder) mailbox() *Mailbox {
	m := &Mailbox{}
	for _, u := range []*uint64{&m.Term, &m.Seq, &m.Acked, &m.Version, &m.Base, &m.Epoch, &m.Adopted, &m.In, &m.Had, &m.Upto} {
		*u = d.uvarint()
	}
	for _, v := range []*int64{&m.Seen, &m.Prev, &m.Held, &m.Fair} {
		*v = d.varint()
	}
	m.Scarce, m.Back, m.Left = d.flag(), d.flag(), d.flag()
	m.Grant = d.counts()
	if n := d.length(6); n > 0 {
		m.Batches = make([]Batch, n)
		for i := range m.Batches {
			x := &m.Batches[i]
			x.Seq = d.uvarint()
			x.Attempts = d.varint()
			x.Sessions = d.sessions()
			x.Waiting = d.cells()
			x.Waits = d.counts()
			x.Asks = d.asks()
			if d.err != nil {
				return nil
			}
		}
	}
	if d.err != nil {
		return nil
	}
	return m
}

func (d *decoder) asks() []Ask {
	n := d.length(3)
	if n == 0 {
		return nil
	}
	as := make([]Ask, n)
	for i := range as {
		a := &as[i]
		a.Visitor = d.uvarint()
		a.Bucket = d.varint()
		a.At = d.varint()
	}
	return as
}

package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrCorrupt is returned by UnmarshalState for bytes that are not a State
// encoded by MarshalState.
var ErrCorrupt = errors.New("waitingroom/store: corrupt state")

// ErrVersion is returned by UnmarshalState for a state encoded in a
// version this release does not read (EncodingVersion): one written by
// another release of the library. Stores return it from Update and Read,
// rather than present the state as lost, so that an instance of one
// release never overwrites the state of another's.
var ErrVersion = errors.New("waitingroom/store: state of another encoding version")

// EncodingVersion is the first byte of every encoded state: the version
// of the encoding. UnmarshalState reads this version only; a state of any
// other version (written by another release of the library) is refused
// with an error wrapping ErrVersion, never taken for a lost state.
const EncodingVersion = 4

// maxLen bounds every length read by UnmarshalState, so corrupt input
// cannot make it allocate without limit.
const maxLen = 1 << 24

// MarshalState encodes s in a compact binary form (varints). Stores that
// keep bytes (Redis, SQL) use it so that every store shares one format.
func MarshalState(s *State) []byte {
	n := 64 + len(s.Settings) + 16*len(s.Sessions) + 12*len(s.Admitted) + 16*len(s.Waiting) + 48*len(s.Instances)
	b := make([]byte, 0, n)
	b = append(b, EncodingVersion)
	b = binary.AppendUvarint(b, s.Epoch)
	b = binary.AppendUvarint(b, s.Version)
	b = binary.AppendVarint(b, s.Clock)
	b = binary.AppendVarint(b, s.Grace)
	b = appendBytes(b, s.Settings)
	b = binary.AppendUvarint(b, s.SettingsVersion)
	b = binary.AppendUvarint(b, s.ConfigHash)
	b = appendSessions(b, s.Sessions)
	b = appendCounts(b, s.Admitted)
	b = appendCells(b, s.Waiting)
	b = binary.AppendUvarint(b, uint64(len(s.Instances)))
	for _, in := range s.Instances {
		b = appendBytes(b, []byte(in.ID))
		b = binary.AppendUvarint(b, math.Float64bits(in.Traffic))
		b = binary.AppendVarint(b, in.Grant)
		b = binary.AppendVarint(b, in.Seen)
		b = binary.AppendUvarint(b, in.Seq)
	}
	b = appendTallies(b, s.Recorded, s.Tallies)
	b = appendFleet(b, s)
	b = appendSeeds(b, s.Seeds)
	if len(s.Places) > 0 {
		// Only in the state of a shuffle's list: a room's state ends
		// with its seeds.
		b = binary.AppendUvarint(b, uint64(len(s.Places)))
		var prev uint64
		for _, p := range s.Places {
			b = binary.AppendUvarint(b, p-prev)
			prev = p
		}
	}
	return b
}

// appendSeeds writes the lottery's seeds, after the fleet's records.
func appendSeeds(b []byte, ss []Seed) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, x := range ss {
		b = binary.AppendVarint(b, x.Start)
		b = binary.AppendVarint(b, x.End-x.Start)
		b = append(b, x.Secret[:]...)
		b = binary.AppendVarint(b, x.Interval)
		b = appendOdds(b, x.Odds)
		b = appendOdds(b, x.Cuts)
		b = binary.AppendVarint(b, x.Prequeued)
	}
	return b
}

// appendOdds writes odds in order of interval: the intervals as deltas,
// the odds as 8 bytes (a varint of them takes 10).
func appendOdds(b []byte, os []Odds) []byte {
	b = binary.AppendUvarint(b, uint64(len(os)))
	var prev int64
	for _, o := range os {
		b = binary.AppendVarint(b, o.Interval-prev)
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(o.Odds))
		prev = o.Interval
	}
	return b
}

// appendCells writes cells, usually sorted: deltas keep them small.
func appendCells(b []byte, cs []Cell) []byte {
	b = binary.AppendUvarint(b, uint64(len(cs)))
	var prevB, prevS int64
	for _, c := range cs {
		b = binary.AppendVarint(b, c.Bucket-prevB)
		b = binary.AppendVarint(b, c.Slot-prevS)
		b = binary.AppendVarint(b, c.N)
		prevB, prevS = c.Bucket, c.Slot
	}
	return b
}

// appendSessions writes sessions with their times as deltas from the
// first one's admission, which keeps most of them to a byte or two.
func appendSessions(b []byte, ss []Session) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	if len(ss) == 0 {
		return b
	}
	base := ss[0].Admitted
	b = binary.AppendVarint(b, base)
	var prev uint64
	for _, x := range ss {
		b = binary.AppendUvarint(b, x.ID-prev) // IDs are sorted: wraps only if not
		prev = x.ID
		b = binary.AppendVarint(b, x.Admitted-base)
		b = binary.AppendVarint(b, x.Seen-x.Admitted)
		flag := byte(0)
		if x.Revoked {
			flag |= 1
		}
		if x.End != 0 {
			flag |= 2
		}
		b = append(b, flag)
		if x.End != 0 {
			b = binary.AppendVarint(b, x.End-x.Admitted)
		}
	}
	return b
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendCounts(b []byte, cs []Count) []byte {
	b = binary.AppendUvarint(b, uint64(len(cs)))
	var prev int64
	for _, c := range cs {
		b = binary.AppendVarint(b, c.Key-prev)
		b = binary.AppendVarint(b, c.N)
		prev = c.Key
	}
	return b
}

// UnmarshalState decodes bytes written by MarshalState. An empty input
// decodes to the zero State. A state of another encoding version returns
// an error wrapping ErrVersion; any other malformed input, an error
// wrapping ErrCorrupt. It never panics.
func UnmarshalState(data []byte) (*State, error) {
	s := &State{}
	if len(data) == 0 {
		return s, nil
	}
	if data[0] != EncodingVersion {
		return nil, fmt.Errorf("%w: the state is of encoding version %d, this release reads %d", ErrVersion, data[0], EncodingVersion)
	}
	d := decoder{b: data[1:]}
	s.Epoch = d.uvarint()
	s.Version = d.uvarint()
	s.Clock = d.varint()
	s.Grace = d.varint()
	s.Settings = d.bytes()
	s.SettingsVersion = d.uvarint()
	s.ConfigHash = d.uvarint()
	s.Sessions = d.sessions()
	s.Admitted = d.counts()
	s.Waiting = d.cells()
	if n := d.length(5); n > 0 {
		s.Instances = make([]Instance, n)
		for i := range s.Instances {
			in := &s.Instances[i]
			in.ID = string(d.bytes())
			in.Traffic = math.Float64frombits(d.uvarint())
			in.Grant = d.varint()
			in.Seen = d.varint()
			in.Seq = d.uvarint()
		}
	}
	s.Recorded, s.Tallies = d.tallies()
	d.fleet(s)
	s.Seeds = d.seeds()
	if len(d.b) > 0 {
		s.Places = d.places()
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(d.b))
	}
	return s, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated or invalid %s", ErrCorrupt, what)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// length reads a count of items, each at least minBytes long, and rejects
// counts the remaining input cannot hold.
func (d *decoder) length(minBytes int) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > maxLen || n*uint64(minBytes) > uint64(len(d.b)) {
		d.fail("length")
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.length(1)
	if n == 0 {
		return nil
	}
	v := make([]byte, n)
	copy(v, d.b[:n])
	d.b = d.b[n:]
	return v
}

func (d *decoder) sessions() []Session {
	n := d.length(5)
	if n == 0 {
		return nil
	}
	base := d.varint()
	if d.err != nil {
		return nil
	}
	// The records are the bulk of a busy room's state: they are read from
	// a local slice, with d.b written once at the end.
	b := d.b
	uv := func() uint64 {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			b = nil
			return 0
		}
		b = b[k:]
		return v
	}
	sv := func() int64 {
		v, k := binary.Varint(b)
		if k <= 0 {
			b = nil
			return 0
		}
		b = b[k:]
		return v
	}
	ss := make([]Session, n)
	var prev uint64
	for i := range ss {
		x := &ss[i]
		x.ID = prev + uv()
		prev = x.ID
		x.Admitted = base + sv()
		x.Seen = x.Admitted + sv()
		if len(b) == 0 || b[0] > 3 {
			d.fail("session")
			return nil
		}
		flag := b[0]
		b = b[1:]
		x.Revoked = flag&1 != 0
		if flag&2 != 0 {
			// An End that decodes to 0 is no End: the encoder never
			// writes one, and reading it back must give the same state.
			if x.End = x.Admitted + sv(); x.End == 0 || b == nil {
				d.fail("session end")
				return nil
			}
		}
	}
	d.b = b
	return ss
}

func (d *decoder) cells() []Cell {
	n := d.length(3)
	if n == 0 {
		return nil
	}
	cs := make([]Cell, n)
	var prevB, prevS int64
	for i := range cs {
		c := &cs[i]
		c.Bucket = prevB + d.varint()
		c.Slot = prevS + d.varint()
		c.N = d.varint()
		prevB, prevS = c.Bucket, c.Slot
	}
	return cs
}

// seeds reads what appendSeeds wrote.
func (d *decoder) seeds() []Seed {
	n := d.length(37)
	if n == 0 {
		return nil
	}
	ss := make([]Seed, n)
	for i := range ss {
		x := &ss[i]
		x.Start = d.varint()
		x.End = x.Start + d.varint()
		d.fixed(x.Secret[:], "seed")
		x.Interval = d.varint()
		x.Odds = d.odds()
		x.Cuts = d.odds()
		x.Prequeued = d.varint()
		if d.err != nil {
			return nil
		}
	}
	return ss
}

// places reads the list of a shuffle's places: ascending, each below
// 2^53.
func (d *decoder) places() []uint64 {
	n := d.length(1)
	ps := make([]uint64, n)
	var prev uint64
	for i := range ps {
		delta := d.uvarint()
		if i > 0 && delta == 0 || delta >= 1<<53-prev {
			d.fail("places")
			return nil
		}
		prev += delta
		ps[i] = prev
	}
	if n == 0 {
		d.fail("places")
	}
	return ps
}

// fixed reads len(dst) bytes into dst.
func (d *decoder) fixed(dst []byte, what string) {
	if len(d.b) < len(dst) {
		d.fail(what)
		return
	}
	d.b = d.b[copy(dst, d.b):]
}

// odds reads what appendOdds wrote; odds outside [0, 1] are corrupt.
func (d *decoder) odds() []Odds {
	n := d.length(9)
	if n == 0 {
		return nil
	}
	os := make([]Odds, n)
	var prev int64
	for j := range os {
		prev += d.varint()
		if len(d.b) < 8 {
			d.fail("odds")
			return nil
		}
		os[j] = Odds{Interval: prev, Odds: math.Float64frombits(binary.BigEndian.Uint64(d.b))}
		d.b = d.b[8:]
		if !(os[j].Odds >= 0 && os[j].Odds <= 1) {
			d.fail("odds")
			return nil
		}
	}
	return os
}

func (d *decoder) counts() []Count {
	n := d.length(2)
	if n == 0 {
		return nil
	}
	cs := make([]Count, n)
	var prev int64
	for i := range cs {
		cs[i].Key = prev + d.varint()
		cs[i].N = d.varint()
		prev = cs[i].Key
	}
	return cs
}

// Decode returns the state encoded in data as a Store presents it: the
// zero State when data is empty or corrupt (a state that cannot be read
// is a lost one), and an error wrapping ErrVersion, with no state, when
// data is a state of another encoding version. Stores use it for every
// read, so that they all treat a state they cannot read alike.
func Decode(data []byte) (*State, error) {
	st, err := UnmarshalState(data)
	switch {
	case errors.Is(err, ErrVersion):
		return nil, err
	case err != nil:
		return &State{}, nil
	}
	return st, nil
}

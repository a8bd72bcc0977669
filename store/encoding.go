package store

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrCorrupt is returned by UnmarshalState for bytes that are not a State
// encoded by MarshalState.
var ErrCorrupt = errors.New("waitingroom/store: corrupt state")

// The first byte of every encoded state is its encoding version.
//
// Instances of two releases may share a room during a rolling upgrade, so
// a release reads the previous release's encoding as well as its own, and
// writes either: a State carries the version it was read in (Encoding),
// and package waitingroom sets it to the newest version that every live
// instance reads (each instance's ID says which; see docs/design.md,
// "Rolling upgrades"). Once every instance of the previous release is
// gone, the state is written in the current version again.
const (
	// EncodingVersion is the current encoding: SessionsEncoding followed
	// by the tallies of the recent minutes (State.Tallies, Recorded).
	EncodingVersion = 4
	// SessionsEncoding is the encoding of the release before kept
	// history (version 3): a record per admitted session, no tallies.
	// This release reads it, and writes it while an instance that reads
	// no newer one shares the room; State.Tallies are then not written.
	SessionsEncoding = 3
	// PreviousEncoding is the previous release's encoding (version 2):
	// the same layout, with active visitors counted by the second of
	// their latest check-in where version 3 keeps session records. Read,
	// each count becomes legacy session records (MinLegacyID); written,
	// the sessions are counted by the second of their latest sign of
	// life again. A state of any other version (version 1 counted by
	// 10-second slot) reads as corrupt, which stores present as a lost
	// state.
	PreviousEncoding = 2
)

// MinLegacyID is the smallest ID of a legacy session record: one of the
// active visitors that a state of PreviousEncoding counted by the second
// of their check-in, without an identity. UnmarshalState makes one record
// per such visitor, Admitted and Seen at that second, with IDs from
// MinLegacyID up, in the order of their seconds; no visitor's identity is
// ever that large (package waitingroom draws, derives and accepts only
// smaller ones), so a legacy record never merges with a visitor's.
const MinLegacyID = 1<<64 - 1<<32

// maxLegacy bounds the legacy session records UnmarshalState makes from
// a state of PreviousEncoding (a count is a number, not a length the
// input must hold, so it needs a bound of its own): about a million
// visitors active at once. A state counting more reads as corrupt.
const maxLegacy = 1 << 20

// maxLen bounds every length read by UnmarshalState, so corrupt input
// cannot make it allocate without limit.
const maxLen = 1 << 24

// MarshalState encodes s in a compact binary form (varints). Stores that
// keep bytes (Redis, SQL) use it so that every store shares one format.
//
// It writes the encoding s.Encoding names: PreviousEncoding,
// SessionsEncoding (without the tallies), or the current one for any other
// value. In PreviousEncoding, the sessions
// that are neither revoked nor ended by s.Clock are counted by the
// second of their Seen, what that release kept; the rest of the records
// (revokes, spent places, identities) is not written.
func MarshalState(s *State) []byte {
	n := 64 + len(s.Settings) + 16*len(s.Sessions) + 12*len(s.Admitted) + 16*len(s.Waiting) + 48*len(s.Instances)
	b := make([]byte, 0, n)
	switch s.Encoding {
	case PreviousEncoding, SessionsEncoding:
		b = append(b, byte(s.Encoding))
	default:
		b = append(b, EncodingVersion)
	}
	b = binary.AppendUvarint(b, s.Epoch)
	b = binary.AppendUvarint(b, s.Version)
	b = binary.AppendVarint(b, s.Clock)
	b = binary.AppendVarint(b, s.Grace)
	b = appendBytes(b, s.Settings)
	b = binary.AppendUvarint(b, s.SettingsVersion)
	b = binary.AppendUvarint(b, s.ConfigHash)
	if s.Encoding == PreviousEncoding {
		b = appendCounts(b, activeBySecond(s.Sessions, floorDiv(s.Clock, 1000)))
	} else {
		b = appendSessions(b, s.Sessions)
	}
	b = appendCounts(b, s.Admitted)
	b = binary.AppendUvarint(b, uint64(len(s.Waiting)))
	var prevB, prevS int64
	for _, c := range s.Waiting {
		// Cells are usually sorted: deltas keep them small.
		b = binary.AppendVarint(b, c.Bucket-prevB)
		b = binary.AppendVarint(b, c.Slot-prevS)
		b = binary.AppendVarint(b, c.N)
		prevB, prevS = c.Bucket, c.Slot
	}
	b = binary.AppendUvarint(b, uint64(len(s.Instances)))
	for _, in := range s.Instances {
		b = appendBytes(b, []byte(in.ID))
		b = binary.AppendUvarint(b, math.Float64bits(in.Traffic))
		b = binary.AppendVarint(b, in.Grant)
		b = binary.AppendVarint(b, in.Seen)
		b = binary.AppendUvarint(b, in.Seq)
	}
	if s.Encoding != PreviousEncoding && s.Encoding != SessionsEncoding {
		b = appendTallies(b, s.Recorded, s.Tallies)
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

// activeBySecond counts the sessions that are neither revoked nor ended
// at now (Unix seconds) by the second they were last seen, sorted by
// second: the active counts of PreviousEncoding.
func activeBySecond(ss []Session, now int64) []Count {
	by := make(map[int64]int64, len(ss))
	for _, x := range ss {
		if !x.Revoked && (x.End == 0 || x.End > now) {
			by[x.Seen]++
		}
	}
	cs := make([]Count, 0, len(by))
	for k, n := range by {
		cs = append(cs, Count{Key: k, N: n})
	}
	slices.SortFunc(cs, func(a, b Count) int { return cmp.Compare(a.Key, b.Key) })
	return cs
}

// legacySessions makes the legacy session records of the active counts of
// a state of PreviousEncoding: a record per visitor counted, Admitted and
// Seen at the count's second, IDs from MinLegacyID up in the order of the
// seconds. A second whose counts add up to zero or less counts nobody
// (the previous release never wrote a second twice; one counted below
// zero, where a visitor left whose count had moved, is not taken from
// the other seconds, which could count a visitor still there).
func legacySessions(cs []Count) ([]Session, error) {
	cs = slices.Clone(cs)
	slices.SortStableFunc(cs, func(a, b Count) int { return cmp.Compare(a.Key, b.Key) })
	sums := cs[:0]
	for _, c := range cs {
		if n := len(sums); n > 0 && sums[n-1].Key == c.Key {
			sums[n-1].N += c.N
			continue
		}
		sums = append(sums, c)
	}
	var n int64
	for _, c := range sums {
		if c.N > 0 {
			if n += c.N; n > maxLegacy {
				return nil, fmt.Errorf("%w: more than %d active visitors counted by second", ErrCorrupt, maxLegacy)
			}
		}
	}
	if n == 0 {
		return nil, nil
	}
	ss := make([]Session, 0, n)
	for _, c := range sums {
		for range max(c.N, 0) {
			ss = append(ss, Session{ID: MinLegacyID + uint64(len(ss)), Admitted: c.Key, Seen: c.Key})
		}
	}
	return ss, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
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

// UnmarshalState decodes bytes written by MarshalState, in the current
// encoding or PreviousEncoding, and sets the State's Encoding to the one
// it read (0 for the current one). An empty input decodes to the zero
// State. Any other malformed input returns an error wrapping ErrCorrupt;
// it never panics.
func UnmarshalState(data []byte) (*State, error) {
	s := &State{}
	if len(data) == 0 {
		return s, nil
	}
	switch data[0] {
	case EncodingVersion:
	case PreviousEncoding, SessionsEncoding:
		s.Encoding = int(data[0])
	default:
		return nil, fmt.Errorf("%w: unknown encoding version %d", ErrCorrupt, data[0])
	}
	d := decoder{b: data[1:]}
	s.Epoch = d.uvarint()
	s.Version = d.uvarint()
	s.Clock = d.varint()
	s.Grace = d.varint()
	s.Settings = d.bytes()
	s.SettingsVersion = d.uvarint()
	s.ConfigHash = d.uvarint()
	if s.Encoding == PreviousEncoding {
		if active := d.counts(); d.err == nil {
			var err error
			if s.Sessions, err = legacySessions(active); err != nil {
				return nil, err
			}
		}
	} else {
		s.Sessions = d.sessions()
	}
	s.Admitted = d.counts()
	if n := d.length(3); n > 0 {
		s.Waiting = make([]Cell, n)
		var prevB, prevS int64
		for i := range s.Waiting {
			c := &s.Waiting[i]
			c.Bucket = prevB + d.varint()
			c.Slot = prevS + d.varint()
			c.N = d.varint()
			prevB, prevS = c.Bucket, c.Slot
		}
	}
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
	if s.Encoding == 0 {
		s.Recorded, s.Tallies = d.tallies()
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

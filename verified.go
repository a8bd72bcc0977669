package waitingroom

import (
	"hash/maphash"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
)

// verified remembers the admitted cookies that opened lately, so that a
// visitor's every request does not pay for the cipher again: the same
// cookie value opens to the same state, and every check that depends on
// the time (session alive, re-issue, future times) still runs on it. Two
// generations turn over once a minute, when an admitted visitor's cookie
// is re-issued at the latest; each holds at most max entries. Looking a
// cookie up takes no lock and does not allocate; remembering one takes
// the lock of the writers. It is safe for concurrent use.
type verified struct {
	max  int64
	seed maphash.Seed
	key  uint64     // mixed into hashes
	mu   sync.Mutex // remembering, turning over
	gen  atomic.Pointer[verifiedGen]
}

// verifiedGen is the two generations: entries remembered in the minute
// (Unix minutes) go to cur. It is replaced whole, never changed, except
// for the slots of cur, which writers fill under verified.mu.
type verifiedGen struct {
	minute    int64
	cur, prev *verifiedTable
}

// verifiedTable is an open-addressing hash table of entries by cookie
// value, with linear probing, at most half full. Readers load its slots
// atomically; writers fill empty ones under verified.mu. An entry is
// never removed: a table goes whole, with its generation, or is copied
// into a larger one.
type verifiedTable struct {
	slots []atomic.Pointer[verifiedEntry]
	n     int64 // entries; under verified.mu
}

// verifiedEntry is an admitted cookie that opened: its value, its state,
// and the second (Unix seconds) at which a request carrying it was last
// reported as a sign of life of its session, so that a visitor's requests
// cost the room's lock at most once a second. A lookup reads the entry
// alone, most often three adjacent cache lines of one 192-byte block: what
// a request needs first, then the value, inline when it is no longer than
// a cookie of today's format.
type verifiedEntry struct {
	hash    uint64
	touched atomic.Int64
	state   cookieState
	n       int             // the value's length, when inline
	inline  [inlineLen]byte // the value, when it fits
	long    string          // the value, when it does not fit inline
}

// inlineLen is the longest cookie value an entry holds inline: the
// 192-byte size class of the allocator, less the rest of the entry.
const inlineLen = 104

// is reports whether the entry is that of value, whose hash is h.
func (e *verifiedEntry) is(value string, h uint64) bool {
	if e.hash != h {
		return false
	}
	if e.long != "" {
		return e.long == value
	}
	return string(e.inline[:e.n]) == value
}

func newVerifiedEntry(value string, h uint64, s cookieState) *verifiedEntry {
	e := &verifiedEntry{hash: h, state: s}
	if len(value) <= inlineLen {
		e.n = copy(e.inline[:], value)
	} else {
		e.long = strings.Clone(value)
	}
	return e
}

func newVerified(max int64) *verified {
	v := &verified{max: max, seed: maphash.MakeSeed(), key: mrand.Uint64()}
	v.gen.Store(&verifiedGen{cur: newVerifiedTable(16), prev: newVerifiedTable(1)})
	return v
}

func newVerifiedTable(size int) *verifiedTable {
	return &verifiedTable{slots: make([]atomic.Pointer[verifiedEntry], size)}
}

// get returns the entry of a cookie value that opened lately.
func (v *verified) get(value string) (*verifiedEntry, bool) {
	g := v.gen.Load()
	h := v.hash(value)
	if e := g.cur.find(value, h); e != nil {
		return e, true
	}
	if e := g.prev.find(value, h); e != nil {
		return e, true
	}
	return nil, false
}

// put remembers an admitted cookie that opened, at minute (Unix minutes),
// and returns its entry (nil when the generation is full).
func (v *verified) put(value string, s cookieState, minute int64) *verifiedEntry {
	h := v.hash(value)
	v.mu.Lock()
	defer v.mu.Unlock()
	g := v.gen.Load()
	// Requests racing at the turn of a minute may come a minute late: their
	// cookies join the newer generation. A clock set back further turns
	// the generations over as a new minute does.
	if minute > g.minute || minute < g.minute-1 {
		g = &verifiedGen{minute: minute, cur: newVerifiedTable(16), prev: g.cur}
		v.gen.Store(g)
	}
	if e := g.cur.find(value, h); e != nil {
		return e // remembered meanwhile
	}
	if g.cur.n >= v.max {
		return nil
	}
	if 2*(g.cur.n+1) > int64(len(g.cur.slots)) {
		t := newVerifiedTable(2 * len(g.cur.slots))
		for i := range g.cur.slots {
			if e := g.cur.slots[i].Load(); e != nil {
				t.insert(e)
			}
		}
		g = &verifiedGen{minute: g.minute, cur: t, prev: g.prev}
		v.gen.Store(g)
	}
	e := newVerifiedEntry(value, h, s)
	g.cur.insert(e)
	return e
}

// hash returns the hash of a cookie value. A cookie ends with its
// authentication tag (16 bytes drawn from the key, the nonce and the
// contents: unpredictable, and different for every cookie the room
// issues), so the last 16 characters make a good hash at the price of two
// loads. Only the hash's quality depends on that, not what get answers; a
// client chooses the values it looks up, but only cookies that opened are
// remembered, so it cannot choose where lookups probe.
func (v *verified) hash(value string) uint64 {
	n := len(value)
	if n < 16 {
		return maphash.String(v.seed, value)
	}
	x := (le64(value[n-16:]) ^ v.key) * 0x9e3779b97f4a7c15
	x = (x ^ le64(value[n-8:])) * 0xbf58476d1ce4e5b9
	return x ^ x>>31
}

// le64 is the little-endian uint64 of the first 8 bytes of s.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// find returns the entry of value, whose hash is h, or nil.
func (t *verifiedTable) find(value string, h uint64) *verifiedEntry {
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := t.slots[i].Load()
		if e == nil {
			return nil
		}
		if e.is(value, h) {
			return e
		}
	}
}

// insert adds e, which t does not hold, to t; t must have an empty slot.
// verified.mu must be held.
func (t *verifiedTable) insert(e *verifiedEntry) {
	mask := uint64(len(t.slots) - 1)
	i := e.hash & mask
	for t.slots[i].Load() != nil {
		i = (i + 1) & mask
	}
	t.slots[i].Store(e)
	t.n++
}

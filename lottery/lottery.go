// Package lottery makes a waiting room's draws verifiable: commit, then
// reveal.
//
// Before a period opens (an hour, or an event that shuffles its
// pre-queue, from the pre-queue's opening to its end), the room fixes a secret Seed and
// publishes its commitment, Commit(seed, period). During the period every
// decision that depends on chance follows from the seed and public facts:
// a visitor wins the draw of refresh interval w when Draw(seed, identity,
// w) is below the odds the room published for w, and an event's pre-queue
// is let in in the order of Place(seed, identity): from the event's start
// the room publishes the cuts of the refresh intervals, the share of the
// pre-queue let in by then, and a pre-queued visitor's turn has come when
// their place is below the cut in force. Once the period's draws are done
// the room reveals the seed, and anyone holding the period's Record (the
// commitment, the seed, the odds of every interval and, for a shuffle,
// the cuts and the sorted list of the pre-queue's places) can recompute a
// visitor's draws, place and rank with Verify.
// docs/verify.html in the repository does the same in a browser, and
// `waitingroom verify` on the command line.
//
// Everything here is a pure function of its arguments, safe for
// concurrent use; only NewSeed reads the system's random source.
package lottery

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// The domain strings that keep the three uses of the seed apart: a
// commitment is never a draw, a draw never a place.
const (
	commitDomain = "waitingroom lottery v1 commit"
	drawDomain   = "waitingroom lottery v1 draw"
	placeDomain  = "waitingroom lottery v1 place"
)

// Seed is a period's secret: 32 random bytes, kept secret until the
// period's draws are done, then revealed. In JSON and text it is 64 hex
// digits; the zero Seed stands for a seed not revealed yet and is written
// as "".
type Seed [32]byte

// NewSeed returns a Seed from the system's cryptographic random source.
func NewSeed() Seed {
	var s Seed
	_, _ = rand.Read(s[:]) // crypto/rand.Read never fails (Go 1.24+)
	return s
}

// IsZero reports whether s is the zero Seed: a seed not revealed yet.
func (s Seed) IsZero() bool { return s == Seed{} }

// String returns s as 64 hex digits, or "" for the zero Seed.
func (s Seed) String() string {
	if s.IsZero() {
		return ""
	}
	return hex.EncodeToString(s[:])
}

// MarshalText returns s.String().
func (s Seed) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads 64 hex digits, or "" as the zero Seed.
func (s *Seed) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*s = Seed{}
		return nil
	}
	return decodeHex((*[32]byte)(s), b, "seed")
}

// Hash is a SHA-256 digest: a commitment. In JSON and text it is 64 hex
// digits.
type Hash [32]byte

// String returns h as 64 hex digits.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// MarshalText returns h.String().
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText reads 64 hex digits.
func (h *Hash) UnmarshalText(b []byte) error { return decodeHex((*[32]byte)(h), b, "hash") }

// decodeHex reads 64 hex digits into dst, or returns an ErrRecord naming
// what was read.
func decodeHex(dst *[32]byte, b []byte, what string) error {
	if len(b) != 2*len(dst) {
		return fmt.Errorf("%w: %s %q: want 64 hex digits, got %d characters", ErrRecord, what, clip(b), len(b))
	}
	if _, err := hex.Decode(dst[:], b); err != nil {
		return fmt.Errorf("%w: %s %q: not hex", ErrRecord, what, clip(b))
	}
	return nil
}

// clip shortens b for an error message.
func clip(b []byte) string {
	if len(b) > 70 {
		return string(b[:67]) + "..."
	}
	return string(b)
}

// Period is the span of time one seed draws for: [Start, End) in Unix
// seconds. A refresh interval belongs to the period that holds its last
// millisecond: the interval that straddles a period's start draws under
// its seed.
type Period struct {
	// Start is the period's first second, Unix seconds.
	Start int64 `json:"start"`
	// End is the second after the period's last, Unix seconds.
	End int64 `json:"end"`
}

// holds reports whether interval w of interval ms belongs to p: whether
// its last millisecond, (w+1)*interval - 1, lies in [Start, End) (in
// ms). The period must be checked (Record's check) and interval > 0.
func (p Period) holds(w, interval int64) bool {
	return w >= p.Start*1000/interval && w < p.End*1000/interval
}

// Commit returns the commitment to seed for period p: SHA-256 over the
// domain string "waitingroom lottery v1 commit", p.Start and p.End (8
// bytes big-endian each) and the seed. It binds the seed to the period:
// the seed of another period does not match it.
func Commit(seed Seed, p Period) Hash {
	h := sha256.New()
	h.Write([]byte(commitDomain))
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(p.Start))
	binary.BigEndian.PutUint64(b[8:], uint64(p.End))
	h.Write(b[:])
	h.Write(seed[:])
	return Hash(h.Sum(nil))
}

// Draw returns visitor identity's draw for refresh interval w (the
// interval's start in Unix ms divided by its length), in [0, 1): the
// first 8 bytes of HMAC-SHA256 keyed by seed over the domain string
// "waitingroom lottery v1 draw", identity and w (8 bytes big-endian each),
// as a big-endian integer shifted right by 11, over 2^53. The visitor wins
// the interval's draw when it is below the interval's odds.
func Draw(seed Seed, identity uint64, w int64) float64 {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], identity)
	binary.BigEndian.PutUint64(b[8:], uint64(w))
	return unit(mac(seed, drawDomain, b[:]))
}

// Place returns pre-queued visitor identity's place in an event's
// shuffle, in [0, 1): the first 8 bytes of HMAC-SHA256 keyed by seed over
// the domain string "waitingroom lottery v1 place" and identity (8 bytes
// big-endian), as a big-endian integer shifted right by 11, over 2^53.
// The pre-queue is let in in ascending order of places: the visitor's
// turn has come in an interval whose cut is above their place.
func Place(seed Seed, identity uint64) float64 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], identity)
	return unit(mac(seed, placeDomain, b[:]))
}

// mac returns HMAC-SHA256 keyed by seed over domain and data (at most 16
// bytes), as crypto/hmac computes it, without its allocations: a
// request's draws cost two SHA-256 sums over the stack.
func mac(seed Seed, domain string, data []byte) [sha256.Size]byte {
	const block = sha256.BlockSize // the key, 32 bytes, is padded to it
	var in [block + 48]byte
	var out [block + sha256.Size]byte
	for i := range block {
		var k byte
		if i < len(seed) {
			k = seed[i]
		}
		in[i], out[i] = k^0x36, k^0x5c
	}
	n := block + copy(in[block:], domain)
	n += copy(in[n:], data)
	inner := sha256.Sum256(in[:n])
	copy(out[block:], inner[:])
	return sha256.Sum256(out[:])
}

// unit reads the first 8 bytes of mac as a number in [0, 1): big-endian,
// shifted right by 11, over 2^53.
func unit(mac [sha256.Size]byte) float64 {
	return float64(binary.BigEndian.Uint64(mac[:])>>11) / (1 << 53)
}

// The errors Verify returns, each wrapped with the details: test them with
// errors.Is.
var (
	// ErrRecord: the record is malformed (odds or cuts outside [0, 1] or
	// not a number, intervals out of order or outside the period, a cut
	// below the one before, places not in strictly ascending order,
	// outside [0, 1) or not multiples of 2^-53, a hash of the wrong
	// length, no interval length), or the claim names nothing it could
	// check against it (an interval outside the period, a negative rank,
	// a rank claimed by a visitor not of the shuffle).
	ErrRecord = errors.New("lottery: malformed record or claim")
	// ErrNotRevealed: the record has no seed yet.
	ErrNotRevealed = errors.New("lottery: seed not revealed")
	// ErrSeed: the revealed seed does not match the commitment for the
	// record's period (a tampered seed, or the seed of another period).
	ErrSeed = errors.New("lottery: seed does not match the commitment")
	// ErrMissingOdds: the record has no odds for an interval the visitor
	// waited in or was let in (nor for the one before), or, for a visitor
	// of an event's pre-queue, no cut at or before the interval they were
	// let in.
	ErrMissingOdds = errors.New("lottery: odds not published")
	// ErrOddsChanged: the record's odds for an interval differ from those
	// the room showed the visitor.
	ErrOddsChanged = errors.New("lottery: odds changed")
	// ErrNotDrawn: the visitor was let in in an interval where neither
	// their draw nor the draw of one of the two before it fell under that
	// interval's odds, nor under the interval before's.
	ErrNotDrawn = errors.New("lottery: let in without winning the draw")
	// ErrOutOfTurn: a visitor of an event's pre-queue was let in in an
	// interval where their place was not below the cut in force (the
	// latest at or before it).
	ErrOutOfTurn = errors.New("lottery: let in before their place in the shuffle came")
	// ErrUnlisted: a visitor of an event's pre-queue does not find their
	// place in the record's list of the shuffle's places (Record.Places),
	// or the record publishes no list: the room left them out of the
	// shuffle it published.
	ErrUnlisted = errors.New("lottery: place not in the published list of the shuffle")
	// ErrRankMoved: a visitor of an event's pre-queue finds their place
	// at another rank in the record's list than the one they noted
	// (Claim.Rank): places were added before theirs, or taken out, after
	// the fact.
	ErrRankMoved = errors.New("lottery: rank in the shuffle moved")
	// ErrCommitmentChanged: the record's commitment is not the one the
	// room showed the visitor (Claim.Commitment) before the period's
	// draws: the room published another seed, and a commitment to it,
	// after the fact.
	ErrCommitmentChanged = errors.New("lottery: commitment changed")
)

// Hold is how many refresh intervals a winning draw holds: the
// interval it was made for and the next two, so that a visitor who comes
// back once an interval, late by up to one, finds it.
const Hold = 3

package lottery

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
)

// Record is a period's public record, as the room publishes it on its
// status JSON and history: the period, the commitment, the seed once
// revealed, the odds of each refresh interval it drew for and, for an
// event's shuffle, the sorted rank hashes. Its JSON form is what
// docs/verify.html and `waitingroom verify` read; float64 odds survive
// JSON exactly, in Go and in JavaScript.
type Record struct {
	Period
	// Commitment is Commit(Seed, Period), published before the period
	// opens.
	Commitment Hash `json:"commitment"`
	// Seed is the period's seed: zero (omitted from JSON) until revealed.
	Seed Seed `json:"seed,omitzero"`
	// IntervalMS is the length of a refresh interval, in ms; required
	// with Odds.
	IntervalMS int64 `json:"intervalMs,omitempty"`
	// Odds holds the published odds of the period's intervals, in
	// ascending order of interval, one record each. An interval missing
	// had no draw.
	Odds []Odds `json:"odds,omitempty"`
	// Ranks holds, for an event's shuffle, every pre-queued visitor's
	// RankHash, in ascending order and without identities: the order the
	// pre-queue was let in.
	Ranks []Hash `json:"ranks,omitempty"`
}

// Odds is the chance one waiting visitor wins the draw of a refresh
// interval: the interval's number (its first Unix ms over the interval's
// length) and the odds, in [0, 1].
type Odds struct {
	Interval int64   `json:"interval"` // the interval's number
	Odds     float64 `json:"odds"`     // in [0, 1]
}

// Claim is what a visitor saw of the room: the intervals they waited in,
// the odds the room showed them, the interval they were let in and the
// rank they were shown. Zero fields claim nothing.
type Claim struct {
	// Waited lists the intervals the visitor waited in.
	Waited []int64
	// Shown lists odds the room showed the visitor, by interval.
	Shown []Odds
	// Admitted is the interval the visitor was let in; 0 if they were
	// not (interval numbers of real dates are positive).
	Admitted int64
	// Rank is the place in the event's shuffle the room showed, from 1; 0
	// if none was shown.
	Rank int
}

// Report is what Verify recomputed for one visitor.
type Report struct {
	// Draws holds the visitor's draw in every interval the claim names,
	// and in the Hold-1 intervals before the one they were let in, that
	// lies in the period and has published odds, in ascending order.
	Draws []Drawn
	// Rank is the visitor's place in the record's rank list, from 1; 0 if
	// their rank hash is not in it.
	Rank int
}

// Drawn is a visitor's draw in one interval.
type Drawn struct {
	Interval int64   // the interval's number
	Draw     float64 // Draw(seed, identity, Interval), in [0, 1)
	Odds     float64 // the interval's published odds
	Won      bool    // Draw < Odds: the draw lets the visitor in during this interval and the Hold-1 after it, wherever their odds are as high
}

// maxUnix bounds a period's seconds (the year 10000), so that they hold
// in ms in an int64.
const maxUnix = 253402300800

// maxIntervalMS bounds a refresh interval's length: a day.
const maxIntervalMS = 86_400_000

// Verify recomputes visitor identity's draws and rank from record r and
// checks that the room kept the promises claim c depends on: the seed is
// revealed and matches the commitment for r's very period; r has odds for
// every interval the visitor waited in, equal to those the room showed,
// and for the interval they were let in or the one before; the visitor
// was let in only in an interval w where their draw of w or of one of the
// Hold-1 before it, within the period, fell under the odds of w or of the
// interval before (the room draws under those until it has w's); their
// rank hash is in r's list at the rank shown. It returns the report and nil, or the report as far as it got
// and an error wrapping the first broken promise (ErrSeed, ErrMissingOdds,
// ...) or ErrRecord for a malformed record or claim. It never panics,
// whatever r and c hold.
func Verify(r *Record, identity uint64, c Claim) (Report, error) {
	var rep Report
	if r == nil {
		return rep, fmt.Errorf("%w: no record", ErrRecord)
	}
	if err := r.check(c); err != nil {
		return rep, err
	}
	if r.Seed.IsZero() {
		return rep, fmt.Errorf("%w: the record of %d-%d has no seed yet", ErrNotRevealed, r.Start, r.End)
	}
	if Commit(r.Seed, r.Period) != r.Commitment {
		return rep, fmt.Errorf("%w: the seed is not the one committed to for %d-%d", ErrSeed, r.Start, r.End)
	}
	rep.Draws = r.draws(identity, c)
	if rh := RankHash(r.Seed, identity); len(r.Ranks) > 0 {
		if i, ok := slices.BinarySearchFunc(r.Ranks, rh, func(a, b Hash) int { return bytes.Compare(a[:], b[:]) }); ok {
			rep.Rank = i + 1
		}
	}
	for _, w := range c.Waited {
		if _, ok := r.odds(w); !ok {
			return rep, fmt.Errorf("%w: the record has no odds for interval %d", ErrMissingOdds, w)
		}
	}
	if _, ok := r.admitOdds(c.Admitted); c.Admitted != 0 && !ok {
		return rep, fmt.Errorf("%w: the record has no odds for interval %d, nor for the one before", ErrMissingOdds, c.Admitted)
	}
	for _, s := range c.Shown {
		o, ok := r.odds(s.Interval)
		if !ok {
			return rep, fmt.Errorf("%w: the record has no odds for interval %d, shown as %v", ErrMissingOdds, s.Interval, s.Odds)
		}
		if o != s.Odds {
			return rep, fmt.Errorf("%w: interval %d: shown %v, recorded %v", ErrOddsChanged, s.Interval, s.Odds, o)
		}
	}
	if c.Admitted != 0 && !r.admits(identity, c.Admitted) {
		return rep, fmt.Errorf("%w: let in at interval %d, no draw of intervals %d to %d fell under the odds",
			ErrNotDrawn, c.Admitted, c.Admitted-(Hold-1), c.Admitted)
	}
	if c.Rank > 0 {
		switch {
		case len(r.Ranks) == 0:
			return rep, fmt.Errorf("%w: rank %d shown, but the record has no rank list", ErrRank, c.Rank)
		case rep.Rank == 0:
			return rep, fmt.Errorf("%w: rank %d shown, but the visitor's rank hash is not in the list", ErrRank, c.Rank)
		case rep.Rank != c.Rank:
			return rep, fmt.Errorf("%w: rank %d shown, %d in the list", ErrRank, c.Rank, rep.Rank)
		}
	}
	return rep, nil
}

// check returns an ErrRecord if r is malformed, or if claim c names an
// interval outside r's period or a negative rank.
func (r *Record) check(c Claim) error {
	if r.Start < 0 || r.End <= r.Start || r.End > maxUnix {
		return fmt.Errorf("%w: period %d-%d: want 0 <= start < end <= %d (Unix seconds)", ErrRecord, r.Start, r.End, int64(maxUnix))
	}
	if r.Commitment == (Hash{}) {
		return fmt.Errorf("%w: no commitment", ErrRecord)
	}
	named := len(c.Waited) > 0 || len(c.Shown) > 0 || c.Admitted != 0
	if (len(r.Odds) > 0 || named) && (r.IntervalMS <= 0 || r.IntervalMS > maxIntervalMS) {
		return fmt.Errorf("%w: intervalMs %d: want 1 to %d", ErrRecord, r.IntervalMS, maxIntervalMS)
	}
	for i, o := range r.Odds {
		if !(o.Odds >= 0 && o.Odds <= 1) {
			return fmt.Errorf("%w: interval %d: odds %v outside [0, 1]", ErrRecord, o.Interval, o.Odds)
		}
		if i > 0 && o.Interval <= r.Odds[i-1].Interval {
			return fmt.Errorf("%w: odds of interval %d after those of %d: want ascending intervals, one record each", ErrRecord, o.Interval, r.Odds[i-1].Interval)
		}
		if !r.holds(o.Interval, r.IntervalMS) {
			return fmt.Errorf("%w: odds of interval %d, outside the period %d-%d", ErrRecord, o.Interval, r.Start, r.End)
		}
	}
	for i := 1; i < len(r.Ranks); i++ {
		if bytes.Compare(r.Ranks[i-1][:], r.Ranks[i][:]) >= 0 {
			return fmt.Errorf("%w: rank hashes %d and %d out of order: want ascending, each once", ErrRecord, i, i+1)
		}
	}
	for _, w := range append(slices.Clone(c.Waited), c.Admitted) {
		if w != 0 && !r.holds(w, r.IntervalMS) {
			return fmt.Errorf("%w: interval %d is outside the period %d-%d: verify it with its own period's record", ErrRecord, w, r.Start, r.End)
		}
	}
	if c.Rank < 0 {
		return fmt.Errorf("%w: rank %d: want 1 or more, or 0 for none", ErrRecord, c.Rank)
	}
	return nil
}

// odds returns the published odds of interval w, and whether there are.
func (r *Record) odds(w int64) (float64, bool) {
	i, ok := slices.BinarySearchFunc(r.Odds, w, func(o Odds, w int64) int {
		switch {
		case o.Interval < w:
			return -1
		case o.Interval > w:
			return 1
		}
		return 0
	})
	if !ok {
		return 0, false
	}
	return r.Odds[i].Odds, true
}

// draws returns the visitor's draws in the intervals c names and the
// Hold-1 before its admission, within the period and with odds.
func (r *Record) draws(identity uint64, c Claim) []Drawn {
	ws := slices.Clone(c.Waited)
	for _, s := range c.Shown {
		ws = append(ws, s.Interval)
	}
	if c.Admitted != 0 {
		for k := range int64(Hold) {
			ws = append(ws, c.Admitted-k)
		}
	}
	slices.Sort(ws)
	ws = slices.Compact(ws)
	var ds []Drawn
	for _, w := range ws {
		o, ok := r.odds(w)
		if !ok || !r.holds(w, r.IntervalMS) {
			continue
		}
		d := Draw(r.Seed, identity, w)
		ds = append(ds, Drawn{Interval: w, Draw: d, Odds: o, Won: d < o})
	}
	return ds
}

// admits reports whether the draw lets visitor identity in at interval w:
// their draw of w, or of one of the Hold-1 intervals before it within the
// period, fell under the odds of w or of the interval before (admitOdds).
func (r *Record) admits(identity uint64, w int64) bool {
	o, ok := r.admitOdds(w)
	if !ok {
		return false
	}
	for x := w; x > w-Hold && r.holds(x, r.IntervalMS); x-- {
		if Draw(r.Seed, identity, x) < o {
			return true
		}
	}
	return false
}

// admitOdds returns the odds a visitor let in at interval w is held to:
// the greater of w's and those of the interval before, which the room
// draws under until it has w's; and whether the record has either.
func (r *Record) admitOdds(w int64) (float64, bool) {
	o, ok := r.odds(w)
	if p, was := r.odds(w - 1); was && (!ok || p > o) {
		return p, true
	}
	return o, ok
}

// ParseIdentity reads a visitor's identity as the room shows it: 1 to 16
// hex digits (FormatIdentity writes 16).
func ParseIdentity(s string) (uint64, error) {
	if len(s) == 0 || len(s) > 16 {
		return 0, fmt.Errorf("lottery: identity %q: want 1 to 16 hex digits", clip([]byte(s)))
	}
	id, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("lottery: identity %q: want 1 to 16 hex digits", s)
	}
	return id, nil
}

// FormatIdentity writes a visitor's identity as the room shows it: 16 hex
// digits.
func FormatIdentity(id uint64) string { return fmt.Sprintf("%016x", id) }

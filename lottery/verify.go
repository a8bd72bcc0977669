package lottery

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
)

// Record is a period's public record, as the room publishes it on its
// status JSON and history: the period, the commitment, the seed once
// revealed, the odds of each refresh interval it drew for and, for an
// event's shuffle, the cut of each refresh interval after the event's
// start and the sorted list of the places in its pre-queue. It names no
// visitor: a shuffle's record is its cuts, shares of the pre-queue, and
// its places, without the identities they belong to. Its JSON form is
// what docs/verify.html and `waitingroom verify` read; float64 odds,
// cuts and places survive JSON exactly, in Go and in JavaScript.
type Record struct {
	Period
	// Commitment is Commit(Seed, Period), published before the period
	// opens.
	Commitment Hash `json:"commitment"`
	// Seed is the period's seed: zero (omitted from JSON) until revealed.
	Seed Seed `json:"seed,omitzero"`
	// IntervalMS is the length of a refresh interval, in ms; required
	// with Odds or Cuts.
	IntervalMS int64 `json:"intervalMs,omitempty"`
	// Odds holds the published odds of the period's intervals, in
	// ascending order of interval, one record each. An interval missing
	// had no draw.
	Odds []Odds `json:"odds,omitempty"`
	// Cuts holds, for an event's shuffle, the cuts of the refresh
	// intervals of the event after its start: the share of the pre-queue
	// let in by then, in [0, 1]. A pre-queued visitor may be let in
	// during interval w when their Place is below the cut in force in w:
	// the latest at or before w (the room writes one only when it moves,
	// and none after 1). In ascending order of interval, one record each,
	// and never decreasing from one record to the next.
	Cuts []Odds `json:"cuts,omitempty"`
	// Prequeued is, for an event's shuffle, the number of visitors its
	// pre-queue held when the first cut was fixed: with the cuts, how
	// many the room says it let in by each interval. Informative; Verify
	// checks only that it is not negative.
	Prequeued int64 `json:"prequeued,omitempty"`
	// Places holds, for an event's shuffle, the places (Place values,
	// each in [0, 1) and a multiple of 2^-53) of the visitors the room
	// saw in its pre-queue, in strictly ascending order and without
	// their identities. It may hold visitors who left before their turn
	// came. A visitor's rank in the shuffle is 1 + the number of places
	// below theirs. A Shuffled claim's place must be in it, whatever the
	// cuts; nil (omitted from JSON) when the record has no shuffle.
	Places []float64 `json:"places,omitempty"`
}

// Odds is the chance one waiting visitor wins the draw of a refresh
// interval: the interval's number (its first Unix ms over the interval's
// length) and the odds, in [0, 1]. A cut of an event's shuffle has the
// same form, with the cut as Odds.
type Odds struct {
	Interval int64   `json:"interval"` // the interval's number
	Odds     float64 `json:"odds"`     // in [0, 1]
}

// Claim is what a visitor saw of the room: the commitment it showed, the
// intervals they waited in, the odds it showed them, the interval they
// were let in, whether they joined an event's pre-queue and their rank in
// its shuffle. Zero fields claim nothing.
type Claim struct {
	// Commitment is the commitment the room showed the visitor (on its
	// page or JSON, while they waited): the record's must be the same.
	// A record checked against itself only would let a room that chose
	// a new seed after the fact publish a new commitment with it.
	Commitment Hash
	// Waited lists the intervals the visitor waited in.
	Waited []int64
	// Shown lists odds the room showed the visitor, by interval; for a
	// Shuffled claim, the cuts it showed them instead (as odds: the share
	// of places let in), each that fixed in its interval.
	Shown []Odds
	// Admitted is the interval the visitor was let in; 0 if they were
	// not (interval numbers of real dates are positive).
	Admitted int64
	// Shuffled says the visitor joined the event's pre-queue: their
	// admission is checked against the cuts (their place), not against
	// the draw, and the intervals they waited in need no odds (they did
	// not draw).
	Shuffled bool
	// Rank is the visitor's rank in the event's shuffle as they noted it
	// (from an earlier copy of the record, say), 1-based: their place
	// must have it in the record's Places. 0 claims nothing; a rank
	// needs Shuffled.
	Rank int
}

// Report is what Verify recomputed for one visitor.
type Report struct {
	// Draws holds the visitor's draw in every interval the claim names,
	// and in the Hold-1 intervals before the one they were let in unless
	// the claim is Shuffled, that lies in the period and has published
	// odds, in ascending order.
	Draws []Drawn
	// Place is the visitor's Place in the event's shuffle, when the
	// record has cuts or the claim is Shuffled; 0 otherwise.
	Place float64
	// Cut is the cut a Shuffled claim's admission is held to: the
	// record's latest at or before the interval let in; 0 if none.
	Cut float64
	// Rank is, for a Shuffled claim, the visitor's rank in the shuffle:
	// 1 + the number of the record's Places below theirs. 0 when not
	// computed (the claim is not Shuffled, Verify stopped before, or the
	// place is not listed).
	Rank int
	// Listed is the number of places the record lists, len(r.Places),
	// when Rank was computed; 0 otherwise.
	Listed int
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

// Verify recomputes visitor identity's draws, place and rank from record
// r and checks that the room kept the promises claim c depends on: r's
// commitment is the one the room showed (c.Commitment, when given), the
// seed is revealed and matches it for r's very period, and r has the
// odds the room showed. For a visitor of the draw, r has odds for
// every interval they waited in, and for the interval they were let in or
// the one before; they were let in only in an interval w where their draw
// of w or of one of the Hold-1 before it, within the period, fell under
// the odds of w or of the interval before (the room draws under those
// until it has w's). For a visitor of an event's pre-queue (c.Shuffled),
// r lists their place among its Places, at the rank they noted unless
// c.Rank is 0 (checked right after the seed, let in or not: the report
// then has their rank); and if they were let in, r has a cut at or before
// that interval, and their place is below the latest of those. It
// returns the report and nil, or the report as far as it got and an
// error wrapping the first broken promise (ErrCommitmentChanged, ErrSeed,
// ErrUnlisted, ErrMissingOdds, ...) or ErrRecord for a malformed record
// or claim (an interval it names outside r's period included). It
// never panics, whatever r and c hold.
func Verify(r *Record, identity uint64, c Claim) (Report, error) {
	var rep Report
	if r == nil {
		return rep, fmt.Errorf("%w: no record", ErrRecord)
	}
	if err := r.check(c); err != nil {
		return rep, err
	}
	if c.Commitment != (Hash{}) && c.Commitment != r.Commitment {
		return rep, fmt.Errorf("%w: shown %v, recorded %v for %d-%d", ErrCommitmentChanged, c.Commitment, r.Commitment, r.Start, r.End)
	}
	if r.Seed.IsZero() {
		return rep, fmt.Errorf("%w: the record of %d-%d has no seed yet", ErrNotRevealed, r.Start, r.End)
	}
	if Commit(r.Seed, r.Period) != r.Commitment {
		return rep, fmt.Errorf("%w: the seed is not the one committed to for %d-%d", ErrSeed, r.Start, r.End)
	}
	rep.Draws = r.draws(identity, c)
	if len(r.Cuts) > 0 || c.Shuffled {
		rep.Place = Place(r.Seed, identity)
	}
	if c.Shuffled {
		if len(r.Places) == 0 {
			return rep, fmt.Errorf("%w: the record lists no places", ErrUnlisted)
		}
		i, ok := slices.BinarySearch(r.Places, rep.Place) // exact: places are multiples of 2^-53
		if !ok {
			return rep, fmt.Errorf("%w: place %v is not among the record's %d", ErrUnlisted, rep.Place, len(r.Places))
		}
		rep.Rank, rep.Listed = i+1, len(r.Places)
		if c.Rank != 0 && c.Rank != rep.Rank {
			return rep, fmt.Errorf("%w: noted %d, now %d of %d", ErrRankMoved, c.Rank, rep.Rank, rep.Listed)
		}
	}
	for _, w := range c.Waited {
		if _, ok := find(r.Odds, w); !ok && !c.Shuffled { // a shuffled visitor did not draw
			return rep, fmt.Errorf("%w: the record has no odds for interval %d", ErrMissingOdds, w)
		}
	}
	if c.Admitted != 0 && c.Shuffled {
		cut, ok := cutAt(r.Cuts, c.Admitted)
		if !ok {
			return rep, fmt.Errorf("%w: the record has no cut at or before interval %d", ErrMissingOdds, c.Admitted)
		}
		rep.Cut = cut
	} else if _, ok := held(r.Odds, c.Admitted); c.Admitted != 0 && !ok {
		return rep, fmt.Errorf("%w: the record has no odds for interval %d, nor for the one before", ErrMissingOdds, c.Admitted)
	}
	for _, s := range c.Shown {
		o, ok := find(r.Odds, s.Interval)
		what := "odds"
		if c.Shuffled { // shown the cut fixed in the interval, not odds
			o, ok = find(r.Cuts, s.Interval)
			what = "cut"
		}
		if !ok {
			return rep, fmt.Errorf("%w: the record has no %s for interval %d, shown as %v", ErrMissingOdds, what, s.Interval, s.Odds)
		}
		if o != s.Odds {
			return rep, fmt.Errorf("%w: interval %d: shown %v, recorded %v", ErrOddsChanged, s.Interval, s.Odds, o)
		}
	}
	switch {
	case c.Admitted == 0:
	case c.Shuffled && rep.Place >= rep.Cut:
		return rep, fmt.Errorf("%w: let in at interval %d, place %v not below the cut %v",
			ErrOutOfTurn, c.Admitted, rep.Place, rep.Cut)
	case !c.Shuffled && !r.admits(identity, c.Admitted):
		return rep, fmt.Errorf("%w: let in at interval %d, no draw of intervals %d to %d fell under the odds%s",
			ErrNotDrawn, c.Admitted, c.Admitted-(Hold-1), c.Admitted, r.heldNextTo(identity, c.Admitted))
	}
	return rep, nil
}

// heldNextTo says, for a claim of an admission at interval w that the
// draw does not hold, whether it holds at the interval before or after
// (a visitor who noted the moment they were let in at the edge of an
// interval may claim the wrong one); "" if it holds at neither.
func (r *Record) heldNextTo(identity uint64, w int64) string {
	for _, x := range [...]int64{w - 1, w + 1} {
		if r.admits(identity, x) {
			return fmt.Sprintf(" (it held at interval %d: if the visitor was let in then, claim that one)", x)
		}
	}
	return ""
}

// check returns an ErrRecord if r is malformed, or if claim c names an
// interval outside r's period.
func (r *Record) check(c Claim) error {
	if r.Start < 0 || r.End <= r.Start || r.End > maxUnix {
		return fmt.Errorf("%w: period %d-%d: want 0 <= start < end <= %d (Unix seconds)", ErrRecord, r.Start, r.End, int64(maxUnix))
	}
	if r.Commitment == (Hash{}) {
		return fmt.Errorf("%w: no commitment", ErrRecord)
	}
	named := len(c.Waited) > 0 || len(c.Shown) > 0 || c.Admitted != 0
	if (len(r.Odds) > 0 || len(r.Cuts) > 0 || named) && (r.IntervalMS <= 0 || r.IntervalMS > maxIntervalMS) {
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
	if r.Prequeued < 0 {
		return fmt.Errorf("%w: prequeued %d: want 0 or more", ErrRecord, r.Prequeued)
	}
	for i, o := range r.Cuts {
		if !(o.Odds >= 0 && o.Odds <= 1) {
			return fmt.Errorf("%w: interval %d: cut %v outside [0, 1]", ErrRecord, o.Interval, o.Odds)
		}
		if i > 0 && o.Interval <= r.Cuts[i-1].Interval {
			return fmt.Errorf("%w: cut of interval %d after that of %d: want ascending intervals, one record each", ErrRecord, o.Interval, r.Cuts[i-1].Interval)
		}
		if i > 0 && o.Odds < r.Cuts[i-1].Odds {
			return fmt.Errorf("%w: cut of interval %d, %v, below that of %d, %v: cuts never decrease", ErrRecord, o.Interval, o.Odds, r.Cuts[i-1].Interval, r.Cuts[i-1].Odds)
		}
		if !r.holds(o.Interval, r.IntervalMS) {
			return fmt.Errorf("%w: cut of interval %d, outside the period %d-%d", ErrRecord, o.Interval, r.Start, r.End)
		}
	}
	for i, v := range r.Places {
		if !(v >= 0 && v < 1) {
			return fmt.Errorf("%w: place %d of the list, %v, outside [0, 1)", ErrRecord, i+1, v)
		}
		if x := v * (1 << 53); x != math.Trunc(x) {
			return fmt.Errorf("%w: place %d of the list, %v, not a multiple of 2^-53", ErrRecord, i+1, v)
		}
		if i > 0 && v <= r.Places[i-1] {
			return fmt.Errorf("%w: place %d of the list, %v, not above the one before, %v: want places in strictly ascending order", ErrRecord, i+1, v, r.Places[i-1])
		}
	}
	if c.Rank < 0 {
		return fmt.Errorf("%w: rank %d: want 1 or more (0 claims none)", ErrRecord, c.Rank)
	}
	if c.Rank != 0 && !c.Shuffled {
		return fmt.Errorf("%w: rank %d claimed by a visitor not of the shuffle", ErrRecord, c.Rank)
	}
	ws := slices.Clone(c.Waited)
	for _, s := range c.Shown {
		if !(s.Odds >= 0 && s.Odds <= 1) {
			return fmt.Errorf("%w: odds %v shown for interval %d: want 0 to 1", ErrRecord, s.Odds, s.Interval)
		}
		ws = append(ws, s.Interval)
	}
	if c.Admitted != 0 { // 0: not let in
		ws = append(ws, c.Admitted)
	}
	for _, w := range ws {
		if !r.holds(w, r.IntervalMS) {
			return fmt.Errorf("%w: interval %d is outside the period %d-%d: verify it with its own period's record (let in after the period, by neither its draws nor its shuffle, claim no admission in it)", ErrRecord, w, r.Start, r.End)
		}
	}
	return nil
}

// find returns the value of interval w in list (r.Odds or r.Cuts,
// checked), and whether there is one.
func find(list []Odds, w int64) (float64, bool) {
	i, ok := slices.BinarySearchFunc(list, w, func(o Odds, w int64) int {
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
	return list[i].Odds, true
}

// draws returns the visitor's draws in the intervals c names and, unless
// c is Shuffled, the Hold-1 before its admission, within the period and
// with odds.
func (r *Record) draws(identity uint64, c Claim) []Drawn {
	ws := slices.Clone(c.Waited)
	for _, s := range c.Shown {
		ws = append(ws, s.Interval)
	}
	if c.Shuffled && c.Admitted != 0 {
		ws = append(ws, c.Admitted)
	} else if c.Admitted != 0 {
		for k := range int64(Hold) {
			ws = append(ws, c.Admitted-k)
		}
	}
	slices.Sort(ws)
	ws = slices.Compact(ws)
	var ds []Drawn
	for _, w := range ws {
		o, ok := find(r.Odds, w)
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
// period, fell under the odds (held) of w or of its own interval: a win
// holds Hold intervals, whatever the odds do after it, and odds that
// rise hold the recent draws they favour.
func (r *Record) admits(identity uint64, w int64) bool {
	now, ok := held(r.Odds, w)
	for x := w; x > w-Hold && r.holds(x, r.IntervalMS); x-- {
		o, own := held(r.Odds, x)
		if ok && (!own || now > o) {
			o, own = now, true
		}
		if own && Draw(r.Seed, identity, x) < o {
			return true
		}
	}
	return false
}

// cutAt returns the cut of cuts (checked) in force in interval w: the
// latest at or before w; and whether there is one.
func cutAt(cuts []Odds, w int64) (float64, bool) {
	i := sort.Search(len(cuts), func(i int) bool { return cuts[i].Interval > w })
	if i == 0 {
		return 0, false
	}
	return cuts[i-1].Odds, true
}

// held returns the odds of list r.Odds a visitor let in at interval w is
// held to: the greater of w's and that of the interval before, which the
// room uses until it has w's; and whether the list has either.
func held(list []Odds, w int64) (float64, bool) {
	o, ok := find(list, w)
	if p, was := find(list, w-1); was && (!ok || p > o) {
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

package share

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"

	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store"
)

// The lottery's seeds (package lottery, docs/lottery.md): the state keeps
// a secret for each period of an hour (State.Seeds). The first sync of an
// hour creates the next hour's, so that its commitment is out before the
// hour starts; the update being atomic, the first writer's seed is the one
// every instance sees. A seed is revealed once its period has ended and
// the draws of its last intervals have lapsed (lottery.Hold longest
// refresh intervals later); the state forgets the seeds revealed before
// the latest. A state that was lost gets a seed for the rest of the hour
// in progress, from the next second. A refresh interval belongs to the
// period that holds its last millisecond (intervalSeed): the one that
// straddles a period's start draws under its seed, so the interval in
// which a state is made has a draw (unless it ends within that second).
// The odds of each refresh interval's draw are fixed by its first sync
// that has its seed, and kept with that seed (keepOdds). The draw of
// random admission with several instances (View.Drawn) is the seed's,
// under those odds.

// lotteryPeriod is the length of a period of the lottery, in seconds.
const lotteryPeriod = 3600

// keepSeeds creates in st the seed of the period after the one of now
// (Unix ms) if it has none, and drops the seeds revealed before the latest
// one revealed (revealAfter: the ms after a period's end at which its seed
// is revealed) once the kept history holds their reveal, and any of a
// period after the next (set under a clock that
// ran ahead). A state without a seed for the period in progress (new, or
// lost) gets one for what is left of it from the next second: committed
// before its first draw, as every seed is. The periods are hours, but
// for the spans of the events that shuffle their pre-queue (shuffles),
// each a period of its own (periodAt); a seed of a period not begun yet
// that the events no longer agree with (one was added or moved) is
// dropped, its commitment unrevealed, if it was never used: one with odds
// or cuts (the interval that straddles its start drew under it) stays as
// it is. A period
// that begins before a seed could be made for it (an event added in its
// last minutes) begins after the seed in progress. newSeed draws the
// seeds (nil: lottery.NewSeed).
func keepSeeds(st *store.State, now, revealAfter int64, newSeed func() lottery.Seed, shuffles [][2]int64) {
	if newSeed == nil {
		newSeed = lottery.NewSeed
	}
	sec := FloorDiv(now, 1000)
	st.Seeds = slices.DeleteFunc(st.Seeds, func(x store.Seed) bool {
		_, end := periodAt(x.Start, shuffles)
		return x.Start > sec && end != x.End && len(x.Odds)+len(x.Cuts) == 0
	})
	add := func(start, end int64) {
		if start < end && !slices.ContainsFunc(st.Seeds, func(x store.Seed) bool { return x.Start < end && start < x.End }) {
			st.Seeds = append(st.Seeds, store.Seed{Start: start, End: end, Secret: newSeed()})
		}
	}
	var end int64
	if x := seedOf(st.Seeds, now); x != nil {
		end = x.End
	} else {
		_, end = periodAt(sec, shuffles)
		add(sec+1, end)
	}
	start, next := periodAt(end, shuffles)
	add(max(start, end), next)
	st.Seeds = slices.DeleteFunc(st.Seeds, func(x store.Seed) bool { return x.Start > end })
	slices.SortFunc(st.Seeds, func(a, b store.Seed) int { return cmp.Compare(a.Start, b.Start) })
	latest := -1
	for i, x := range st.Seeds {
		if revealed(x, now, revealAfter) {
			latest = i
		}
	}
	// Those revealed before stay until the kept history's minute that
	// holds their reveal is written (tallySync, lotteryMinute).
	written := (st.Recorded + 1) * 60_000
	i := 0
	st.Seeds = slices.DeleteFunc(st.Seeds, func(x store.Seed) bool {
		i++
		return i-1 < latest && (st.Recorded == 0 || x.End*1000+revealAfter < written)
	})
}

// periodAt returns the period of the lottery that holds sec (Unix
// seconds): the span of shuffles that holds it, or its hour, cut short by
// the spans that end or begin in that hour.
func periodAt(sec int64, shuffles [][2]int64) (start, end int64) {
	start = FloorDiv(sec, lotteryPeriod) * lotteryPeriod
	end = start + lotteryPeriod
	for _, s := range shuffles {
		switch {
		case s[0] <= sec && sec < s[1]:
			return s[0], s[1]
		case s[1] <= sec:
			start = max(start, s[1])
		default:
			end = min(end, s[0])
		}
	}
	return start, end
}

// SeedsFrom returns a source of the lottery's seeds that draws each from
// f: four of its 64-bit values, so that a simulator's seeded identities
// make its seeds, and its runs, the same every time.
func SeedsFrom(f func() uint64) func() lottery.Seed {
	return func() (s lottery.Seed) {
		for i := 0; i < len(s); i += 8 {
			binary.BigEndian.PutUint64(s[i:], f())
		}
		return s
	}
}

// seedOf returns the seed of seeds whose period holds ms (Unix ms), or
// nil.
func seedOf(seeds []store.Seed, ms int64) *store.Seed {
	for i := range seeds {
		if x := &seeds[i]; x.Start*1000 <= ms && ms < x.End*1000 {
			return x
		}
	}
	return nil
}

// intervalSeed returns the seed of seeds that refresh interval w (of
// refresh ms) draws under: that of the period that holds its last
// millisecond, as lottery.Period has it, or nil. A period begins after
// its seed is committed, and the interval that straddles its start, in
// progress then, draws under it: a new state's first interval has a draw.
func intervalSeed(seeds []store.Seed, w, refresh int64) *store.Seed {
	return seedOf(seeds, (w+1)*refresh-1)
}

// firstInterval returns the number of the first refresh interval (of
// refresh ms) of x's period: the one that holds its first millisecond.
func firstInterval(x *store.Seed, refresh int64) int64 {
	return FloorDiv(x.Start*1000, refresh)
}

// keepOdds fixes in st the odds of the lottery's draw in the refresh
// interval of p.now, as of the merged view v: the interval's first sync
// works them out (Rules.Odds) and writes them beside the seed of the
// interval's period (intervalSeed); every instance draws with them
// (View.Drawn), and they are published with the period (publicSeeds).
// An interval whose period has no seed, or whose seed's odds are of
// intervals of another length (the refresh interval changed within the
// hour), gets none: its draws let nobody in. The interval in which a
// state is made gets them from that sync on, with the seed of the period
// that begins in it.
//
// Fixed by the first sync of the interval before, from a view that old,
// they counted slots released and taken since as free: groups of five
// clients sharing a cookie across four instances waited 0.68 to 0.70 of
// polite visitors' wait, 0.81 to 0.83 fixed by the interval's own first
// sync, and 0.87 to 0.92 with the interval before's standing in until an
// instance has them (View.Drawn).
func keepOdds(st *store.State, p *params, v *View) {
	r := &p.rules
	if r.Odds == nil || r.Refresh <= 0 || r.Closed {
		return
	}
	w := FloorDiv(p.now, r.Refresh)
	x := intervalSeed(st.Seeds, w, r.Refresh)
	if x == nil || x.Interval != 0 && x.Interval != r.Refresh {
		return
	}
	if n := len(x.Odds); n > 0 && x.Odds[n-1].Interval >= w {
		return
	}
	o := r.Odds(v, p.now)
	if !(o >= 0) {
		o = 0
	}
	x.Interval = r.Refresh
	x.Odds = append(x.Odds, store.Odds{Interval: w, Odds: min(o, 1)})
}

// keepCuts fixes in st the cut of the shuffle of the event in force
// (Rules.Lottery) in the refresh interval of p.now, as of the merged view
// v: the share of the pre-queue let in by the interval's end, kept with
// the seed of the interval's period like the odds (keepOdds). The first
// also keeps how many the pre-queue held (Seed.Prequeued). Each interval
// lets in Slots more of the pre-queue's visitors still waiting (no more
// than the minute has left; in FIFO, those the visitors queued before the
// pre-queue opened leave: a cut ahead of the slots lets its visitors in as
// they come back, not in the order of their places), whose
// places lie above the cut before: the cut moves that share of the way to
// 1. (Set so as to leave Slots of them below it, from the pre-queue's
// size, the cut waited for admissions that lag; but copies of a cookie
// counted waiting at several instances held it back for good.) Once the
// slots the minute has left cover every one of them still waiting, the
// cut goes to 1: a FIFO grant then keeps a slot for each and gives the
// rest to later arrivals, who would otherwise get in while the last of
// the pre-queue wait for the cut (a refresh interval or more). Once at 1
// (all of the pre-queue may pass) it is not written again; nor is a cut
// that did not move. The interval that straddles the event's end draws
// under the next period's seed, under which the pre-queue has no places
// listed: it gets no cut, and the visitors of the pre-queue still waiting
// wait for the event's end (less than an interval) to queue as others.
func keepCuts(st *store.State, p *params, v *View) {
	r := &p.rules
	if r.Lottery[1] == 0 || r.Slots == nil || r.Refresh <= 0 || r.Closed {
		return
	}
	w := FloorDiv(p.now, r.Refresh)
	x := intervalSeed(st.Seeds, w, r.Refresh)
	if x == nil || x.Interval != 0 && x.Interval != r.Refresh || x.Start >= shuffleEnd(r) {
		return
	}
	cut := 0.0
	if n := len(x.Cuts); n > 0 {
		if x.Cuts[n-1].Interval >= w || x.Cuts[n-1].Odds >= 1 {
			return
		}
		cut = x.Cuts[n-1].Odds
	}
	waiting := v.Shuffled(r.Lottery)
	if len(x.Cuts) == 0 {
		x.Prequeued = waiting
	}
	// No more than the minute has left of New Users Per Minute (Slots
	// counts sessions ending under Total Active Users); in FIFO, less what
	// those queued before the pre-queue opened take first.
	next, slots := 1.0, min(r.Slots(v, p.now), float64(max(0, r.NewUsersPerMinute-v.AdmittedThisMinute)))
	var older int64
	for _, b := range v.Buckets {
		if r.Ordered && b.Arrival < r.Lottery[0] {
			older += b.Waiting
		}
	}
	slots = max(0, slots-float64(older))
	if len(x.Cuts) > 0 {
		// Copies of a cookie counted waiting at several instances swell
		// the count, and would slow the cut: above it there are no more
		// than its share of the pre-queue, and below it about an
		// interval's slots not taken yet.
		waiting = min(waiting, int64(math.Ceil(float64(x.Prequeued)*(1-cut)+slots)))
	}
	if waiting > 0 && waiting+older > freeSlots(r, v) {
		next = cut + (1-cut)*slots/float64(waiting)
	}
	// The shuffle has begun: its places count from now (View.seedAt), the
	// cut moved or not (a queue from before the pre-queue opened goes first).
	x.Interval = r.Refresh
	if !(next > cut) {
		return
	}
	x.Cuts = append(x.Cuts, store.Odds{Interval: w, Odds: min(1, next)})
}

// shuffleEnd returns the end (Unix seconds) of the event whose pre-queue
// r's lottery shuffles (Rules.Lottery): that of its span among
// r.Shuffles, or the largest int64 if none is.
func shuffleEnd(r *Rules) int64 {
	for _, s := range r.Shuffles {
		if s[0] == r.Lottery[0] {
			return s[1]
		}
	}
	return math.MaxInt64
}

// Shuffled is how many visitors of the pre-queue lottery (Rules.Lottery:
// its arrival seconds) wait; none for the zero lottery.
func (v *View) Shuffled(lottery [2]int64) int64 {
	var n int64
	for _, b := range v.Buckets {
		if b.Arrival >= lottery[0] && b.Arrival < lottery[1] {
			n += b.Waiting
		}
	}
	return n
}

// cutAt returns the cut of the shuffle in force in interval w that x
// holds: the latest fixed at or before w; and whether there is one.
func cutAt(x *store.Seed, w int64) (float64, bool) {
	i, found := slices.BinarySearchFunc(x.Cuts, w, func(o store.Odds, w int64) int { return cmp.Compare(o.Interval, w) })
	if found {
		return x.Cuts[i].Odds, true
	}
	if i == 0 {
		return 0, false
	}
	return x.Cuts[i-1].Odds, true
}

// Placed reports whether the shuffle of an event's pre-queue lets visitor
// id in at now (Unix ms, the shared clock), with refresh intervals of
// refresh ms: whether their place under the seed of the interval's
// period (lottery.Place) is below the cut in force (cutAt) as the view
// has it. Like a draw, it is the same for every copy of a cookie at
// every instance.
func (v *View) Placed(id uint64, now, refresh int64) bool {
	x, w := v.seedAt(now, refresh)
	if x == nil {
		return false
	}
	c, ok := cutAt(x, w)
	return ok && lottery.Place(x.Secret, id) < c
}

// oddsOf returns the odds of interval w that x holds, if any.
func oddsOf(x *store.Seed, w int64) (float64, bool) {
	i, ok := slices.BinarySearchFunc(x.Odds, w, func(o store.Odds, w int64) int { return cmp.Compare(o.Interval, w) })
	if !ok {
		return 0, false
	}
	return x.Odds[i].Odds, true
}

// revealed reports whether seed x is revealed at now (Unix ms).
func revealed(x store.Seed, now, revealAfter int64) bool {
	return x.End*1000+revealAfter <= now
}

// publicSeeds returns what may be shown of seeds at now (Unix ms): each
// period with its commitment and the odds of its intervals so far, and
// its seed once revealed.
func publicSeeds(seeds []store.Seed, now, revealAfter int64) []lottery.Record {
	var out []lottery.Record
	for _, x := range seeds {
		p := lottery.Period{Start: x.Start, End: x.End}
		r := lottery.Record{Period: p, Commitment: lottery.Commit(x.Secret, p)}
		if revealed(x, now, revealAfter) {
			r.Seed = x.Secret
		}
		if len(x.Odds)+len(x.Cuts) > 0 {
			r.IntervalMS = x.Interval
			r.Odds, r.Cuts, r.Prequeued = publicOdds(x.Odds), publicOdds(x.Cuts), x.Prequeued
		}
		out = append(out, r)
	}
	return out
}

// lotteryMinute returns what the kept history's minute ending at to (Unix
// ms) adds to the public record of the lottery, the minutes written
// before it having ended at from: for each period of seeds, the odds of
// the refresh intervals that began in [from, to) (that which straddles
// the period's start counts as begun with it: the interval in which a
// state is made, from before its first minute, is kept), and its seed if
// its reveal time fell in it. Minutes without a tally (nobody synced)
// leave theirs to the next one written.
func lotteryMinute(seeds []store.Seed, from, to, revealAfter int64) []store.Period {
	var out []store.Period
	for _, x := range seeds {
		p := store.Period{Start: x.Start, End: x.End, Interval: x.Interval}
		if t := x.End*1000 + revealAfter; from <= t && t < to {
			p.Seed = x.Secret
		}
		p.Odds, p.Cuts = within(x.Odds, x.Interval, x.Start*1000, from, to), within(x.Cuts, x.Interval, x.Start*1000, from, to)
		if len(p.Cuts) > 0 {
			p.Prequeued = x.Prequeued
		}
		if len(p.Odds)+len(p.Cuts) == 0 {
			p.Interval = 0
			if p.Seed == ([32]byte{}) {
				continue
			}
		}
		p.Commitment = lottery.Commit(x.Secret, lottery.Period{Start: x.Start, End: x.End})
		out = append(out, p)
	}
	return out
}

// within returns the odds (or cuts) os of the intervals of interval ms
// that begin in [from, to) (Unix ms), or nil; one that begins before
// start (its period's, Unix ms) counts as beginning then.
func within(os []store.Odds, interval, start, from, to int64) []store.Odds {
	var out []store.Odds
	for _, o := range os {
		if t := max(o.Interval*interval, start); from <= t && t < to {
			out = append(out, o)
		}
	}
	return out
}

// publicOdds converts the state's odds or cuts into the record's.
func publicOdds(os []store.Odds) []lottery.Odds {
	if len(os) == 0 {
		return nil
	}
	out := make([]lottery.Odds, len(os))
	for i, o := range os {
		out[i] = lottery.Odds{Interval: o.Interval, Odds: o.Odds}
	}
	return out
}

// revealAfter is how long, in ms, after its period's end a seed stays
// secret: lottery.Hold refresh intervals, each at most p.dueWindow.
func (p *params) revealAfter() int64 { return lottery.Hold * p.dueWindow }

// Lottery returns the periods of the room's lottery as of the latest
// sync, oldest first: the latest revealed (with its seed), the current
// one and the next (with their commitments only). It is nil before the
// first sync. Safe for concurrent use.
func (s *Syncer[S]) Lottery() []lottery.Record {
	if snap := s.Snapshot(); snap != nil {
		return slices.Clone(snap.Lottery)
	}
	return nil
}

// Drawn reports whether the lottery's draw holds visitor id at now (Unix
// ms, the shared clock), with refresh intervals of refresh ms: whether
// their draw in the interval of now or one of the lottery.Hold-1 before
// it fell under the odds the state fixed for the interval of now
// (keepOdds), or, until the view has those, for the interval before. A
// draw is the seed's of the period that holds the interval's last
// millisecond (intervalSeed, lottery.Draw), and only the draws and odds
// of the same period count: an interval of a period without a seed lets
// nobody in.
// The draw is a function of the visitor, the clock and the state: every
// copy of a cookie, at every instance, draws the same.
//
// The odds of the interval in progress apply to the earlier draws too:
// when slots free up, as sessions end under Total Active Users, its odds
// rise and the visitors the recent draws favour are at hand (four
// instances used 0.958 of the limit in sim's TestLimits, as with odds
// worked out by each instance at its first draw of an interval, but 0.903
// with each draw under its own interval's odds; and with either, the
// greater, 0.958 at the per-minute limit against 1.000: more winners
// than slots). A pick waits for its winner while the win Holds. Those of the interval
// before stand in until the view has the interval's, a sync or a fleet's
// round or two into it: without them, slots freed at each interval's
// start waited for its odds, and went to whoever asked first once they
// came (groups of five clients sharing a cookie across four instances
// waited 0.81 of polite visitors' wait, 0.92 so; polling every second,
// 0.83 and 0.87; replayers 0.91 and 0.98).
func (v *View) Drawn(id uint64, now, refresh int64) bool {
	x, w := v.seedAt(now, refresh)
	if x == nil {
		return false
	}
	o, ok := heldOdds(x, w)
	if !ok {
		return false
	}
	for i, first := w, firstInterval(x, refresh); i > w-lottery.Hold && i >= first; i-- {
		if lottery.Draw(x.Secret, id, i) < o {
			return true
		}
	}
	return false
}

// Holds reports whether a win holds visitor id at now (Unix ms): Drawn,
// or a draw of the same intervals under its own interval's odds. A pick
// made for a winner (picks.go) lets them in while it holds, as long as
// the odds fall after it: the verifier admits either (lottery.Verify).
func (v *View) Holds(id uint64, now, refresh int64) bool {
	x, w := v.seedAt(now, refresh)
	if x == nil {
		return false
	}
	cur, ok := heldOdds(x, w)
	for i, first := w, firstInterval(x, refresh); i > w-lottery.Hold && i >= first; i-- {
		if o, own := winOdds(x, i, cur, ok); own && lottery.Draw(x.Secret, id, i) < o {
			return true
		}
	}
	return false
}

// heldOdds returns the odds of the draw of interval w under seed x, or,
// until they are fixed, of the interval before; ok is false without
// either.
func heldOdds(x *store.Seed, w int64) (o float64, ok bool) {
	if o, ok = oddsOf(x, w); !ok {
		o, ok = oddsOf(x, w-1)
	}
	return o, ok
}

// winOdds returns the odds a draw of interval i wins under (Drawn): its
// own interval's (heldOdds), or cur, those in force now (if ok), when
// higher.
func winOdds(x *store.Seed, i int64, cur float64, ok bool) (float64, bool) {
	o, own := heldOdds(x, i)
	if ok && (!own || cur > o) {
		return cur, true
	}
	return o, own
}

// NextDrawn returns the start (Unix ms) of the refresh interval of
// refresh ms after that of now, and whether the draw will hold visitor id
// from then on: whether their draw in it falls under the odds of the
// interval of now, which stand in for its own until the view has them
// (Drawn). The room asks a visitor it will hold to come back then, as
// soon as a client polling would learn of it (docs/fairness.md).
func (v *View) NextDrawn(id uint64, now, refresh int64) (int64, bool) {
	x, w := v.seedAt(now, refresh)
	if x == nil || intervalSeed(v.seeds, w+1, refresh) != x {
		return 0, false
	}
	o, ok := oddsOf(x, w)
	return (w + 1) * refresh, ok && lottery.Draw(x.Secret, id, w+1) < o
}

// OddsAt returns the number of the refresh interval of refresh ms that
// holds now (Unix ms) and the odds of its draw, if the state has fixed
// them: what a visitor drawn in it is shown.
func (v *View) OddsAt(now, refresh int64) (int64, float64, bool) {
	x, w := v.seedAt(now, refresh)
	if x == nil {
		return w, 0, false
	}
	o, ok := oddsOf(x, w)
	return w, o, ok
}

// CutAt returns the number of the refresh interval of refresh ms that
// holds now (Unix ms) and the cut of an event's shuffle that the state
// fixed in it, if it did (the cut moved): what a visitor of the shuffle is
// shown. A cut held from an interval before is not shown: a view from
// before the interval's first round could not tell it from one about to
// move.
func (v *View) CutAt(now, refresh int64) (int64, float64, bool) {
	x, w := v.seedAt(now, refresh)
	if x == nil {
		return w, 0, false
	}
	i, ok := slices.BinarySearchFunc(x.Cuts, w, func(o store.Odds, w int64) int { return cmp.Compare(o.Interval, w) })
	if !ok {
		return w, 0, false
	}
	return w, x.Cuts[i].Odds, true
}

// seedAt returns the number of the refresh interval (of refresh ms) that
// holds now (Unix ms), and the seed of its period (intervalSeed) if the
// view has one whose odds and cuts are of intervals of that length, or
// nil.
func (v *View) seedAt(now, refresh int64) (*store.Seed, int64) {
	w := FloorDiv(now, refresh)
	if x := intervalSeed(v.seeds, w, refresh); x != nil && x.Interval == refresh {
		return x, w
	}
	return nil, w
}

// RecordAt returns the record of the lottery period that the refresh
// interval (of refresh ms) of now (Unix ms) belongs to, the one that
// holds its last millisecond, if the view has one: its commitment is what
// a visitor drawn in it is shown, and its start where its published
// record is found. It may begin after now: the interval that straddles a
// period's start draws under its seed. With refresh not positive, the
// period that holds now.
func (v *View) RecordAt(now, refresh int64) (lottery.Record, bool) {
	last := now
	if refresh > 0 {
		last = (FloorDiv(now, refresh)+1)*refresh - 1
	}
	for _, r := range v.Lottery {
		if r.Start*1000 <= last && last < r.End*1000 {
			return r, true
		}
	}
	return lottery.Record{}, false
}

package share

import (
	"cmp"
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
// the latest. A state that was lost has no seed for the hour in progress:
// that hour has no lottery, rather than a seed committed to late. The
// draw of random admission with several instances (View.Drawn) is the
// seed's.

// lotteryPeriod is the length of a period of the lottery, in seconds.
const lotteryPeriod = 3600

// keepSeeds creates in st the seed of the period after the one of now
// (Unix ms) if it has none, and drops the seeds revealed before the latest
// one revealed (revealAfter: the ms after a period's end at which its seed
// is revealed) and any of a period after the next (set under a clock that
// ran ahead).
func keepSeeds(st *store.State, now, revealAfter int64) {
	next := (FloorDiv(now, 1000*lotteryPeriod) + 1) * lotteryPeriod
	st.Seeds = slices.DeleteFunc(st.Seeds, func(x store.Seed) bool { return x.Start > next })
	if !slices.ContainsFunc(st.Seeds, func(x store.Seed) bool { return x.Start == next }) {
		st.Seeds = append(st.Seeds, store.Seed{Start: next, End: next + lotteryPeriod, Secret: lottery.NewSeed()})
	}
	slices.SortFunc(st.Seeds, func(a, b store.Seed) int { return cmp.Compare(a.Start, b.Start) })
	latest := -1
	for i, x := range st.Seeds {
		if revealed(x, now, revealAfter) {
			latest = i
		}
	}
	if latest > 0 {
		st.Seeds = slices.Delete(st.Seeds, 0, latest)
	}
}

// revealed reports whether seed x is revealed at now (Unix ms).
func revealed(x store.Seed, now, revealAfter int64) bool {
	return x.End*1000+revealAfter <= now
}

// publicSeeds returns what may be shown of seeds at now (Unix ms): each
// period with its commitment, and its seed once revealed.
func publicSeeds(seeds []store.Seed, now, revealAfter int64) []lottery.Record {
	var out []lottery.Record
	for _, x := range seeds {
		p := lottery.Period{Start: x.Start, End: x.End}
		r := lottery.Record{Period: p, Commitment: lottery.Commit(x.Secret, p)}
		if revealed(x, now, revealAfter) {
			r.Seed = x.Secret
		}
		out = append(out, r)
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

// Drawn reports whether the draw holds visitor id at now (Unix ms, the
// shared clock), with refresh intervals of refresh ms and the odds of
// each interval's draw: whether the visitor's draw in one of the latest
// lottery.Hold intervals fell under them. A draw is the seed's of the
// period that holds the interval's first millisecond (lottery.Draw), and
// a win holds only within its period; an interval of a period without a
// seed (the state was lost during it) draws from a hash of the visitor
// and the interval alone. The draw is a function of the visitor, the
// clock and the seed: every copy of a cookie, at every instance, draws
// the same.
func (v *View) Drawn(id uint64, now, refresh int64, odds float64) bool {
	w := FloorDiv(now, refresh)
	seed, start, ok := v.seedAt(w * refresh)
	for x := w; x > w-lottery.Hold; x-- {
		switch {
		case ok && x*refresh < start*1000:
			return false // an interval of the period before
		case ok && lottery.Draw(seed, id, x) < odds:
			return true
		case !ok && float64(Mix(id, x)>>11)/(1<<53) < odds:
			return true
		}
	}
	return false
}

// seedAt returns the seed of the lottery period that holds ms (Unix ms)
// and the period's start (Unix seconds), if the view has one.
func (v *View) seedAt(ms int64) (lottery.Seed, int64, bool) {
	for _, x := range v.seeds {
		if x.Start*1000 <= ms && ms < x.End*1000 {
			return lottery.Seed(x.Secret), x.Start, true
		}
	}
	return lottery.Seed{}, 0, false
}

// CommitmentAt returns the commitment to the seed of the lottery period
// that holds now (Unix ms), if the view has one: what a visitor drawn in
// it is shown.
func (v *View) CommitmentAt(now int64) (lottery.Hash, bool) {
	for _, r := range v.Lottery {
		if r.Start*1000 <= now && now < r.End*1000 {
			return r.Commitment, true
		}
	}
	return lottery.Hash{}, false
}

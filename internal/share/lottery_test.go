package share

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// The seeds the state keeps at each moment of an hour, and what of them
// may be shown.
func TestKeepSeeds(t *testing.T) {
	const hour = 1_790_002_800 // an hour's first second
	const reveal = 60_000
	seed := func(start int64) store.Seed {
		return store.Seed{Start: start, End: start + lotteryPeriod, Secret: [32]byte{byte(start / lotteryPeriod)}}
	}
	starts := func(ss []store.Seed) []int64 {
		var out []int64
		for _, x := range ss {
			out = append(out, x.Start)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		seeds    []store.Seed
		now      int64 // ms
		want     []int64
		revealed []int64
		recorded int64 // State.Recorded: the kept history's last minute written, 0 for none kept
	}{
		{"a new state: the rest of the hour from the next second, and the next hour", nil, hour*1000 + 5, []int64{hour + 1, hour + 3600}, nil, 0},
		{"a state lost late in the hour", []store.Seed{seed(hour + 3600)}, hour*1000 + 3_599_500, []int64{hour + 3600}, nil, 0},
		{"the rest of the hour already has its seed", []store.Seed{{Start: hour + 1, End: hour + 3600}}, hour*1000 + 700, []int64{hour + 1, hour + 3600}, nil, 0},
		{"the next hour's kept", []store.Seed{seed(hour), seed(hour + 3600)}, hour*1000 + 5, []int64{hour, hour + 3600}, nil, 0},
		{"a new hour brings the next", []store.Seed{seed(hour - 3600), seed(hour)}, hour * 1000, []int64{hour - 3600, hour, hour + 3600}, nil, 0},
		{"revealed once the draws lapsed", []store.Seed{seed(hour - 3600), seed(hour)}, hour*1000 + reveal, []int64{hour - 3600, hour, hour + 3600}, []int64{hour - 3600}, 0},
		{"the latest revealed kept, older ones dropped", []store.Seed{seed(hour - 7200), seed(hour - 3600), seed(hour)}, hour*1000 + reveal,
			[]int64{hour - 3600, hour, hour + 3600}, []int64{hour - 3600}, 0},
		{"an older one kept until the history holds its reveal", []store.Seed{seed(hour - 7200), seed(hour - 3600), seed(hour)}, hour*1000 + reveal,
			[]int64{hour - 7200, hour - 3600, hour, hour + 3600}, []int64{hour - 7200, hour - 3600}, (hour-3600)/60 + 0},
		{"then dropped", []store.Seed{seed(hour - 7200), seed(hour - 3600), seed(hour)}, hour*1000 + reveal,
			[]int64{hour - 3600, hour, hour + 3600}, []int64{hour - 3600}, (hour-3600)/60 + 1},
		{"an older one kept while the latest is secret", []store.Seed{seed(hour - 7200), seed(hour - 3600), seed(hour)}, hour*1000 + reveal - 1,
			[]int64{hour - 7200, hour - 3600, hour, hour + 3600}, []int64{hour - 7200}, 0},
		{"out of order", []store.Seed{seed(hour + 3600), seed(hour)}, hour*1000 + 5, []int64{hour, hour + 3600}, nil, 0},
		{"set under a clock that ran ahead", []store.Seed{seed(hour), seed(hour + 7200)}, hour*1000 + 5, []int64{hour, hour + 3600}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &store.State{Seeds: tc.seeds, Recorded: tc.recorded}
			keepSeeds(st, tc.now, reveal, nil, nil)
			assert.Equal(t, tc.want, starts(st.Seeds))
			for i, x := range st.Seeds {
				if i > 0 {
					assert.LessOrEqual(t, st.Seeds[i-1].End, x.Start, "periods never overlap")
				}
				if x.Start > tc.now/1000 {
					assert.Equal(t, (x.Start/lotteryPeriod+1)*lotteryPeriod, x.End, "a new period ends with its hour")
				}
			}
			for _, x := range tc.seeds {
				for _, y := range st.Seeds {
					if x.Start == y.Start {
						assert.Equal(t, x.Secret, y.Secret, "a seed is never replaced")
					}
				}
			}
			var revealed []int64
			for i, r := range publicSeeds(st.Seeds, tc.now, reveal) {
				x := st.Seeds[i]
				assert.Equal(t, lottery.Commit(x.Secret, r.Period), r.Commitment)
				if !r.Seed.IsZero() {
					revealed = append(revealed, r.Start)
					assert.Equal(t, lottery.Seed(x.Secret), r.Seed)
				}
			}
			assert.Equal(t, tc.revealed, revealed)
		})
	}
}

// sharing is four syncers of one room on a memstore, on clk, syncing when
// told, through a fleet's aggregator if fleet; host gives each its host.
func sharing(t *testing.T, clk *testclock.Clock, fleet bool, host func(i int) Host[string]) []*Syncer[string] {
	st := memstore.New()
	t.Cleanup(func() { _ = st.Close() })
	return sharingOn(t, clk, st, fleet, host)
}

// sharingOn is sharing on store st.
func sharingOn(t *testing.T, clk *testclock.Clock, st store.Store, fleet bool, host func(i int) Host[string]) []*Syncer[string] {
	var syncers []*Syncer[string]
	for i := range 4 {
		cfg := Config{
			Name: "room", ID: fmt.Sprintf("i%d", i), Store: st, Log: slog.New(slog.DiscardHandler),
			Clock: func() int64 { return clk.Now().UnixMilli() }, SyncInterval: -1, WaitWindow: 44_000,
			OutageEffect: "as the test says", Closed: errors.New("closed"), FleetMin: 1 << 30,
		}
		if fleet {
			cfg.FleetMin = 2
		}
		s := New(cfg, "initial", host(i))
		t.Cleanup(s.Close)
		syncers = append(syncers, s)
	}
	return syncers
}

// Instances sharing a store, syncing the classic way or through a fleet's
// aggregator, all show the same commitments: the first writer's seed is
// everyone's. The seed shows only once its hour and the draws held after
// it are over, and it matches the commitment shown before the hour.
func TestSeedsShared(t *testing.T) {
	for _, fleet := range []bool{false, true} {
		t.Run(fmt.Sprintf("fleet %v", fleet), func(t *testing.T) {
			clk := testclock.New(time.Unix(1_790_002_800+3000, 0))
			syncers := sharing(t, clk, fleet, func(int) Host[string] { return (&testHost{}).host() })
			syncAll := func() {
				for range 3 {
					for _, s := range syncers {
						require.NoError(t, s.Sync(context.Background()))
					}
				}
			}
			assert.Nil(t, syncers[0].Lottery(), "before the first sync")
			syncAll()
			if fleet {
				on := 0
				for _, s := range syncers {
					if s.Status().Fleet {
						on++
					}
				}
				require.Equal(t, len(syncers), on, "every instance syncs through the aggregator")
			}
			first := syncers[0].Lottery()
			require.Len(t, first, 2, "the rest of the hour in progress, and the next hour")
			assert.Equal(t, lottery.Period{Start: 1_790_002_800 + 3001, End: 1_790_002_800 + 3600}, first[0].Period)
			next := first[1]
			assert.Equal(t, int64(1_790_002_800+3600), next.Start)
			assert.True(t, next.Seed.IsZero(), "secret before its hour")
			for _, s := range syncers[1:] {
				assert.Equal(t, first, s.Lottery())
			}

			// Into the hour, then past its end: secret until the draws
			// held after it lapse, then revealed, matching the commitment.
			for _, step := range []struct {
				to       time.Time
				revealed bool
			}{
				{time.Unix(next.Start+10, 0), false},
				{time.Unix(next.End, 0), false},
				{time.Unix(next.End, 0).Add(lottery.Hold * 44 * time.Second), true},
			} {
				clk.Set(step.to)
				syncAll()
				var got lottery.Record
				for _, r := range syncers[0].Lottery() {
					if r.Start == next.Start {
						got = r
					}
				}
				require.Equal(t, next.Commitment, got.Commitment, "at %v", step.to)
				assert.Equal(t, step.revealed, !got.Seed.IsZero(), "at %v", step.to)
				if step.revealed {
					_, err := lottery.Verify(&got, 1, lottery.Claim{})
					assert.NoError(t, err, "the seed matches the commitment shown before the hour")
				}
				for _, s := range syncers[1:] {
					assert.Equal(t, syncers[0].Lottery(), s.Lottery())
				}
			}
		})
	}
}

// What the lottery adds to every sync: keeping the seeds and the
// commitments and odds of the view, with an hour of odds in the latest
// revealed period and in the current one.
func BenchmarkSeeds(b *testing.B) {
	const now = 1_790_002_800_000 + 60_000
	st := &store.State{}
	keepSeeds(st, now-3_600_000, 81_000, nil, nil)
	keepSeeds(st, now, 81_000, nil, nil)
	for i := range st.Seeds { // an hour of odds, at 20-second intervals
		st.Seeds[i] = withOdds(st.Seeds[i], 20_000, 0.123456789)
	}
	b.ReportAllocs()
	for b.Loop() {
		keepSeeds(st, now, 81_000, nil, nil)
		_ = publicSeeds(st.Seeds, now, 81_000)
	}
	b.ReportMetric(float64(len(store.MarshalState(st))-len(store.MarshalState(&store.State{}))), "state-bytes")
}

// withOdds is seed x with odds p for every interval of refresh ms of its
// period: those whose last millisecond it holds.
func withOdds(x store.Seed, refresh int64, p float64) store.Seed {
	x.Interval, x.Odds = refresh, nil
	for w := FloorDiv(x.Start*1000, refresh); (w+1)*refresh <= x.End*1000; w++ {
		x.Odds = append(x.Odds, store.Odds{Interval: w, Odds: p})
	}
	return x
}

// The draw of a visitor at a moment: the seed's draws of the latest
// intervals under the odds the state fixed for the interval in progress.
func TestViewDrawn(t *testing.T) {
	const refresh = 20_000      // ms
	const start = 1_764_853_200 // an hour, Unix seconds
	seed, before := lottery.NewSeed(), lottery.NewSeed()
	at := func(p float64) *View {
		return &View{seeds: []store.Seed{
			withOdds(store.Seed{Start: start - lotteryPeriod, End: start, Secret: before}, refresh, p),
			withOdds(store.Seed{Start: start, End: start + lotteryPeriod, Secret: seed}, refresh, p),
		}}
	}
	v := at(0.1)
	w := int64(start*1000/refresh) + 10 // well inside the hour
	now0 := func(w int64) int64 { return w*refresh + 7_000 }
	now := now0(w)

	t.Run("the seed's draws of the latest intervals", func(t *testing.T) {
		for id := uint64(1); id <= 2_000; id++ {
			want := false
			for x := w - lottery.Hold + 1; x <= w; x++ {
				want = want || lottery.Draw(seed, id, x) < 0.1
			}
			require.Equal(t, want, v.Drawn(id, now, refresh), "visitor %d", id)
		}
	})

	t.Run("the draws of the latest intervals under the odds of the one in progress", func(t *testing.T) {
		set := func(u *View, w int64, o float64) {
			x := &u.seeds[1]
			i, _ := slices.BinarySearchFunc(x.Odds, w, func(o store.Odds, w int64) int { return cmp.Compare(o.Interval, w) })
			x.Odds[i].Odds = o
		}
		now := at(0)
		set(now, w, 0.5)
		before := at(0)
		set(before, w-1, 0.5)
		for id := uint64(1); id <= 2_000; id++ {
			want := false
			for x := w - lottery.Hold + 1; x <= w; x++ {
				want = want || lottery.Draw(seed, id, x) < 0.5
			}
			require.Equal(t, want, now.Drawn(id, now0(w), refresh), "visitor %d", id)
			require.False(t, before.Drawn(id, now0(w), refresh), "visitor %d: an earlier interval's odds are not the interval's", id)
			require.Equal(t, lottery.Draw(seed, id, w-1) < 0.5, before.Holds(id, now0(w), refresh), "visitor %d: a win under its own interval's odds holds, whatever the odds after", id)
			require.Equal(t, want, now.Holds(id, now0(w), refresh), "visitor %d: and under those in force", id)
		}
		// Until the view has the interval's odds, the interval before's
		// stand in; with neither, nobody is let in.
		x := &before.seeds[1]
		x.Odds = slices.DeleteFunc(x.Odds, func(o store.Odds) bool { return o.Interval == w })
		for id := uint64(1); id <= 2_000; id++ {
			want := false
			for x := w - lottery.Hold + 1; x <= w; x++ {
				want = want || lottery.Draw(seed, id, x) < 0.5
			}
			require.Equal(t, want, before.Drawn(id, now0(w), refresh), "visitor %d", id)
		}
		x = &now.seeds[1]
		x.Odds = slices.DeleteFunc(x.Odds, func(o store.Odds) bool { return o.Interval == w })
		for id := uint64(1); id <= 200; id++ {
			require.False(t, now.Drawn(id, now0(w), refresh), "an interval without odds, after one of none, lets nobody in")
		}
	})

	t.Run("a win holds within its period only", func(t *testing.T) {
		v := at(0.2)
		first := int64(start * 1000 / refresh) // the hour's first interval
		found := 0
		for id := uint64(1); id <= 20_000 && found < 20; id++ {
			if lottery.Draw(before, id, first-1) >= 0.2 || lottery.Draw(seed, id, first) < 0.2 {
				continue
			}
			found++
			assert.False(t, v.Drawn(id, first*refresh, refresh), "visitor %d: a win of the hour before", id)
			assert.True(t, v.Drawn(id, (first-1)*refresh, refresh), "visitor %d: the hour before's own win", id)
		}
		require.Equal(t, 20, found)
	})

	t.Run("another seed, other winners", func(t *testing.T) {
		v := at(0.3)
		other := &View{seeds: []store.Seed{withOdds(store.Seed{Start: start, End: start + lotteryPeriod, Secret: lottery.NewSeed()}, refresh, 0.3)}}
		differ := 0
		for id := uint64(1); id <= 1_000; id++ {
			if v.Drawn(id, now, refresh) != other.Drawn(id, now, refresh) {
				differ++
			}
		}
		assert.Greater(t, differ, 300, "winners are the seed's")
	})

	t.Run("the next interval's draw under the odds in force", func(t *testing.T) {
		// What NextDrawn foretells is what Drawn finds at the next
		// interval's start, until its own odds are fixed.
		u := at(0.2)
		x := &u.seeds[1]
		x.Odds = slices.DeleteFunc(x.Odds, func(o store.Odds) bool { return o.Interval > w })
		held := 0
		for id := uint64(1); id <= 2_000; id++ {
			next, ok := u.NextDrawn(id, now, refresh)
			require.Equal(t, (w+1)*refresh, next)
			require.Equal(t, lottery.Draw(seed, id, w+1) < 0.2, ok, "visitor %d", id)
			if ok {
				held++
				require.True(t, u.Drawn(id, next, refresh), "visitor %d", id)
			}
		}
		assert.InDelta(t, 400, held, 80)
		// Nothing foretold across a period's end (another seed draws
		// there), nor without the odds in force.
		sure, last := at(1), int64(start*1000/refresh)-1
		for id := uint64(1); id <= 200; id++ {
			_, ok := sure.NextDrawn(id, last*refresh, refresh)
			require.False(t, ok, "the hour before's last interval")
			_, ok = sure.NextDrawn(id, now, refresh)
			require.True(t, ok, "odds 1")
			_, ok = u.NextDrawn(id, (w+1)*refresh, refresh)
			require.False(t, ok, "an interval without odds")
			_, ok = (&View{}).NextDrawn(id, now, refresh)
			require.False(t, ok, "no seed")
		}
	})

	t.Run("no seed, or odds of intervals of another length: nobody", func(t *testing.T) {
		for _, u := range []*View{{}, at(1)} {
			for id := uint64(1); id <= 100; id++ {
				require.False(t, u.Drawn(id, now, 2*refresh))
				require.False(t, (&View{}).Drawn(id, now, refresh))
			}
		}
	})

	// At odds p, a visitor holds the draw with chance 1 − (1 − p)^Hold.
	const n, p = 100_000, 0.1
	won := 0
	for id := uint64(1); id <= n; id++ {
		if v.Drawn(id, now, refresh) {
			won++
		}
	}
	want := 1 - math.Pow(1-p, lottery.Hold)
	// Six standard deviations of a binomial of n: never a flake.
	assert.InDelta(t, want, float64(won)/n, 6*math.Sqrt(want*(1-want)/n))
	assert.False(t, at(0).Drawn(1, now, refresh), "odds of 0 draw nobody")
	assert.True(t, at(1).Drawn(1, now, refresh), "odds of 1 draw everybody")
}

// The odds of each interval are fixed by its first sync, from that sync's
// view, and never changed; an interval without a seed, of a closed room,
// or of a method that does not draw, gets none.
func TestKeepOdds(t *testing.T) {
	const refresh = 20_000
	const hour = 1_790_002_800
	w := int64(hour*1000/refresh) + 5
	seeded := func() *store.State {
		return &store.State{Seeds: []store.Seed{{Start: hour, End: hour + lotteryPeriod}}}
	}
	rules := func(o float64) Rules {
		r := random
		r.Refresh, r.Odds = refresh, func(v *View, now int64) float64 { return o * float64(v.Waiting) }
		return r
	}
	keep := func(st *store.State, r Rules, now int64) {
		keepOdds(st, &params{now: now, rules: r}, &View{At: now, Waiting: 1})
	}
	odds := func(st *store.State) []store.Odds {
		if len(st.Seeds) == 0 {
			return nil
		}
		return st.Seeds[0].Odds
	}

	t.Run("fixed by the interval's first sync", func(t *testing.T) {
		st := seeded()
		keep(st, rules(0.25), w*refresh+3_000)
		keep(st, rules(0.5), w*refresh+19_999) // a later sync of the interval: no change
		keep(st, rules(0.5), w*refresh-1)      // a clock behind: no record before the latest
		keep(st, rules(0.5), (w+2)*refresh)
		assert.Equal(t, []store.Odds{{Interval: w, Odds: 0.25}, {Interval: w + 2, Odds: 0.5}}, odds(st))
		assert.Equal(t, int64(refresh), st.Seeds[0].Interval)
		v := &View{seeds: st.Seeds}
		got, o, ok := v.OddsAt(w*refresh+5, refresh)
		assert.Equal(t, []any{w, 0.25, true}, []any{got, o, ok})
		_, _, ok = v.OddsAt((w+1)*refresh, refresh)
		assert.False(t, ok, "an interval nobody synced in has no odds")
	})

	t.Run("not by a fleet instance's view", func(t *testing.T) {
		// An instance installs the view the aggregator published: the
		// odds it lacks are the aggregator's to fix (its instance would
		// show visitors odds the record does not hold).
		st := seeded()
		st.Seeds[0].Odds = []store.Odds{{Interval: w - 1, Odds: 0.5}}
		r := rules(0)
		r.Odds = func(*View, int64) float64 { return 0.25 }
		p := params{now: w*refresh + 3_000, rules: r, view: true}
		_, v := applySync(st, p, newDelta())
		assert.Equal(t, []store.Odds{{Interval: w - 1, Odds: 0.5}}, odds(st))
		_, _, ok := v.OddsAt(p.now, refresh)
		assert.False(t, ok, "none shown")
		p.view = false
		applySync(st, p, newDelta())
		assert.Equal(t, []store.Odds{{Interval: w - 1, Odds: 0.5}, {Interval: w, Odds: 0.25}}, odds(st), "a sync that writes the state fixes them")
	})

	t.Run("bounded to [0, 1]", func(t *testing.T) {
		for _, tc := range []struct{ in, want float64 }{{2, 1}, {-1, 0}, {math.NaN(), 0}, {math.Inf(1), 1}} {
			st := seeded()
			keep(st, rules(tc.in), w*refresh)
			assert.Equal(t, []store.Odds{{Interval: w, Odds: tc.want}}, odds(st), "%v", tc.in)
		}
	})

	closed := rules(0.25)
	closed.Closed = true
	other := rules(0.25)
	other.Refresh = 2 * refresh
	for _, tc := range []struct {
		name string
		st   *store.State
		r    Rules
	}{
		{"no seed for the interval", &store.State{}, rules(0.25)},
		{"a method that does not draw", seeded(), fifo},
		{"a closed room", seeded(), closed},
		{"odds of intervals of another length already", &store.State{Seeds: []store.Seed{{Start: hour, End: hour + lotteryPeriod, Interval: refresh,
			Odds: []store.Odds{{Interval: w - 1, Odds: 0.5}}}}}, other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(odds(tc.st))
			keep(tc.st, tc.r, w*refresh*2)
			keep(tc.st, tc.r, w*refresh)
			assert.Equal(t, before, odds(tc.st))
		})
	}
}

// Instances sharing a store, syncing the classic way or through a fleet's
// aggregator, draw under the same odds: those the first sync of each
// interval fixed, whatever each instance would have worked out, and the
// record published for the period holds them.
func TestOddsShared(t *testing.T) {
	const refresh = 20_000
	for _, fleet := range []bool{false, true} {
		t.Run(fmt.Sprintf("fleet %v", fleet), func(t *testing.T) {
			clk := testclock.New(time.Unix(1_790_002_800+600, 0)) // an interval's start
			syncers := sharing(t, clk, fleet, func(i int) Host[string] {
				return Host[string]{Settle: func(st *store.State, _ int64, _ *string) (string, Rules) {
					st.ConfigHash = 1
					r := limits(random, 10, 10)
					r.Refresh, r.Odds = refresh, func(*View, int64) float64 { return float64(i+1) / 10 }
					return "settings", r
				}, Installed: func(_, _ *Snapshot[string]) {}}
			})
			var seen []int64
			for step := range 6 {
				clk.Add(7 * time.Second)
				for range 3 {
					for _, s := range syncers {
						require.NoError(t, s.Sync(context.Background()))
					}
				}
				now := clk.Now().UnixMilli()
				w, o, ok := syncers[0].Snapshot().OddsAt(now, refresh)
				// The interval the room started in too: its first
				// seed's period begins in it.
				require.True(t, ok, "step %d: the interval's odds are fixed", step)
				for _, s := range syncers[1:] {
					w2, o2, _ := s.Snapshot().OddsAt(now, refresh)
					require.Equal(t, []any{w, o}, []any{w2, o2}, "step %d: every instance draws under the same odds", step)
				}
				if !slices.Contains(seen, w) {
					seen = append(seen, w)
				}
			}
			r := syncers[0].Lottery()[0]
			require.Equal(t, int64(refresh), r.IntervalMS)
			var got []int64
			for _, o := range r.Odds {
				got = append(got, o.Interval)
				assert.Contains(t, []float64{0.1, 0.2, 0.3, 0.4}, o.Odds)
			}
			assert.Subset(t, got, seen, "the record holds the odds of every interval drawn in")
		})
	}
}

// The minutes written one after the other share a period's record out:
// each interval's odds in the minute it began, the seed in the minute of
// its reveal time, once each; a minute after a gap (nobody synced) takes
// what the gap had. A minute with neither has nothing.
func TestLotteryMinute(t *testing.T) {
	const hour = 1_790_002_800
	const reveal = 60_000
	x := store.Seed{Start: hour, End: hour + lotteryPeriod, Secret: [32]byte{7}, Interval: 20_000}
	for w := int64(hour / 20); w < (hour+lotteryPeriod)/20; w++ {
		x.Odds = append(x.Odds, store.Odds{Interval: w, Odds: 1 / float64(w%7+1)})
		if w%5 == 0 && w < hour/20+100 {
			x.Cuts = append(x.Cuts, store.Odds{Interval: w, Odds: float64(w-hour/20) / 100})
		}
	}
	next := store.Seed{Start: hour + lotteryPeriod, End: hour + 2*lotteryPeriod, Secret: [32]byte{8}}
	seeds := []store.Seed{x, next}
	commit := lottery.Commit(x.Secret, lottery.Period{Start: x.Start, End: x.End})

	var odds, cuts []store.Odds
	var seed [32]byte
	reveals := 0
	from := int64(hour-120) * 1000
	for m := int64(hour/60 - 1); m < hour/60+70; m++ {
		if m%13 == 5 {
			continue // nobody synced in this minute: no tally
		}
		to := (m + 1) * 60_000
		ps := lotteryMinute(seeds, from, to, reveal)
		from = to
		for _, p := range ps {
			require.Equal(t, x.Start, p.Start, "the next period has neither odds nor a seed yet")
			assert.Equal(t, x.End, p.End)
			assert.Equal(t, commit, lottery.Hash(p.Commitment))
			odds = append(odds, p.Odds...)
			cuts = append(cuts, p.Cuts...)
			if p.Seed != ([32]byte{}) {
				reveals++
				seed = p.Seed
				assert.GreaterOrEqual(t, to, x.End*1000+reveal, "never before its reveal time")
			}
			if len(p.Odds) > 0 {
				assert.Equal(t, x.Interval, p.Interval)
			} else {
				assert.Zero(t, p.Interval)
			}
		}
		if m < hour/60 {
			assert.Empty(t, ps, "before the period")
		}
	}
	assert.Equal(t, x.Odds, odds, "every interval's odds, once")
	assert.Equal(t, x.Cuts, cuts, "and cuts")
	assert.Equal(t, 1, reveals)
	assert.Equal(t, x.Secret, seed)
}

// An event that shuffles its pre-queue is a period of its own, from the
// opening of its pre-queue to its end; the hours around it are cut short.
func TestPeriodAt(t *testing.T) {
	const h = 1_790_002_800 // an hour's first second
	spans := [][2]int64{{h + 600, h + 3*3600}, {h + 4*3600 + 900, h + 4*3600 + 1800}}
	for _, tc := range []struct {
		name       string
		sec        int64
		start, end int64
	}{
		{"an hour before any event", h - 1, h - 3600, h},
		{"cut short by a pre-queue opening", h + 5, h, h + 600},
		{"the event, from its pre-queue", h + 600, h + 600, h + 3*3600},
		{"the event, to its end", h + 3*3600 - 1, h + 600, h + 3*3600},
		{"an hour that an event ends", h + 3*3600, h + 3*3600, h + 4*3600},
		{"an hour with an event inside, before it", h + 4*3600 + 10, h + 4*3600, h + 4*3600 + 900},
		{"the same hour, after it", h + 4*3600 + 1800, h + 4*3600 + 1800, h + 5*3600},
	} {
		s, e := periodAt(tc.sec, spans)
		assert.Equal(t, [2]int64{tc.start, tc.end}, [2]int64{s, e}, tc.name)
	}
	s, e := periodAt(h+5, nil)
	assert.Equal(t, [2]int64{h, h + 3600}, [2]int64{s, e}, "hours without events")
}

// The seed of an event's shuffle is committed before its pre-queue opens:
// made at the first sync of the period before, as every next period's;
// an hour's seed that an event added later cuts short is replaced, never
// used; one the event would cut short after it began, or was drawn under
// (the interval that straddles its start), stands, and the event's
// period begins after it.
func TestKeepSeedsForShuffles(t *testing.T) {
	const h = 1_790_002_800
	const reveal = 60_000
	periods := func(st *store.State) [][2]int64 {
		var out [][2]int64
		for _, x := range st.Seeds {
			out = append(out, [2]int64{x.Start, x.End})
		}
		return out
	}
	t.Run("in time", func(t *testing.T) {
		spans := [][2]int64{{h + 5400, h + 3*3600}} // pre-queue from 1:30, to 3:00
		st := &store.State{}
		keepSeeds(st, h*1000+5_000, reveal, nil, spans)
		assert.Equal(t, [][2]int64{{h + 6, h + 3600}, {h + 3600, h + 5400}}, periods(st))
		keepSeeds(st, (h+3600)*1000+1, reveal, nil, spans)
		assert.Equal(t, [][2]int64{{h + 6, h + 3600}, {h + 3600, h + 5400}, {h + 5400, h + 3*3600}}, periods(st),
			"committed half an hour before the pre-queue opens")
		event := st.Seeds[2].Secret
		keepSeeds(st, (h+5400)*1000, reveal, nil, spans)
		keepSeeds(st, (h+3*3600-1)*1000, reveal, nil, spans)
		assert.Equal(t, [2]int64{h + 3*3600, h + 4*3600}, periods(st)[len(st.Seeds)-1], "the hour after the event")
		assert.Equal(t, event, seedOf(st.Seeds, (h+3*3600-1)*1000).Secret, "one seed for the whole event")
	})
	t.Run("an event added for the next hour", func(t *testing.T) {
		st := &store.State{}
		keepSeeds(st, (h+600)*1000, reveal, nil, nil)
		next := st.Seeds[1]
		require.Equal(t, [2]int64{h + 3600, h + 7200}, [2]int64{next.Start, next.End})
		spans := [][2]int64{{h + 3600 + 1200, h + 3*3600}}
		keepSeeds(st, (h+700)*1000, reveal, nil, spans)
		assert.Equal(t, [][2]int64{{h + 601, h + 3600}, {h + 3600, h + 4800}}, periods(st), "the next hour, cut short, anew")
		assert.NotEqual(t, next.Secret, st.Seeds[1].Secret)
	})
	t.Run("an event added once the next hour's seed was drawn under", func(t *testing.T) {
		st := &store.State{}
		keepSeeds(st, (h+600)*1000, reveal, nil, nil)
		// The interval that straddles the next hour's start drew under
		// its seed already: the seed was used, and stands.
		st.Seeds[1].Interval, st.Seeds[1].Odds = 13_000, []store.Odds{{Interval: (h + 3600) * 1000 / 13_000, Odds: 0.5}}
		next := st.Seeds[1]
		spans := [][2]int64{{h + 3600 + 1200, h + 3*3600}}
		keepSeeds(st, (h+3600)*1000-3_000, reveal, nil, spans)
		assert.Equal(t, [][2]int64{{h + 601, h + 3600}, {h + 3600, h + 7200}}, periods(st), "the next hour as committed")
		assert.Equal(t, next.Secret, st.Seeds[1].Secret)
		keepSeeds(st, (h+3600)*1000, reveal, nil, spans)
		assert.Equal(t, [2]int64{h + 7200, h + 3*3600}, periods(st)[2], "the event's period begins after it")
	})
	t.Run("an event added in the last minutes of an hour", func(t *testing.T) {
		st := &store.State{}
		keepSeeds(st, (h+600)*1000, reveal, nil, nil)
		spans := [][2]int64{{h + 3300, h + 3*3600}} // pre-queue from 0:55
		keepSeeds(st, (h+3000)*1000, reveal, nil, spans)
		assert.Equal(t, [][2]int64{{h + 601, h + 3600}, {h + 3600, h + 3*3600}}, periods(st),
			"the hour in progress stands; the event's period begins after it, committed before its pre-queue opens")
	})
}

// The cut of an event's shuffle: fixed by each interval's first sync,
// each interval's slots over the pre-queue's visitors still waiting of the
// way to 1, or 1 once the minute's slots left cover them; not written
// again once at 1, nor when it does not move.
func TestKeepCuts(t *testing.T) {
	const refresh = 20_000
	const h = 1_790_002_800
	pre := [2]int64{h - 600, h} // the pre-queue's arrival seconds
	w := int64(h*1000/refresh) + 1
	st := &store.State{Seeds: []store.Seed{{Start: h - 600, End: h + 3600}}}
	slots := 10.0
	r := fifo
	r.Refresh, r.Lottery, r.TotalActiveUsers, r.NewUsersPerMinute = refresh, pre, 1000, 50
	r.Slots = func(*View, int64) float64 { return slots }
	view := func(waiting ...int64) *View {
		v := &View{}
		for i, n := range waiting {
			v.Buckets = append(v.Buckets, Bucket{Arrival: pre[0] + int64(i)*100, Waiting: n})
		}
		v.Buckets = append(v.Buckets, Bucket{Arrival: h + 5, Waiting: 1_000}) // after the start: not shuffled
		return v
	}
	keep := func(now int64, v *View) { keepCuts(st, &params{now: now, rules: r}, v) }
	cuts := func() []store.Odds { return st.Seeds[0].Cuts }

	keep(w*refresh+10, view(60, 40))
	keep(w*refresh+19_000, view(10)) // later in the interval: no change
	require.Len(t, cuts(), 1)
	assert.Equal(t, w, cuts()[0].Interval)
	assert.InDelta(t, 0.1, cuts()[0].Odds, 1e-12, "slots over the pre-queue")
	assert.Equal(t, int64(100), st.Seeds[0].Prequeued)
	keep((w+1)*refresh, view(50, 40)) // ten let in: the same share of the rest
	assert.InDelta(t, 0.2, cuts()[1].Odds, 1e-12)
	slots = 0
	keep((w+2)*refresh, view(90))
	assert.Len(t, cuts(), 2, "a cut that does not move is not written")
	slots = 5
	keep((w+3)*refresh, view())
	assert.Equal(t, store.Odds{Interval: w + 3, Odds: 1}, cuts()[2], "nobody left waiting: everyone may pass")
	keep((w+4)*refresh, view(7))
	assert.Len(t, cuts(), 3, "not written again once at 1")

	// Copies counted at several instances: no more count above the cut
	// than its share of the pre-queue, and an interval's slots below.
	swollen := &store.State{Seeds: []store.Seed{{Start: h - 600, End: h + 3600, Interval: refresh, Prequeued: 100,
		Cuts: []store.Odds{{Interval: w, Odds: 0.1}}}}}
	slots = 10
	keepCuts(swollen, &params{now: (w + 1) * refresh, rules: r}, view(150, 50))
	assert.InDelta(t, 0.1+0.9*10/100, swollen.Seeds[0].Cuts[1].Odds, 1e-12, "counted as 100, not 200")

	// Once the slots the minute has left cover the pre-queue still
	// waiting, the cut lets all of it pass: the FIFO grant keeps a slot
	// for each, and gives the rest to later arrivals, who must not get
	// in before the pre-queue's last.
	for _, tc := range []struct {
		waiting, admitted, active int64
		want                      float64
	}{
		{3, 0, 0, 1},     // four slots left for three
		{4, 0, 0, 1},     // as many as left
		{5, 0, 0, 0.3},   // one more: the interval's slots' share
		{3, 2, 0, 0.5},   // two admitted this minute: two left
		{3, 0, 998, 0.5}, // two active places left
		{0, 0, 0, 1},     // nobody waiting
	} {
		st := &store.State{Seeds: []store.Seed{{Start: h - 600, End: h + 3600}}}
		rr := r
		rr.TotalActiveUsers, rr.NewUsersPerMinute = 1000, 4
		slots = 1.5
		v := view(tc.waiting)
		v.AdmittedThisMinute, v.Active = tc.admitted, tc.active
		keepCuts(st, &params{now: w * refresh, rules: rr}, v)
		require.Len(t, st.Seeds[0].Cuts, 1)
		assert.InDelta(t, tc.want, st.Seeds[0].Cuts[0].Odds, 1e-12, "%+v", tc)
	}
	// No more than the minute has left, and in FIFO less those queued
	// before the pre-queue opened, who go first.
	for _, tc := range []struct {
		name            string
		admitted, older int64
		ordered         bool
		want            float64
	}{
		{"the minute's slots", 0, 0, true, 0.1},
		{"two left in the minute", 48, 0, true, 0.02},
		{"none left", 50, 0, true, 0},
		{"four queued before", 0, 4, true, 0.06},
		{"more queued before than slots", 0, 30, true, 0},
		{"random: the pre-queue first", 0, 4, false, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &store.State{Seeds: []store.Seed{{Start: h - 600, End: h + 3600}}}
			rr := r
			rr.Ordered = tc.ordered
			slots = 10
			v := view(100)
			v.AdmittedThisMinute = tc.admitted
			v.Buckets = append([]Bucket{{Arrival: pre[0] - 30, Waiting: tc.older}}, v.Buckets...)
			keepCuts(st, &params{now: w * refresh, rules: rr}, v)
			if tc.want == 0 {
				assert.Empty(t, st.Seeds[0].Cuts, "no slot for the pre-queue: the cut stays")
				return
			}
			require.Len(t, st.Seeds[0].Cuts, 1)
			assert.InDelta(t, tc.want, st.Seeds[0].Cuts[0].Odds, 1e-12)
		})
	}
	slots = 5

	v := &View{seeds: st.Seeds}
	for _, tc := range []struct {
		w   int64
		cut float64
		ok  bool
	}{{w - 1, 0, false}, {w, 0.1, true}, {w + 2, 0.2, true}, {w + 9, 1, true}} {
		c, ok := cutAt(&st.Seeds[0], tc.w)
		assert.Equal(t, tc.ok, ok, "interval %d", tc.w)
		assert.InDelta(t, tc.cut, c, 1e-12, "interval %d: the latest at or before it", tc.w)
	}
	st.Seeds[0].Interval = refresh
	placed := 0
	for id := range uint64(1000) {
		in := v.Placed(id, (w+1)*refresh+5, refresh)
		assert.Equal(t, lottery.Place(st.Seeds[0].Secret, id) < cuts()[1].Odds, in, "visitor %d", id)
		if in {
			placed++
		}
		assert.False(t, v.Placed(id, (w-1)*refresh, refresh), "before the first cut nobody")
		assert.False(t, v.Placed(id, (w+1)*refresh, 2*refresh), "intervals of another length")
	}
	assert.InDelta(t, 200, placed, 40, "a fifth of the pre-queue by the cut of 0.2")

	for _, tc := range []struct {
		name string
		r    func(*Rules)
	}{
		{"no event shuffles", func(r *Rules) { r.Lottery = [2]int64{} }},
		{"a closed room", func(r *Rules) { r.Closed = true }},
		{"no slots estimate", func(r *Rules) { r.Slots = nil }},
	} {
		st := &store.State{Seeds: []store.Seed{{Start: h - 600, End: h + 3600}}}
		rr := r
		tc.r(&rr)
		keepCuts(st, &params{now: w * refresh, rules: rr}, view(10))
		assert.Empty(t, st.Seeds[0].Cuts, tc.name)
	}
}

// A refresh interval belongs to the period that holds its last
// millisecond. The interval that straddles an hour's start draws under
// the next hour's seed: its odds are kept with it, its winners are the
// next seed's, and a win in it holds into the hour, while one of the
// hour before does not. The interval in which a state is made draws
// under the seed made with it, from its first sync, but for one that
// ends within that second; its odds are kept in the period's first
// minute, though it began in the minute before.
func TestStraddlingIntervals(t *testing.T) {
	const refresh = 13_000           // does not divide an hour
	const hour = 1_764_853_200       // hour*1000 is 6 s into an interval
	const ws = hour * 1000 / refresh // the interval that straddles the hour's start
	const reveal = 60_000
	require.Less(t, int64(ws*refresh), int64(hour*1000))
	require.Greater(t, int64((ws+1)*refresh), int64(hour*1000))
	rules := func(o float64) Rules {
		r := random
		r.Refresh, r.Odds = refresh, func(*View, int64) float64 { return o }
		return r
	}
	keep := func(st *store.State, now int64, o float64) *View {
		keepOdds(st, &params{now: now, rules: rules(o)}, &View{At: now})
		return &View{seeds: slices.Clone(st.Seeds), Lottery: publicSeeds(st.Seeds, now, reveal)}
	}

	t.Run("an interval straddling an hour's start belongs to the next hour", func(t *testing.T) {
		before, next := lottery.NewSeed(), lottery.NewSeed()
		st := &store.State{Seeds: []store.Seed{
			withOdds(store.Seed{Start: hour - lotteryPeriod, End: hour, Secret: before}, refresh, 0.2),
			{Start: hour, End: hour + lotteryPeriod, Secret: next},
		}}
		require.Equal(t, int64(ws-1), st.Seeds[0].Odds[len(st.Seeds[0].Odds)-1].Interval, "the hour before's last interval ends in it")
		now := int64(hour*1000 - 3_000) // in the straddling interval, before the hour
		v := keep(st, now, 0.2)
		assert.Equal(t, []store.Odds{{Interval: ws, Odds: 0.2}}, st.Seeds[1].Odds, "kept with the next hour's seed")
		assert.Equal(t, int64(ws-1), st.Seeds[0].Odds[len(st.Seeds[0].Odds)-1].Interval, "not with the hour before's")
		w, o, ok := v.OddsAt(now, refresh)
		assert.Equal(t, []any{int64(ws), 0.2, true}, []any{w, o, ok})
		r, ok := v.RecordAt(now, refresh)
		require.True(t, ok)
		assert.Equal(t, lottery.Period{Start: hour, End: hour + lotteryPeriod}, r.Period, "the record shown is the next hour's")
		r, ok = v.RecordAt(now, 0)
		require.True(t, ok)
		assert.Equal(t, int64(hour-lotteryPeriod), r.Start, "without an interval, the period of the moment")

		v = keep(st, (ws+1)*refresh, 0.2)
		var winners, beforeOnly, heldOn int
		for id := uint64(1); id <= 2_000; id++ {
			won := lottery.Draw(next, id, ws) < 0.2
			assert.Equal(t, won, v.Drawn(id, now, refresh), "visitor %d: the next seed's draw", id)
			if won {
				winners++
				assert.True(t, v.Drawn(id, (ws+1)*refresh+5, refresh), "visitor %d: a win of the straddling interval holds into the hour", id)
				if lottery.Draw(next, id, ws+1) >= 0.2 {
					heldOn++
				}
			}
			if lottery.Draw(before, id, ws-1) < 0.2 && lottery.Draw(next, id, ws) >= 0.2 && lottery.Draw(next, id, ws+1) >= 0.2 {
				beforeOnly++
				assert.False(t, v.Drawn(id, (ws+1)*refresh+5, refresh), "visitor %d: a win of the hour before does not", id)
				assert.True(t, v.Drawn(id, (ws-1)*refresh+5, refresh), "visitor %d: in its own hour it does", id)
			}
		}
		assert.Positive(t, winners)
		assert.Positive(t, heldOn)
		assert.Positive(t, beforeOnly)
	})

	t.Run("the interval in which a state is made", func(t *testing.T) {
		w := int64(ws + 100)
		for _, tc := range []struct {
			name  string
			now   int64
			drawn bool
		}{
			{"early in it", w*refresh + 2_500, true},
			{"its second before last", (w+1)*refresh - 1_001, true},
			{"its last second", (w+1)*refresh - 1_000, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				st := &store.State{}
				keepSeeds(st, tc.now, reveal, nil, nil)
				require.Equal(t, FloorDiv(tc.now, 1000)+1, st.Seeds[0].Start, "a seed from the next second")
				v := keep(st, tc.now, 0.3)
				_, _, ok := v.OddsAt(tc.now, refresh)
				require.Equal(t, tc.drawn, ok, "odds fixed by the state's first sync")
				_, ok = v.RecordAt(tc.now, refresh)
				require.Equal(t, tc.drawn, ok, "and its period's record shown")
				won := 0
				for id := uint64(1); id <= 1_000; id++ {
					d := v.Drawn(id, tc.now, refresh)
					assert.Equal(t, tc.drawn && lottery.Draw(lottery.Seed(st.Seeds[0].Secret), id, w) < 0.3, d, "visitor %d", id)
					if d {
						won++
					}
				}
				if tc.drawn {
					assert.InDelta(t, 300, won, 90, "the new seed's draw of the interval in progress")
				}
				// The next interval draws under the same seed, the
				// straddling one's wins holding in it.
				next := keep(st, (w+1)*refresh, 0.3)
				_, _, ok = next.OddsAt((w+1)*refresh, refresh)
				assert.True(t, ok)
			})
		}
	})

	t.Run("kept in the period's first minute", func(t *testing.T) {
		// An interval that began in the minute before the state was made.
		w := int64(ws + 100)
		for MinuteOf(w*refresh) == MinuteOf((w+1)*refresh-1) || (w+1)*refresh%60_000 < 2_000 {
			w++
		}
		now := (w+1)*refresh - 1_500 // in the next minute, the interval's last seconds
		require.Less(t, MinuteOf(w*refresh), MinuteOf(now))
		st := &store.State{}
		keepSeeds(st, now, reveal, nil, nil)
		keep(st, now, 0.4)
		require.Equal(t, []store.Odds{{Interval: w, Odds: 0.4}}, st.Seeds[0].Odds)
		m := MinuteOf(now) * 60_000
		assert.Empty(t, lotteryMinute(st.Seeds, m-60_000, m, reveal), "not in the minute it began, before the period")
		ps := lotteryMinute(st.Seeds, m, m+60_000, reveal)
		require.Len(t, ps, 1)
		assert.Equal(t, st.Seeds[0].Start, ps[0].Start)
		assert.Equal(t, []store.Odds{{Interval: w, Odds: 0.4}}, ps[0].Odds, "in the period's first minute")
	})

	t.Run("the interval straddling a shuffled event's end gets no cut", func(t *testing.T) {
		const end = hour + 1800 + 5 // 5 s into an interval
		we := int64(end * 1000 / refresh)
		require.Less(t, we*refresh, int64(end*1000))
		event, after := lottery.NewSeed(), lottery.NewSeed()
		st := &store.State{Seeds: []store.Seed{{Start: hour, End: end, Secret: event}, {Start: end, End: hour + lotteryPeriod, Secret: after}}}
		r := fifo
		r.Refresh, r.Lottery, r.Shuffles = refresh, [2]int64{hour, hour + 600}, [][2]int64{{hour, end}}
		r.TotalActiveUsers, r.NewUsersPerMinute = 1000, 100
		r.Slots = func(*View, int64) float64 { return 10 }
		v := &View{Buckets: []Bucket{{Arrival: hour, Waiting: 100}}}
		keepCuts(st, &params{now: (we-1)*refresh + 10, rules: r}, v)
		require.Len(t, st.Seeds[0].Cuts, 1, "the interval before it, wholly in the event")
		keepCuts(st, &params{now: we*refresh + 10, rules: r}, v)
		assert.Len(t, st.Seeds[0].Cuts, 1, "not with the event's seed: the interval is the next period's")
		assert.Empty(t, st.Seeds[1].Cuts, "nor with the next period's, which lists no places")
		view := &View{seeds: st.Seeds}
		for id := uint64(1); id <= 200; id++ {
			assert.False(t, view.Placed(id, we*refresh+10, refresh), "visitor %d", id)
		}
	})
}

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
	}{
		{"a new state: the rest of the hour from the next second, and the next hour", nil, hour*1000 + 5, []int64{hour + 1, hour + 3600}, nil},
		{"a state lost late in the hour", []store.Seed{seed(hour + 3600)}, hour*1000 + 3_599_500, []int64{hour + 3600}, nil},
		{"the rest of the hour already has its seed", []store.Seed{{Start: hour + 1, End: hour + 3600}}, hour*1000 + 700, []int64{hour + 1, hour + 3600}, nil},
		{"the next hour's kept", []store.Seed{seed(hour), seed(hour + 3600)}, hour*1000 + 5, []int64{hour, hour + 3600}, nil},
		{"a new hour brings the next", []store.Seed{seed(hour - 3600), seed(hour)}, hour * 1000, []int64{hour - 3600, hour, hour + 3600}, nil},
		{"revealed once the draws lapsed", []store.Seed{seed(hour - 3600), seed(hour)}, hour*1000 + reveal, []int64{hour - 3600, hour, hour + 3600}, []int64{hour - 3600}},
		{"the latest revealed kept, older ones dropped", []store.Seed{seed(hour - 7200), seed(hour - 3600), seed(hour)}, hour*1000 + reveal,
			[]int64{hour - 3600, hour, hour + 3600}, []int64{hour - 3600}},
		{"an older one kept while the latest is secret", []store.Seed{seed(hour - 7200), seed(hour - 3600), seed(hour)}, hour*1000 + reveal - 1,
			[]int64{hour - 7200, hour - 3600, hour, hour + 3600}, []int64{hour - 7200}},
		{"out of order", []store.Seed{seed(hour + 3600), seed(hour)}, hour*1000 + 5, []int64{hour, hour + 3600}, nil},
		{"set under a clock that ran ahead", []store.Seed{seed(hour), seed(hour + 7200)}, hour*1000 + 5, []int64{hour, hour + 3600}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &store.State{Seeds: tc.seeds}
			keepSeeds(st, tc.now, reveal, nil)
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
	keepSeeds(st, now-3_600_000, 81_000, nil)
	keepSeeds(st, now, 81_000, nil)
	for i := range st.Seeds { // an hour of odds, at 20-second intervals
		st.Seeds[i] = withOdds(st.Seeds[i], 20_000, 0.123456789)
	}
	b.ReportAllocs()
	for b.Loop() {
		keepSeeds(st, now, 81_000, nil)
		_ = publicSeeds(st.Seeds, now, 81_000)
	}
	b.ReportMetric(float64(len(store.MarshalState(st))-len(store.MarshalState(&store.State{}))), "state-bytes")
}

// withOdds is seed x with odds p for every interval of refresh ms of its
// period.
func withOdds(x store.Seed, refresh int64, p float64) store.Seed {
	x.Interval, x.Odds = refresh, nil
	for w := -FloorDiv(-x.Start*1000, refresh); w*refresh < x.End*1000; w++ {
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
		first := int64(start * 1000 / refresh)
		if first*refresh < start*1000 {
			first++ // the hour's first interval starts in it
		}
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
				if step < 2 {
					// The interval the room started in began before
					// its first seed's period: no draw.
					require.False(t, ok, "step %d", step)
					continue
				}
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
	}
	next := store.Seed{Start: hour + lotteryPeriod, End: hour + 2*lotteryPeriod, Secret: [32]byte{8}}
	seeds := []store.Seed{x, next}
	commit := lottery.Commit(x.Secret, lottery.Period{Start: x.Start, End: x.End})

	var odds []store.Odds
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
	assert.Equal(t, 1, reveals)
	assert.Equal(t, x.Secret, seed)
}

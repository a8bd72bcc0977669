package share

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
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
		{"a new state: the next hour only", nil, hour*1000 + 5, []int64{hour + 3600}, nil},
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
			keepSeeds(st, tc.now, reveal)
			assert.Equal(t, tc.want, starts(st.Seeds))
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

// Instances sharing a store, syncing the classic way or through a fleet's
// aggregator, all show the same commitments: the first writer's seed is
// everyone's. The seed shows only once its hour and the draws held after
// it are over, and it matches the commitment shown before the hour.
func TestSeedsShared(t *testing.T) {
	for _, fleet := range []bool{false, true} {
		t.Run(fmt.Sprintf("fleet %v", fleet), func(t *testing.T) {
			clk := testclock.New(time.Unix(1_790_002_800+3000, 0))
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
				s := New(cfg, "initial", (&testHost{}).host())
				t.Cleanup(s.Close)
				syncers = append(syncers, s)
			}
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
			require.Len(t, first, 1, "the next hour's commitment, none for the hour in progress")
			next := first[0]
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
// commitments of the view.
func BenchmarkSeeds(b *testing.B) {
	const now = 1_790_002_800_000 + 60_000
	st := &store.State{}
	keepSeeds(st, now-3_600_000, 81_000)
	keepSeeds(st, now, 81_000)
	b.ReportAllocs()
	for b.Loop() {
		keepSeeds(st, now, 81_000)
		_ = publicSeeds(st.Seeds, now, 81_000)
	}
	b.ReportMetric(float64(len(store.MarshalState(st))-len(store.MarshalState(&store.State{}))), "state-bytes")
}

// The draw of random admission with several instances: the committed
// seed's, held for lottery.Hold intervals within its period; a hash of
// the visitor and the interval where the period has no seed.
func TestViewDrawn(t *testing.T) {
	const refresh = 20_000      // ms
	const start = 1_764_853_200 // an hour, Unix seconds
	seed, before := lottery.NewSeed(), lottery.NewSeed()
	v := &View{seeds: []store.Seed{
		{Start: start - lotteryPeriod, End: start, Secret: before},
		{Start: start, End: start + lotteryPeriod, Secret: seed},
	}}
	w := int64(start*1000/refresh) + 10 // well inside the hour
	now := w*refresh + 7_000

	t.Run("the seed's draws of the latest intervals", func(t *testing.T) {
		for id := uint64(1); id <= 2_000; id++ {
			want := false
			for x := w - lottery.Hold + 1; x <= w; x++ {
				want = want || lottery.Draw(seed, id, x) < 0.1
			}
			require.Equal(t, want, v.Drawn(id, now, refresh, 0.1), "visitor %d", id)
		}
	})

	t.Run("a win holds within its period only", func(t *testing.T) {
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
			assert.False(t, v.Drawn(id, first*refresh, refresh, 0.2), "visitor %d: a win of the hour before", id)
			assert.True(t, v.Drawn(id, (first-1)*refresh, refresh, 0.2), "visitor %d: the hour before's own win", id)
		}
		require.Equal(t, 20, found)
	})

	t.Run("another seed, other winners", func(t *testing.T) {
		other := &View{seeds: []store.Seed{{Start: start, End: start + lotteryPeriod, Secret: lottery.NewSeed()}}}
		differ := 0
		for id := uint64(1); id <= 1_000; id++ {
			if v.Drawn(id, now, refresh, 0.3) != other.Drawn(id, now, refresh, 0.3) {
				differ++
			}
		}
		assert.Greater(t, differ, 300, "winners are the seed's")
	})

	// At odds p, a visitor holds the draw with chance 1 − (1 − p)^Hold,
	// with a seed or without (a period whose state was lost).
	for _, tc := range []struct {
		name string
		v    *View
	}{{"with the seed", v}, {"without a seed", &View{}}} {
		t.Run(tc.name, func(t *testing.T) {
			const n, p = 100_000, 0.1
			won := 0
			for id := uint64(1); id <= n; id++ {
				if tc.v.Drawn(id, now, refresh, p) {
					won++
				}
			}
			want := 1 - math.Pow(1-p, lottery.Hold)
			// Six standard deviations of a binomial of n: never a flake.
			assert.InDelta(t, want, float64(won)/n, 6*math.Sqrt(want*(1-want)/n))
			assert.False(t, tc.v.Drawn(1, now, refresh, 0), "odds of 0 draw nobody")
			assert.True(t, tc.v.Drawn(1, now, refresh, 1), "odds of 1 draw everybody")
		})
	}
}

package share

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

package waitingroom

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

func TestRoundSeconds(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{
		{-5, 0}, {0, 0}, {4, 0}, {5, 10}, {594, 590}, {599, 600},
		{600, 600}, {614, 600}, {615, 630}, {3599, 3600},
		{3600, 3600}, {3749, 3600}, {3750, 3900},
		{6 * 3600, 6 * 3600}, {6*3600 + 899, 6 * 3600}, {6*3600 + 900, 6*3600 + 1800},
		{1 << 40, 48 * 3600},
	} {
		assert.Equal(t, tc.want, roundSeconds(tc.in), "%d s", tc.in)
	}
	// Every duration up to 48 hours lands in one of at most 305 buckets,
	// within half a bucket.
	seen := map[int64]bool{}
	for s := int64(0); s <= 48*3600; s++ {
		r := roundSeconds(s)
		seen[r] = true
		step := map[bool]int64{true: 10, false: 1800}[s < 600]
		switch {
		case s >= 600 && s < 3600:
			step = 30
		case s >= 3600 && s < 6*3600:
			step = 300
		}
		assert.LessOrEqual(t, abs64(r-s), step/2, "%d s", s)
	}
	assert.LessOrEqual(t, len(seen), 305)
}

func abs64(x int64) int64 { return max(x, -x) }

func TestObservedWait(t *testing.T) {
	const m = 1000 // a minute, Unix minutes
	for _, tc := range []struct {
		name  string
		now   int64
		fresh bool
		want  int64
	}{
		{"fresh", m*60_000 + 5000, true, 0},
		{"the arrival minute's end", m*60_000 + 10_000, false, 5000},
		{"minutes later", (m+3)*60_000 + 12_000, false, 3*60_000 + 12_000 - 30_000},
		{"a bucket ahead", (m-1)*60_000 + 59_000, false, 0},
	} {
		assert.Equal(t, tc.want, observedWait(m, tc.now, tc.fresh), tc.name)
	}
}

// A store without history: the state keeps no tallies, and the metrics
// are observed all the same.
func TestNoHistoryStore(t *testing.T) {
	st := plainStore{memstore.New()}
	tr := newTestRoomOn(t, newClock(), st, nil)
	tr.get(&visitor{}, "")
	tr.clk.Add(2 * time.Minute)
	tr.sync()
	require.NoError(t, st.Update(context.Background(), "launch", func(s *store.State) error {
		assert.Empty(t, s.Tallies)
		return nil
	}))
	assert.Equal(t, uint64(1), tr.Observed().Waits.Count, "metrics all the same")
}

// plainStore hides the history of the store it wraps.
type plainStore struct{ store.Store }

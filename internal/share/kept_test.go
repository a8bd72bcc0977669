package share

import (
	"context"
	"testing"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A histogram counts each observation under the first bound at or above
// it (or above every bound), and exports cumulative counts.
func TestHistogram(t *testing.T) {
	h := newHistogram([]float64{10, 30})
	for _, v := range []float64{0, 10, 11, 30, 31, 1000} {
		h.observe(v)
	}
	got := h.export()
	assert.Equal(t, Histogram{Bounds: []float64{10, 30}, Counts: []uint64{2, 4}, Count: 6, Sum: 1082}, got)
	got.Bounds[0] = 99
	assert.Equal(t, []float64{10, 30}, h.bounds, "the export shares nothing")
	assert.Equal(t, Histogram{Bounds: []float64{10}, Counts: []uint64{0}}, func() Histogram { e := newHistogram([]float64{10}); return e.export() }())
}

// A Syncer that observed nothing exports its bounds and no counts.
func TestObservedEmpty(t *testing.T) {
	s := newTestSyncer(t, testclock.New(testclock.Start), memstore.New(), &testHost{})
	waits, sessions := s.Observed()
	assert.Equal(t, waitBounds, waits.Bounds)
	assert.Equal(t, sessionBounds, sessions.Bounds)
	assert.Len(t, waits.Counts, len(waitBounds))
	assert.Zero(t, waits.Count)
	assert.Zero(t, sessions.Count)
	assert.Empty(t, s.Unwritten())
}

// historyStore is a store whose history writes fail while failing is
// set; it records the minutes it wrote.
type historyStore struct {
	store.Store
	failing bool
	written []int64
}

func (h *historyStore) AppendHistory(_ context.Context, _ string, recs []store.Record) error {
	if h.failing {
		return store.ErrUnavailable
	}
	for _, r := range recs {
		h.written = append(h.written, r.Minute)
	}
	return nil
}

func (h *historyStore) ReadHistory(context.Context, string, int64, int64) ([]store.Record, error) {
	return nil, nil
}

// afterSync observes what a sync learnt and writes the minutes it took
// out; those the store refused are kept, at most maxUnwritten of them,
// the oldest given up first, and written with the next.
func TestAfterSync(t *testing.T) {
	h := &historyStore{Store: memstore.New(), failing: true}
	s := newTestSyncer(t, testclock.New(testclock.Start), h, &testHost{})
	ctx := context.Background()
	due := func(from, n int64) []store.Tally {
		var ts []store.Tally
		for m := from; m < from+n; m++ {
			ts = append(ts, store.Tally{Minute: m})
		}
		return ts
	}
	s.afterSync(ctx, &View{due: due(1, 2), observed: observations{waits: []minuteValue{{1, 12}}, sessions: []int64{70}}})
	waits, sessions := s.Observed()
	assert.Equal(t, uint64(1), waits.Count)
	assert.Equal(t, float64(12), waits.Sum)
	assert.Equal(t, uint64(1), sessions.Count)
	assert.Empty(t, h.written)
	require.Len(t, s.Unwritten(), 2, "kept for the next time")

	s.afterSync(ctx, &View{due: due(3, maxUnwritten)})
	un := s.Unwritten()
	require.Len(t, un, maxUnwritten, "bounded")
	assert.Equal(t, int64(3), un[0].Minute, "the oldest given up")

	h.failing = false
	s.afterSync(ctx, &View{due: due(3+maxUnwritten, 1)})
	assert.Len(t, h.written, maxUnwritten, "still bounded")
	assert.Equal(t, int64(4), h.written[0])
	assert.Equal(t, int64(3+maxUnwritten), h.written[maxUnwritten-1])
	assert.Empty(t, s.Unwritten(), "all written")
}

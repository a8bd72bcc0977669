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

func TestObservedWait(t *testing.T) {
	const s = 60_000 // the arrival second, Unix seconds
	for _, tc := range []struct {
		name  string
		now   int64
		fresh bool
		want  int64
	}{
		{"fresh", s*1000 + 5000, true, 0},
		{"in the arrival second", s*1000 + 400, false, 400},
		{"minutes later", s*1000 + 3*60_000 + 12_345, false, 3*60_000 + 12_345},
		{"a bucket ahead", s*1000 - 1, false, 0},
	} {
		assert.Equal(t, tc.want, observedWait(s, tc.now, tc.fresh), tc.name)
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
	assert.Equal(t, uint64(1), tr.Stats().Observed.Waits.Count, "metrics all the same")
}

// plainStore hides the history of the store it wraps.
type plainStore struct{ store.Store }

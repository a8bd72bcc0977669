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
	assert.Equal(t, uint64(1), tr.Stats().Observed.Waits.Count, "metrics all the same")
}

// plainStore hides the history of the store it wraps.
type plainStore struct{ store.Store }

package share

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// testHost is a Host whose settings are a name, with the rules of FIFO
// at 10 a minute, and which records what it is told.
type testHost struct {
	restored  atomic.Int32
	installed atomic.Int32
	lastOld   atomic.Pointer[Snapshot[string]]
}

func (h *testHost) host() Host[string] {
	return Host[string]{
		Settle: func(st *store.State, now int64, restore *string) (string, Rules) {
			if restore != nil {
				h.restored.Add(1)
			}
			st.ConfigHash = 1
			return "settings", limits(fifo, 10, 10)
		},
		Installed: func(old, _ *Snapshot[string]) {
			h.installed.Add(1)
			h.lastOld.Store(old)
		},
	}
}

func newTestSyncer(t *testing.T, clk *testclock.Clock, st store.Store, h *testHost) *Syncer[string] {
	s := New(Config{
		Name: "room", ID: "a", Store: st, Log: slog.New(slog.DiscardHandler),
		Clock: func() int64 { return clk.Now().UnixMilli() }, SyncInterval: -1, WaitWindow: 44_000,
		OutageEffect: "as the test says", Closed: errors.New("closed"),
	}, "initial", h.host())
	t.Cleanup(s.Close)
	return s
}

// A sync installs the view it brings, with the host's settings, after
// telling the host; the instance's first grant is carved from it; a
// request's admission goes out with the next sync.
func TestSyncInstallsTheView(t *testing.T) {
	clk, st, h := testclock.New(testclock.Start), memstore.New(), &testHost{}
	s := newTestSyncer(t, clk, st, h)
	assert.Equal(t, "initial", s.Snapshot().Settings, "before the first sync")
	require.NoError(t, s.Ready(context.Background()), "Ready syncs when nobody else does")
	v := s.Snapshot()
	assert.Equal(t, "settings", v.Settings)
	assert.Equal(t, clk.Now().UnixMilli(), v.At)
	assert.Equal(t, int32(1), h.installed.Load())
	assert.Equal(t, "initial", h.lastOld.Load().Settings, "the host is told what the view replaces")
	assert.NotZero(t, s.Status().Epoch)
	assert.True(t, s.Status().Classic)

	l := s.Local()
	l.Lock()
	require.True(t, l.Take(AnyBucket, true), "the first grant")
	l.Report(store.Session{ID: 7, Admitted: clk.Now().Unix(), Seen: clk.Now().Unix()})
	l.Unlock()
	clk.Add(time.Second)
	require.NoError(t, s.Sync(context.Background()))
	assert.Equal(t, int64(1), s.Snapshot().Active, "the admission reached the state")
	assert.Equal(t, Counters{Syncs: 2, Last: s.Counters().Last}, s.Counters())
}

// A state lost (a store emptied) is rebuilt by the next sync: a new
// epoch, the settings the instance last knew written back (restore), the
// sessions it knows counted again.
func TestSyncRebuildsALostState(t *testing.T) {
	clk, h := testclock.New(testclock.Start), &testHost{}
	st := memstore.New()
	s := newTestSyncer(t, clk, st, h)
	require.NoError(t, s.Sync(context.Background()))
	l := s.Local()
	l.Lock()
	l.Report(store.Session{ID: 7, Admitted: clk.Now().Unix(), Seen: clk.Now().Unix()})
	l.Unlock()
	clk.Add(time.Second)
	require.NoError(t, s.Sync(context.Background()))
	old := s.Status().Epoch
	_, err := s.update(context.Background(), "room", func(x *store.State) bool {
		*x = store.State{}
		return true
	})
	require.NoError(t, err)
	clk.Add(time.Second)
	require.NoError(t, s.Sync(context.Background()))
	assert.NotEqual(t, old, s.Status().Epoch, "a new epoch")
	assert.Equal(t, int32(1), h.restored.Load(), "the settings it knew, restored")
	assert.Equal(t, int64(1), s.Snapshot().Active, "the session it knew, counted again")
}

// update's function says whether to write; one that does not is no
// error, and leaves the state as it was.
func TestUpdateWithoutWrite(t *testing.T) {
	clk, st := testclock.New(testclock.Start), memstore.New()
	s := newTestSyncer(t, clk, st, &testHost{})
	wrote, err := s.update(context.Background(), "k", func(x *store.State) bool {
		x.Version = 5
		return true
	})
	require.NoError(t, err)
	assert.True(t, wrote)
	wrote, err = s.update(context.Background(), "k", func(x *store.State) bool {
		x.Version = 9
		return false
	})
	require.NoError(t, err)
	assert.False(t, wrote)
	got, err := s.read(context.Background(), "k")
	require.NoError(t, err)
	assert.Equal(t, uint64(5), got.Version)
}

// Local.Take charges what it takes while a sync is in flight to the grant
// the sync brings, entry by entry.
func TestTakeWhileInFlight(t *testing.T) {
	l := newLocal()
	l.SetGrant(Grant{{Bucket: 3, N: 1}, {Bucket: AnyBucket, N: 1}})
	l.inflight = map[int64]int64{}
	assert.True(t, l.Take(3, false))
	assert.True(t, l.Take(3, false), "an older visitor takes a newer one's slot")
	assert.False(t, l.Take(3, false))
	assert.Equal(t, map[int64]int64{3: 1, AnyBucket: 1}, l.inflight)
}

package waitingroom_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// stalling is a store that answers until stall is set, and then hangs:
// until the caller's context is done, or, ignoring its context, until
// release is closed.
type stalling struct {
	store.Store
	stall     atomic.Bool
	ignoreCtx bool
	release   chan struct{}
	stalled   atomic.Int32 // Updates that hung
}

func (s *stalling) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	if !s.stall.Load() {
		return s.Store.Update(ctx, room, fn)
	}
	s.stalled.Add(1)
	if s.ignoreCtx {
		<-s.release
		return store.ErrUnavailable
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestShutdownBoundedByContext: the last sync of an instance whose store
// hangs is bounded by Shutdown's context, and by the time a sync is given
// for Close (2 s with a SyncInterval of a second), on the bubble's clock;
// a store that ignores its context holds neither up.
func TestShutdownBoundedByContext(t *testing.T) {
	shutdownIn := func(d time.Duration) func(rm *waitingroom.Room) error {
		return func(rm *waitingroom.Room) error {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			return rm.Shutdown(ctx)
		}
	}
	for _, tc := range []struct {
		name      string
		ignoreCtx bool
		shutdown  func(rm *waitingroom.Room) error
		took      time.Duration
		err       error
	}{
		{"Close", false, func(rm *waitingroom.Room) error { return rm.Close() }, share.SyncTimeout(time.Second), nil},
		{"Shutdown", false, shutdownIn(100 * time.Millisecond), 100 * time.Millisecond, context.DeadlineExceeded},
		{"Shutdown, a store that ignores its context", true, shutdownIn(100 * time.Millisecond), 100 * time.Millisecond, context.DeadlineExceeded},
		{"Close, a store that ignores its context", true, func(rm *waitingroom.Room) error { return rm.Close() }, share.SyncTimeout(time.Second), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs servicetest.Buffer
				st := &stalling{Store: memstore.New(), ignoreCtx: tc.ignoreCtx, release: make(chan struct{})}
				defer close(st.release)
				rm, err := waitingroom.New(waitingroom.Config{
					Name:         "ready",
					Settings:     waitingroom.Settings{TotalActiveUsers: 10, NewUsersPerMinute: 10},
					Keys:         [][]byte{[]byte("a key of 32 bytes for the tests!")},
					SyncInterval: time.Second,
					Logger:       slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
				}, st)
				require.NoError(t, err)
				require.NoError(t, rm.Ready(context.Background()), "the first sync went through")
				st.stall.Store(true)

				start := time.Now()
				err = tc.shutdown(rm)
				took := time.Since(start) // the bubble's clock
				if tc.err != nil {
					assert.ErrorIs(t, err, tc.err)
				} else {
					assert.NoError(t, err)
				}
				assert.Equal(t, tc.took, took, "the last sync waited as long as it was given")
				assert.Equal(t, int32(1), st.stalled.Load(), "one last sync, which hung")
				assert.ErrorIs(t, rm.Sync(context.Background()), waitingroom.ErrClosed)
				assert.ErrorIs(t, rm.Ready(context.Background()), waitingroom.ErrClosed)
				assert.ErrorIs(t, rm.Update(context.Background(), func(*waitingroom.Settings) {}), waitingroom.ErrClosed)
			})
		})
	}
}

// TestShutdownLeavesTheState: Shutdown makes the last sync as Close does
// (the instance's record leaves the state, its admissions brought in),
// returns nil once it went through, and again when called again; a room
// whose latest sync failed makes none, and returns nil at once.
func TestShutdownLeavesTheState(t *testing.T) {
	t.Run("its latest sync went through", func(t *testing.T) {
		clk, st := newClock(), memstore.New()
		a, b, held := twoSharing(t, clk, st, nil)
		require.Positive(t, held)
		require.True(t, admitted(b.get(&visitor{}, "")))
		require.NoError(t, b.Shutdown(context.Background()))
		require.NoError(t, b.Shutdown(context.Background()), "again: nothing more")
		s := readRoom(t, st, "launch")
		require.Len(t, s.Instances, 1, "the instance's record is gone")
		assert.Equal(t, a.id, s.Instances[0].ID)
		assert.Len(t, s.Sessions, 1, "its admission was brought in")
		assert.ErrorIs(t, b.Sync(context.Background()), waitingroom.ErrClosed)
		assert.True(t, isErrorPage(b.get(&visitor{}, "")), "Handler answers with the error page")
	})
	t.Run("its latest sync failed", func(t *testing.T) {
		clk := newClock()
		fs := &flaky{Store: memstore.New()}
		a := newTestRoomOn(t, clk, fs, nil)
		fs.down.Store(true)
		clk.Add(time.Second)
		require.Error(t, a.Sync(context.Background()))
		fs.down.Store(false)
		require.NoError(t, a.Shutdown(context.Background()))
		s := readRoom(t, fs, "launch")
		assert.Len(t, s.Instances, 1, "no last sync: the record stays, to be dropped as silent")
	})
}

package waitingroom

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// logBuffer collects a room's log lines, safe for the background sync to
// write while the test reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) count(s string) int { return strings.Count(b.String(), s) }

// readyConfig is a room with a background sync every second, logging
// everything, the debug level included, to logs.
func readyConfig(logs *logBuffer) Config {
	return Config{
		Name: "ready",
		Settings: Settings{
			TotalActiveUsers:  10,
			NewUsersPerMinute: 10,
		},
		Keys:         [][]byte{[]byte("a key of 32 bytes for the tests!")},
		SyncInterval: time.Second,
		Logger:       slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// hanging is a store whose Update never answers: it waits until its
// context is done and returns the context's error, as a store whose server
// stalls does.
type hanging struct {
	calls atomic.Int32
	// errs are the context errors Update returned.
	mu   sync.Mutex
	errs []error
}

func (h *hanging) Update(ctx context.Context, _ string, _ func(*store.State) error) error {
	h.calls.Add(1)
	<-ctx.Done()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, ctx.Err())
	return ctx.Err()
}

func (h *hanging) Close() error { return nil }

func (h *hanging) returned() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]error(nil), h.errs...)
}

// TestCloseCancelsSync: Close cancels the background sync in flight on a
// store that hangs, returns without waiting out the sync's timeout, and
// logs no error for the cancellation it caused.
func TestCloseCancelsSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer
		st := &hanging{}
		rm, err := New(readyConfig(&logs), st)
		require.NoError(t, err)
		synctest.Wait() // the first sync is in flight, blocked in the store
		require.Equal(t, int32(1), st.calls.Load())

		start := time.Now()
		require.NoError(t, rm.Close())
		took := time.Since(start) // the bubble's clock: moves only when everyone waits

		assert.Less(t, took, share.SyncTimeout(time.Second), "Close must not wait out the sync's timeout")
		assert.Zero(t, took)
		assert.Equal(t, []error{context.Canceled}, st.returned(), "the store's context was cancelled, not timed out")
		assert.NotContains(t, logs.String(), "level=ERROR", "no error for a cancellation Close caused")
		assert.Contains(t, logs.String(), "sync cancelled")
		assert.Zero(t, rm.Stats().Counters.SyncErrors)
		assert.ErrorIs(t, rm.Ready(context.Background()), ErrClosed)
	})
}

// TestHangingStoreIsUnavailable: a store that does not answer before the
// sync's deadline, and does not say why, is reported unavailable.
func TestHangingStoreIsUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer
		rm, err := New(readyConfig(&logs), &hanging{})
		require.NoError(t, err)
		defer rm.Close()
		start := time.Now()
		err = rm.Ready(context.Background())
		assert.Equal(t, share.SyncTimeout(time.Second), time.Since(start), "Ready waits for the first sync")
		assert.ErrorIs(t, err, store.ErrUnavailable)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 1, logs.count("level=ERROR"))
		assert.Equal(t, 1, logs.count("store unreachable"))
	})
}

// classed is a store that fails with err while err is set.
type classed struct {
	store.Store
	mu  sync.Mutex
	err error
}

func (c *classed) set(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

func (c *classed) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.Store.Update(ctx, room, fn)
}

// TestFailureClasses: the room's log says which kind of failure a store
// reports, once when it begins, and Ready's error lets the caller tell a
// misconfiguration from an outage.
func TestFailureClasses(t *testing.T) {
	noTable := fmt.Errorf("%w: table t does not exist; create it with (*sqlstore.Store).CreateSchema: relation \"t\" does not exist", store.ErrNoSchema)
	auth := fmt.Errorf("%w: check the user and password: WRONGPASS", store.ErrAuth)
	down := fmt.Errorf("%w: dial tcp: connection refused", store.ErrUnavailable)
	version := fmt.Errorf("waitingroom/redisstore: %q: %w: the state is of encoding version 5, this release reads 4", "launch", store.ErrVersion)
	other := errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")
	tests := []struct {
		name string
		err  error
		// log is the line logged, cause its cause attribute.
		log, cause string
		class      error // nil: none
		misconfig  bool
	}{
		{"no schema", noTable, "store misconfigured: its table or keys do not exist", "no_schema", store.ErrNoSchema, true},
		{"auth", auth, "store misconfigured: it refused the credentials or a permission", "auth", store.ErrAuth, true},
		{"unavailable", down, "store unreachable", "unavailable", store.ErrUnavailable, false},
		{"another release's state", version, "the shared state is of another release's format", "version", store.ErrVersion, true},
		{"unclassified", other, "store failed", "other", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs logBuffer
			cfg := readyConfig(&logs)
			cfg.SyncInterval = -1
			st := &classed{Store: memstore.New(), err: tt.err}
			rm, err := New(cfg, st)
			require.NoError(t, err)
			defer rm.Close()
			ctx := context.Background()

			err = rm.Ready(ctx) // runs the first sync: SyncInterval is negative
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.err, "the store's error stays in the chain")
			for _, class := range []error{store.ErrNoSchema, store.ErrAuth, store.ErrUnavailable, store.ErrVersion} {
				assert.Equal(t, class == tt.class, errors.Is(err, class), "errors.Is(%v)", class)
			}
			assert.Equal(t, tt.misconfig, errors.Is(err, store.ErrNoSchema) || errors.Is(err, store.ErrAuth) || errors.Is(err, store.ErrVersion))
			for range 5 {
				assert.Error(t, rm.Sync(ctx))
			}
			assert.Equal(t, err.Error(), rm.Ready(ctx).Error(), "Ready returns the latest sync's error without a sync of its own")
			assert.Equal(t, 1, logs.count("level=ERROR"), "one line per outage:\n%s", logs.String())
			assert.Equal(t, 1, logs.count(tt.log))
			assert.Equal(t, 1, logs.count("cause="+tt.cause))
			assert.Contains(t, logs.String(), "fail-closed", "the line says what visitors get meanwhile")
			if tt.err == noTable {
				assert.Contains(t, logs.String(), "CreateSchema", "the line carries the store's hint")
			}
			assert.Equal(t, uint64(6), rm.Stats().Counters.SyncErrors)

			st.set(nil)
			require.NoError(t, rm.Sync(ctx))
			assert.NoError(t, rm.Ready(ctx))
			assert.Equal(t, 1, logs.count("store reachable again"))
		})
	}
}

// TestMisconfigurationDuringOutage: an outage that turns out to be a
// misconfiguration (the server came back with another password) is logged
// again; flapping between kinds of outage is not.
func TestMisconfigurationDuringOutage(t *testing.T) {
	var logs logBuffer
	cfg := readyConfig(&logs)
	cfg.SyncInterval = -1
	st := &classed{Store: memstore.New()}
	rm, err := New(cfg, st)
	require.NoError(t, err)
	defer rm.Close()
	ctx := context.Background()
	down := fmt.Errorf("%w: connection refused", store.ErrUnavailable)
	for _, err := range []error{
		down, errors.New("unexpected reply"), down, // one outage
		fmt.Errorf("%w: WRONGPASS", store.ErrAuth), // a misconfiguration
		down, fmt.Errorf("%w: WRONGPASS", store.ErrAuth),
		fmt.Errorf("%w: no such table", store.ErrNoSchema), // another one
	} {
		st.set(err)
		assert.Error(t, rm.Sync(ctx))
	}
	assert.Equal(t, 1, logs.count("store unreachable"), logs.String())
	assert.Equal(t, 2, logs.count("cause=auth"), logs.String())
	assert.Equal(t, 1, logs.count("cause=no_schema"), logs.String())
	assert.Equal(t, 0, logs.count("store failed"), logs.String())
	assert.ErrorIs(t, rm.Ready(ctx), store.ErrNoSchema)
}

// blocking is a store whose Update waits for release before it goes on.
type blocking struct {
	store.Store
	release chan struct{}
}

func (b *blocking) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	select {
	case <-b.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.Store.Update(ctx, room, fn)
}

// TestReadyWaitsForFirstSync: Ready waits for the background's first sync,
// gives up when its ctx is done, and does no I/O of its own.
func TestReadyWaitsForFirstSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer
		st := &blocking{Store: memstore.New(), release: make(chan struct{})}
		rm, err := New(readyConfig(&logs), st)
		require.NoError(t, err)
		defer rm.Close()

		short, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		err = rm.Ready(short)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, store.ErrUnavailable, "no answer within the caller's deadline")

		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		err = rm.Ready(cancelled)
		assert.ErrorIs(t, err, context.Canceled)
		assert.NotErrorIs(t, err, store.ErrUnavailable)

		done := make(chan error)
		go func() { done <- rm.Ready(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Ready returned %v before the first sync finished", err)
		default:
		}
		close(st.release)
		assert.NoError(t, <-done)
		assert.False(t, rm.Stats().Synced.IsZero(), "Ready returned after the first sync")
		assert.Equal(t, uint64(1), rm.Stats().Counters.Syncs, "Ready does not sync by itself")
		assert.NotContains(t, logs.String(), "level=ERROR")
	})
}

// TestReadyMeansAdmitting: once Ready returns nil, the room has the grant
// of its first sync, so the first visitor of an empty room gets in.
func TestReadyMeansAdmitting(t *testing.T) {
	for i := range 50 {
		var logs logBuffer
		rm, err := New(readyConfig(&logs), memstore.New())
		require.NoError(t, err)
		require.NoError(t, rm.Ready(context.Background()))
		d, err := rm.checkRequest(httptest.NewRequest(http.MethodGet, "/", nil))
		require.NoError(t, rm.Close())
		require.NoError(t, err)
		require.Equal(t, outcomeAdmitted, d.Outcome, "room %d: the first visitor after Ready", i)
	}
}

func TestReadyAfterClose(t *testing.T) {
	var logs logBuffer
	cfg := readyConfig(&logs)
	cfg.SyncInterval = -1
	rm, err := New(cfg, memstore.New())
	require.NoError(t, err)
	require.NoError(t, rm.Close())
	assert.ErrorIs(t, rm.Ready(context.Background()), ErrClosed)
}

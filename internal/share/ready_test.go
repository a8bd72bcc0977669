package share

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A failure is classed by the store's error it wraps, however deep; only
// a store's misconfiguration lasts until fixed.
func TestFailureOf(t *testing.T) {
	for _, tc := range []struct {
		err           error
		want          failure
		name          string
		misconfigured bool
	}{
		{errors.New("boom"), failOther, "other", false},
		{nil, failOther, "other", false},
		{fmt.Errorf("redis: %w", store.ErrUnavailable), failUnavailable, "unavailable", false},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", store.ErrNoSchema)), failNoSchema, "no_schema", true},
		{fmt.Errorf("sql: %w", store.ErrAuth), failAuth, "auth", true},
		{fmt.Errorf("state: %w", store.ErrVersion), failVersion, "version", true},
		{fmt.Errorf("%w: %w", store.ErrUnavailable, store.ErrAuth), failAuth, "auth", true},
	} {
		f := failureOf(tc.err)
		assert.Equal(t, tc.want, f, "%v", tc.err)
		assert.Equal(t, tc.name, f.String())
		assert.Equal(t, tc.misconfigured, f.misconfigured(), "%v", tc.err)
	}
	messages := map[string]bool{}
	for f := failOther; f <= failVersion; f++ {
		assert.Contains(t, f.message(), "waitingroom: ")
		messages[f.message()] = true
	}
	assert.Len(t, messages, 5, "a message each")
}

// readiness: nothing known at first; the first outcome closes the channel
// once, and the latest outcome is what get returns.
func TestReadiness(t *testing.T) {
	var r readiness
	done, known, err := r.get()
	assert.False(t, done)
	assert.NoError(t, err)
	select {
	case <-known:
		t.Fatal("known before any outcome")
	default:
	}
	boom := errors.New("boom")
	r.set(boom)
	done, known2, err := r.get()
	assert.True(t, done)
	assert.Equal(t, boom, err)
	assert.Equal(t, known, known2, "the same channel")
	<-known
	r.set(nil)
	done, _, err = r.get()
	assert.True(t, done)
	assert.NoError(t, err, "the latest outcome")
}

// Without a loop, Ready syncs when no sync has finished, and then reports
// the latest outcome without I/O of its own.
func TestReadySyncsOnce(t *testing.T) {
	clk := testclock.New(testclock.Start)
	st := &countingStore{Store: memstore.New()}
	s := newTestSyncer(t, clk, st, &testHost{})
	require.NoError(t, s.Ready(context.Background()))
	n := st.updates
	require.Positive(t, n)
	require.NoError(t, s.Ready(context.Background()))
	assert.Equal(t, n, st.updates, "no sync of its own once one finished")
}

// countingStore counts the Updates of its store.
type countingStore struct {
	store.Store
	updates int
}

func (c *countingStore) Update(ctx context.Context, key string, fn func(*store.State) error) error {
	c.updates++
	return c.Store.Update(ctx, key, fn)
}

// The line that opens an outage says what the room knows: a store that
// refused the connection is unreachable; one that gave no answer within
// the sync's deadline is unreachable or too slow, which the room cannot
// tell apart (a fleet starting at once on a loaded store sees the
// latter). Either way the cause is "unavailable".
func TestOutageLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fail  func(ctx context.Context) error
		want  string
		avoid string
	}{
		{"refused", func(context.Context) error { return fmt.Errorf("dial: %w", store.ErrUnavailable) },
			"store unreachable; ", "too slow"},
		{"the store's own deadline", func(ctx context.Context) error {
			return fmt.Errorf("%w: %w", store.ErrUnavailable, context.DeadlineExceeded)
		}, "store unreachable or too slow: no answer within the sync's deadline", ""},
		{"no answer before the sync's deadline", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			"store unreachable or too slow: no answer within the sync's deadline", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := New(Config{
				Name: "room", ID: "a", Store: failingStore{memstore.New(), tc.fail},
				Log:   slog.New(slog.NewTextHandler(&logs, nil)),
				Clock: func() int64 { return testclock.Start.UnixMilli() }, SyncInterval: -1, WaitWindow: 44_000,
				OutageEffect: "as the test says", Closed: errors.New("closed"),
			}, "initial", (&testHost{}).host())
			t.Cleanup(s.Close)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			require.ErrorIs(t, s.Sync(ctx), store.ErrUnavailable)
			assert.Contains(t, logs.String(), tc.want)
			assert.Contains(t, logs.String(), "cause=unavailable")
			if tc.avoid != "" {
				assert.NotContains(t, logs.String(), tc.avoid)
			}
		})
	}
}

// failingStore fails every Update with fail.
type failingStore struct {
	store.Store
	fail func(ctx context.Context) error
}

func (f failingStore) Update(ctx context.Context, _ string, _ func(*store.State) error) error {
	return f.fail(ctx)
}

package memstore_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/store/storetest"
)

// handle is one client of a shared memstore: closing it does not close the
// store for the other handles, as closing one Redis client does not stop
// the server. It offers all the store offers, so that the suite checks all
// of it.
type handle struct {
	s      *memstore.Store
	closed atomic.Bool
}

func (h *handle) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	if h.closed.Load() {
		return store.ErrClosed
	}
	return h.s.Update(ctx, room, fn)
}

func (h *handle) Read(ctx context.Context, room string) (*store.State, error) {
	if h.closed.Load() {
		return nil, store.ErrClosed
	}
	return h.s.Read(ctx, room)
}

func (h *handle) AppendHistory(ctx context.Context, room string, recs []store.Record) error {
	if h.closed.Load() {
		return store.ErrClosed
	}
	return h.s.AppendHistory(ctx, room, recs)
}

func (h *handle) ReadHistory(ctx context.Context, room string, from, to int64) ([]store.Record, error) {
	if h.closed.Load() {
		return nil, store.ErrClosed
	}
	return h.s.ReadHistory(ctx, room, from, to)
}

func (h *handle) Close() error { h.closed.Store(true); return nil }

var (
	_ store.HistoryStore = (*handle)(nil)
	_ store.Reader       = (*handle)(nil)
)

func TestConformance(t *testing.T) {
	shared := memstore.New()
	t.Cleanup(func() { _ = shared.Close() })
	storetest.Run(t, func(testing.TB) store.Store { return &handle{s: shared} })
}

func TestClose(t *testing.T) {
	s := memstore.New()
	require.NoError(t, s.Update(context.Background(), "r", func(st *store.State) error { st.Epoch = 1; return nil }))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	assert.ErrorIs(t, s.Update(context.Background(), "r", func(*store.State) error { return nil }), store.ErrClosed)
}

func BenchmarkUpdate(b *testing.B) {
	shared := memstore.New()
	storetest.Benchmark(b, func(testing.TB) store.Store { return &handle{s: shared} })
}

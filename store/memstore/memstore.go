// Package memstore keeps waiting-room state in process memory.
//
// It is the default store for a single process: nothing to run, nothing
// persisted. Rooms in different processes never share a memstore; use
// redisstore or sqlstore for that.
package memstore

import (
	"context"
	"sync"

	"github.com/go-waitingroom/waitingroom/store"
)

var _ store.Store = (*Store)(nil)

// Store is an in-memory store.Store. The zero value is not usable; call New.
// It is safe for concurrent use.
type Store struct {
	mu     sync.Mutex
	rooms  map[string][]byte
	closed bool
}

// New returns an empty in-memory store.
func New() *Store {
	return &Store{rooms: make(map[string][]byte)}
}

// Update implements store.Store. It holds the store's mutex while fn runs,
// so fn is called exactly once and updates of all rooms are serialized.
// The state is kept encoded, so fn never shares memory with the store.
func (s *Store) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	st, err := store.UnmarshalState(s.rooms[room])
	if err != nil {
		st = &store.State{}
	}
	if err := fn(st); err != nil {
		return err
	}
	s.rooms[room] = store.MarshalState(st)
	return nil
}

// Close implements store.Store: it drops every room's state.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.rooms = nil
	return nil
}

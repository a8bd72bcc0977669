// Package memstore keeps waiting-room state in process memory.
//
// It is the default store for a single process: nothing to run, nothing
// persisted. Rooms in different processes never share a memstore; use
// redisstore or sqlstore for that. It keeps the rooms' history
// (store.HistoryStore) in memory too.
package memstore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/go-waitingroom/waitingroom/store"
)

var (
	_ store.Store        = (*Store)(nil)
	_ store.HistoryStore = (*Store)(nil)
	_ store.Reader       = (*Store)(nil)
)

// Store is an in-memory store.Store. The zero value is not usable; call New.
// It is safe for concurrent use.
type Store struct {
	mu sync.Mutex // serializes Update and the history
	// rmu guards rooms for Read, which so waits for no Update's fn: an
	// Update holds mu while fn runs and rmu only to store the result.
	rmu    sync.RWMutex
	rooms  map[string][]byte
	hist   map[string][]store.Record // by minute, oldest first
	closed bool
}

// New returns an empty in-memory store.
func New() *Store {
	return &Store{rooms: make(map[string][]byte), hist: make(map[string][]store.Record)}
}

// Update implements store.Store. It holds the store's mutex while fn runs,
// so fn is called exactly once and updates of all rooms are serialized.
// The state is kept encoded, so fn never shares memory with the store. A
// room whose fn leaves the zero State is removed.
func (s *Store) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	st, err := store.Decode(s.rooms[room])
	if err != nil {
		return err
	}
	if err := fn(st); err != nil {
		return err
	}
	b := store.MarshalState(st)
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if bytes.Equal(b, zeroState) {
		delete(s.rooms, room)
	} else {
		s.rooms[room] = b
	}
	return nil
}

// zeroState is the encoding of the zero State: a room left with it is
// removed (not found reads the same).
var zeroState = store.MarshalState(&store.State{})

// Read implements store.Reader: it never waits for an Update's fn, and
// decodes a copy of the state, which the caller owns.
func (s *Store) Read(ctx context.Context, room string) (*store.State, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.rmu.RLock()
	b, closed := s.rooms[room], s.closed
	s.rmu.RUnlock()
	if closed {
		return nil, store.ErrClosed
	}
	return store.Decode(b)
}

// Close implements store.Store: it drops every room's state.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.closed = true
	s.rooms, s.hist = nil, nil
	return nil
}

// AppendHistory implements store.HistoryStore. A room's history takes at
// most store.HistoryMinutes records of at most store.MaxRecordBytes (about
// 100 bytes each, usually: 4 MB a room for 30 days).
func (s *Store) AppendHistory(ctx context.Context, room string, recs []store.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, r := range recs {
		if len(r.Data) > store.MaxRecordBytes {
			return fmt.Errorf("waitingroom/store: history record of %d bytes, more than %d", len(r.Data), store.MaxRecordBytes)
		}
	}
	if len(recs) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	h := s.hist[room]
	for _, r := range recs {
		r.Data = slices.Clone(r.Data)
		i, found := slices.BinarySearchFunc(h, r.Minute, byMinute)
		if found {
			h[i] = r
		} else {
			h = slices.Insert(h, i, r)
		}
	}
	last := slices.MaxFunc(recs, func(a, b store.Record) int { return cmp.Compare(a.Minute, b.Minute) }).Minute
	i, _ := slices.BinarySearchFunc(h, last-store.HistoryMinutes+1, byMinute)
	s.hist[room] = slices.Delete(h, 0, i)
	return nil
}

// ReadHistory implements store.HistoryStore.
func (s *Store) ReadHistory(ctx context.Context, room string, from, to int64) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	h := s.hist[room]
	i, _ := slices.BinarySearchFunc(h, from, byMinute)
	j, _ := slices.BinarySearchFunc(h, to, byMinute)
	if j <= i {
		return nil, nil
	}
	out := slices.Clone(h[i:j])
	for k := range out {
		out[k].Data = slices.Clone(out[k].Data)
	}
	return out, nil
}

func byMinute(r store.Record, m int64) int { return cmp.Compare(r.Minute, m) }

// Package storetest is the conformance suite for store.Store
// implementations. Every store in this module runs it, and third-party
// stores can prove themselves with it:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(tb testing.TB) store.Store { return newClient(t) })
//	}
//
// newStore must return a new client of one shared backend on every call
// (a new connection, not a new empty database), so that the suite can
// check that separate clients see and serialize each other's updates.
// The suite closes the stores it gets. The optional interfaces a store
// implements (store.HistoryStore, store.Reader) are checked too; their
// tests skip for a store without them. Room names are random, so runs
// sharing a backend never collide.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
)

// Goroutines and Clients size the concurrency test: Goroutines goroutines
// spread over Clients separate store clients update one room.
const (
	Goroutines = 64
	Clients    = 8
)

// Run runs the whole conformance suite as subtests of t.
func Run(t *testing.T, newStore func(tb testing.TB) store.Store) {
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, newStore) })
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, newStore) })
	t.Run("FnError", func(t *testing.T) { testFnError(t, newStore) })
	t.Run("Isolation", func(t *testing.T) { testIsolation(t, newStore) })
	t.Run("SharedBetweenClients", func(t *testing.T) { testShared(t, newStore) })
	t.Run("ConcurrentNoLostUpdate", func(t *testing.T) { testConcurrent(t, newStore) })
	t.Run("Canceled", func(t *testing.T) { testCanceled(t, newStore) })
	t.Run("Close", func(t *testing.T) { testClose(t, newStore) })
	t.Run("History", func(t *testing.T) { testHistory(t, newStore) })
	t.Run("Reader", func(t *testing.T) { testReader(t, newStore) })
}

// RoomName returns a random room name with the given prefix.
func RoomName(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

func open(t *testing.T, newStore func(tb testing.TB) store.Store) store.Store {
	t.Helper()
	s := newStore(t)
	require.NotNil(t, s, "newStore returned nil")
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// ctx is a test's context: its deadline bounds a store that hangs, and
// is no timer. Two minutes: on two busy cores, MariaDB's concurrent
// updates under the race detector took over 30 s.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// Sample returns a State with every field set, for round-trip tests.
func Sample() *store.State {
	return &store.State{
		Epoch:           0xdeadbeefcafe,
		Version:         42,
		Clock:           1_790_000_000_123,
		Grace:           1_790_000_003_000,
		Settings:        []byte(`{"method":"fifo"}`),
		SettingsVersion: 3,
		ConfigHash:      1 << 63,
		Sessions: []store.Session{
			{ID: 7, Admitted: 1_790_000_000, Seen: 1_790_000_000},
			{ID: 1 << 40, Admitted: 1_789_999_700, Seen: 1_790_000_001, End: 1_790_000_000},
			{ID: 1<<64 - 1, Admitted: 1_789_999_990, Seen: 1_789_999_995, Revoked: true},
		},
		Admitted: []store.Count{{Key: 29_833_333, N: 200}},
		Waiting: []store.Cell{
			{Bucket: 29_833_330, Slot: 179_000_000, N: 12},
			{Bucket: 29_833_330, Slot: 179_000_003, N: 1},
			{Bucket: 29_833_332, Slot: 179_000_001, N: 1000},
		},
		Instances: []store.Instance{
			{ID: "a1", Traffic: 12.5, Grant: 9, Seen: 1_790_000_000_123, Seq: 77},
			{ID: "b2", Traffic: 0, Grant: 0, Seen: 1_790_000_000_456},
		},
		Recorded: 29_833_332,
		Tallies: []store.Tally{{
			Minute: 29_833_333, Active: 40, Waiting: 1013, Abandoned: 3,
			TotalActiveUsers: 100, NewUsersPerMinute: 200, Event: "launch",
			Waits: []store.Count{{Key: 0, N: 5}, {Key: 70, N: 9}}, MaxWait: 72,
			Sessions: []store.Count{{Key: 600, N: 1}}, MaxSession: 611,
		}},
		Lease:   &store.Lease{Holder: "a1", Term: 40, Renewed: 1_790_000_000_100, Fleet: 2},
		Picks:   []store.Pick{{Visitor: 1 << 63, Bucket: 29_833_330, From: 1_790_000_003_000, Until: 1_790_000_004_000}, {Visitor: 3, Bucket: 29_833_331, From: -2, Until: 1_790_000_005_000}},
		Asks:    []store.Ask{{Visitor: 4, Bucket: 29_833_331, At: 1_790_000_006_000}},
		Reserve: &store.Reserve{Slots: 4, Upto: 29_833_330, Set: 1_790_000_000_100},
		Mailbox: &store.Mailbox{
			Term: 40, Seq: 9, Seen: 1_790_000_000_050, Prev: 1_790_000_000_000, Held: 3, Acked: 7,
			Batches: []store.Batch{
				{Seq: 8, Attempts: 12, Sessions: []store.Session{{ID: 5, Admitted: 1_790_000_000, Seen: 1_790_000_000}},
					Waiting: []store.Cell{{Bucket: 29_833_330, Slot: 179_000_000, N: -1}},
					Waits:   []store.Count{{Key: -5, N: 61_000}}, Asks: []store.Ask{{Visitor: 9, Bucket: 29_833_330, At: 1_790_000_010_000}}},
				{Seq: 9},
			},
			Grant:   []store.Count{{Key: 29_833_330, N: 2}, {Key: 1<<63 - 1, N: 5}},
			Version: 41, Base: 8, Epoch: 0xdeadbeefcafe, Fair: 2, Scarce: true, Adopted: 39, In: 0xdeadbeefcafe,
			Back: true, Had: 3, Upto: 7, Left: true,
		},
		Seeds: []store.Seed{
			{Start: 1_789_996_400, End: 1_790_000_000, Secret: [32]byte{1, 2, 3}},
			{Start: 1_790_000_000, End: 1_790_003_600, Secret: [32]byte{31: 0xff}, Interval: 20_000,
				Odds: []store.Odds{{Interval: 89_500_000, Odds: 0.25}, {Interval: 89_500_001, Odds: 1}, {Interval: 89_500_003, Odds: 1.0 / 3}},
				Cuts: []store.Odds{{Interval: 89_500_001, Odds: 0.125}, {Interval: 89_500_002, Odds: 0.5}}, Prequeued: 1_234},
		},
	}
}

func testNotFound(t *testing.T, newStore func(tb testing.TB) store.Store) {
	s := open(t, newStore)
	var got store.State
	err := s.Update(ctx(t), RoomName("notfound"), func(st *store.State) error {
		got = *st
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, store.State{}, got, "a room without state must be presented as the zero State")
}

func testRoundTrip(t *testing.T, newStore func(tb testing.TB) store.Store) {
	s := open(t, newStore)
	room := RoomName("roundtrip")
	want := Sample()
	require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error {
		*st = *Sample()
		return nil
	}))
	var got *store.State
	require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error {
		c := *st
		got = &c
		return nil
	}))
	assert.Equal(t, want, got)

	// A shuffle's list of 100,000 places, a state of its own (about
	// 700 kB encoded).
	list := &store.State{Epoch: 1, Version: 1, Places: make([]uint64, 100_000)}
	for i := range list.Places {
		list.Places[i] = uint64(i)*(1<<53/100_000) + uint64(i*i%7919)
	}
	require.NoError(t, s.Update(ctx(t), room+"#places:1", func(st *store.State) error {
		*st = *list
		return nil
	}))
	require.NoError(t, s.Update(ctx(t), room+"#places:1", func(st *store.State) error {
		c := *st
		got = &c
		return nil
	}))
	assert.Equal(t, list, got)
}

func testFnError(t *testing.T, newStore func(tb testing.TB) store.Store) {
	s := open(t, newStore)
	room := RoomName("fnerror")
	errBoom := errors.New("boom")
	err := s.Update(ctx(t), room, func(st *store.State) error {
		st.Epoch = 7
		return errBoom
	})
	assert.ErrorIs(t, err, errBoom, "fn's error must be returned")
	require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error {
		assert.Zero(t, st.Epoch, "a failed fn must write nothing")
		return nil
	}))
}

func testIsolation(t *testing.T, newStore func(tb testing.TB) store.Store) {
	s := open(t, newStore)
	rooms := []string{RoomName("iso-a"), RoomName("iso-b"), RoomName("iso") + ":x/y z\u00e9"}
	for i, room := range rooms {
		require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error {
			st.Epoch = uint64(i + 1)
			return nil
		}))
	}
	for i, room := range rooms {
		require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error {
			assert.Equal(t, uint64(i+1), st.Epoch, "room %q", room)
			return nil
		}))
	}
}

func testShared(t *testing.T, newStore func(tb testing.TB) store.Store) {
	a, b := open(t, newStore), open(t, newStore)
	room := RoomName("shared")
	require.NoError(t, a.Update(ctx(t), room, func(st *store.State) error {
		st.Epoch = 99
		return nil
	}))
	require.NoError(t, b.Update(ctx(t), room, func(st *store.State) error {
		assert.Equal(t, uint64(99), st.Epoch, "a second client must see the first client's write")
		return nil
	}))
}

func testConcurrent(t *testing.T, newStore func(tb testing.TB) store.Store) {
	const perGoroutine = 10
	clients := make([]store.Store, Clients)
	for i := range clients {
		clients[i] = open(t, newStore)
	}
	room := RoomName("concurrent")
	c := ctx(t)
	var wg sync.WaitGroup
	errs := make(chan error, Goroutines)
	for g := range Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := clients[g%Clients]
			for range perGoroutine {
				err := s.Update(c, room, func(st *store.State) error {
					st.Version++
					if len(st.Admitted) == 0 {
						st.Admitted = []store.Count{{Key: 1}}
					}
					st.Admitted[0].N++
					st.Instances = append(st.Instances, store.Instance{ID: fmt.Sprint(g)})
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	const total = Goroutines * perGoroutine
	require.NoError(t, clients[0].Update(c, room, func(st *store.State) error {
		assert.Equal(t, uint64(total), st.Version, "lost updates")
		require.Len(t, st.Admitted, 1)
		assert.Equal(t, int64(total), st.Admitted[0].N, "lost updates")
		assert.Len(t, st.Instances, total, "lost updates")
		return nil
	}))
}

func testCanceled(t *testing.T, newStore func(tb testing.TB) store.Store) {
	s := open(t, newStore)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := s.Update(c, RoomName("canceled"), func(st *store.State) error {
		called = true
		return nil
	})
	if err == nil {
		// A store may complete an update that was already on its way; it
		// must then have run fn.
		assert.True(t, called)
		return
	}
	assert.ErrorIs(t, err, context.Canceled)
}

func testClose(t *testing.T, newStore func(tb testing.TB) store.Store) {
	s := newStore(t)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close must be idempotent")
	err := s.Update(context.Background(), RoomName("closed"), func(*store.State) error { return nil })
	assert.ErrorIs(t, err, store.ErrClosed)
}

// Benchmark measures Update of one room whose state holds a queue of 60 and
// of 1,440 minute buckets (an hour and a day of queue), each with waiting
// visitors spread over several check-in slots, plus a session's worth of
// active and admission counters and four instances.
func Benchmark(b *testing.B, newStore func(tb testing.TB) store.Store) {
	for _, buckets := range []int{60, 1440} {
		b.Run(fmt.Sprintf("buckets=%d", buckets), func(b *testing.B) {
			s := newStore(b)
			b.Cleanup(func() { _ = s.Close() })
			room := RoomName("bench")
			c := context.Background()
			big := LargeState(buckets)
			require.NoError(b, s.Update(c, room, func(st *store.State) error { *st = *big; return nil }))
			b.SetBytes(int64(len(store.MarshalState(big))))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := s.Update(c, room, func(st *store.State) error {
					st.Version++
					st.Admitted[len(st.Admitted)-1].N++
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// LargeState returns a realistic state with the given number of queue
// buckets, six check-in slots each, 10,000 sessions (a busy room with the
// default session), 30 minutes of admissions and four instances.
func LargeState(buckets int) *store.State {
	const now = int64(1_790_000_000)
	s := &store.State{Epoch: 1, Version: 1, Clock: now * 1000, Settings: []byte(`{"method":"fifo","totalActiveUsers":10000,"newUsersPerMinute":2000}`)}
	for i := range 10_000 {
		// IDs spread evenly over the 64-bit space, as random ones are.
		id := uint64(i)*(1<<64/10_000) + 12345
		s.Sessions = append(s.Sessions, store.Session{ID: id, Admitted: now - 300 + int64(i%300), Seen: now - int64(i%60)})
	}
	for i := range 30 {
		s.Admitted = append(s.Admitted, store.Count{Key: now/60 - 30 + int64(i), N: 2000})
	}
	for bk := range buckets {
		for sl := range 6 {
			s.Waiting = append(s.Waiting, store.Cell{Bucket: now/60 - int64(buckets-bk), Slot: now/10 - 6 + int64(sl), N: 150})
		}
	}
	for i := range 4 {
		s.Instances = append(s.Instances, store.Instance{ID: fmt.Sprintf("instance-%d", i), Traffic: 120.5, Grant: 30, Seen: now * 1000})
	}
	return s
}

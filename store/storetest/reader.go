package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
)

// testReader checks store.Reader, for stores that implement it: a read
// returns a whole state that a committed Update wrote, sees every Update
// that returned before it began, never an Update that failed or is still
// running, does not wait for one, and hands the caller a copy.
func testReader(t *testing.T, newStore func(tb testing.TB) store.Store) {
	if _, ok := open(t, newStore).(store.Reader); !ok {
		t.Skip("the store has no read without a lock (store.Reader)")
	}
	for _, c := range []struct {
		name string
		test func(*testing.T, func(tb testing.TB) store.Store)
	}{
		{"NotFound", testReadNotFound},
		{"RoundTrip", testReadRoundTrip},
		{"CallerOwnsTheState", testReadOwned},
		{"FailedUpdateInvisible", testReadFailedUpdate},
		{"Removed", testReadRemoved},
		{"DoesNotWaitForUpdate", testReadNoWait},
		{"ConcurrentWholeAndFresh", testReadConcurrent},
		{"Canceled", testReadCanceled},
		{"Close", testReadClosed},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, newStore) })
	}
}

// openReader opens a client of newStore, as a Store and as its Reader.
func openReader(t *testing.T, newStore func(tb testing.TB) store.Store) (store.Store, store.Reader) {
	s := open(t, newStore)
	return s, s.(store.Reader)
}

// testReadNotFound: a room without state reads as the zero State, and the
// read creates nothing.
func testReadNotFound(t *testing.T, newStore func(tb testing.TB) store.Store) {
	s, r := openReader(t, newStore)
	room := RoomName("read-notfound")
	got, err := r.Read(ctx(t), room)
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, store.State{}, *got, "a room without state must be read as the zero State")
	require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error {
		assert.Equal(t, store.State{}, *st, "a read must create nothing")
		return nil
	}))
}

// testReadRoundTrip: another client reads what an Update wrote.
func testReadRoundTrip(t *testing.T, newStore func(tb testing.TB) store.Store) {
	w, _ := openReader(t, newStore)
	_, r := openReader(t, newStore)
	for name, want := range map[string]*store.State{"sample": Sample(), "day of queue": LargeState(1440)} {
		room := RoomName("read-roundtrip")
		require.NoError(t, w.Update(ctx(t), room, func(st *store.State) error {
			*st = *want
			return nil
		}))
		got, err := r.Read(ctx(t), room)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%s: another client must read what an Update wrote", name)
	}
}

// testReadOwned: the State a read returns is the caller's to change.
func testReadOwned(t *testing.T, newStore func(tb testing.TB) store.Store) {
	s, r := openReader(t, newStore)
	room := RoomName("read-owned")
	require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error {
		*st = *Sample()
		return nil
	}))
	got, err := r.Read(ctx(t), room)
	require.NoError(t, err)
	got.Epoch++
	got.Sessions[0].ID++
	got.Waiting[0].N++
	got.Instances[0].ID = "changed"
	got.Settings[0] = 'X'
	again, err := r.Read(ctx(t), room)
	require.NoError(t, err)
	assert.Equal(t, Sample(), again, "changing a State that Read returned must change nothing in the store")
}

// testReadFailedUpdate: an Update whose fn failed is never read.
func testReadFailedUpdate(t *testing.T, newStore func(tb testing.TB) store.Store) {
	s, r := openReader(t, newStore)
	room := RoomName("read-fnerror")
	require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error { st.Epoch = 1; return nil }))
	errBoom := errors.New("boom")
	require.ErrorIs(t, s.Update(ctx(t), room, func(st *store.State) error { st.Epoch = 2; return errBoom }), errBoom)
	got, err := r.Read(ctx(t), room)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), got.Epoch, "a failed Update must not be read")
}

// testReadRemoved: a state an Update left zero reads as the zero State,
// and the room can be written again.
func testReadRemoved(t *testing.T, newStore func(tb testing.TB) store.Store) {
	s, r := openReader(t, newStore)
	room := RoomName("read-removed")
	require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error { *st = *Sample(); return nil }))
	require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error { *st = store.State{}; return nil }))
	got, err := r.Read(ctx(t), room)
	require.NoError(t, err)
	assert.Equal(t, store.State{}, *got, "a state an Update left zero reads as the zero State")
	require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error {
		assert.Equal(t, store.State{}, *st, "and Update sees it so")
		st.Epoch = 3
		return nil
	}))
	got, err = r.Read(ctx(t), room)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), got.Epoch, "a removed room can be written again")
}

// testReadNoWait: an Update holds the room (its lock, its transaction)
// while fn runs: a read meanwhile returns the state before it, without
// waiting for it to finish.
func testReadNoWait(t *testing.T, newStore func(tb testing.TB) store.Store) {
	s, _ := openReader(t, newStore)
	_, r := openReader(t, newStore)
	room := RoomName("read-nowait")
	require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error { st.Epoch = 1; return nil }))
	inFn := make(chan struct{})
	read := make(chan struct{})
	var once sync.Once
	released := make(chan bool, 1)
	updated := make(chan error, 1)
	go func() {
		updated <- s.Update(ctx(t), room, func(st *store.State) error {
			st.Epoch = 2
			once.Do(func() { close(inFn) })
			select {
			case <-read:
				released <- true
			case <-time.After(10 * time.Second):
				released <- false
			}
			return nil
		})
	}()
	<-inFn
	got, err := r.Read(ctx(t), room)
	close(read)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), got.Epoch, "a read must not see an Update still running")
	assert.True(t, <-released, "the read waited for the Update to finish")
	require.NoError(t, <-updated)
	got, err = r.Read(ctx(t), room)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), got.Epoch, "a read sees the Update once it returned")
}

// testReadCanceled: a read with a canceled context fails with
// context.Canceled, if it fails.
func testReadCanceled(t *testing.T, newStore func(tb testing.TB) store.Store) {
	_, r := openReader(t, newStore)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Read(c, RoomName("read-canceled")); err != nil {
		assert.ErrorIs(t, err, context.Canceled)
	}
}

// testReadClosed: a read on a closed store fails with store.ErrClosed.
func testReadClosed(t *testing.T, newStore func(tb testing.TB) store.Store) {
	s := newStore(t)
	require.NoError(t, s.Close())
	_, err := s.(store.Reader).Read(context.Background(), RoomName("read-closed"))
	assert.ErrorIs(t, err, store.ErrClosed)
}

// coherent returns the state the concurrency test's writers leave at
// version v: every field derived from v, so that a state made of parts
// of two writes shows.
func coherent(v uint64) store.State {
	st := store.State{
		Epoch:    7,
		Version:  v,
		Clock:    int64(v) * 1000,
		Settings: []byte(fmt.Sprintf(`{"v":%d}`, v)),
		Admitted: []store.Count{{Key: int64(v), N: int64(v)}},
	}
	for i := range 100 + int(v%50) {
		st.Waiting = append(st.Waiting, store.Cell{Bucket: int64(i), Slot: int64(v), N: int64(v) + 1})
	}
	for i := range int(v % 7) {
		st.Instances = append(st.Instances, store.Instance{ID: fmt.Sprintf("%d-%d", v, i), Seq: v})
	}
	return st
}

// testReadConcurrent runs writers and readers on separate clients of one
// room: every read is a whole state some Update wrote, at least as new as
// every Update that returned before the read began, and a reader's reads
// never go back in time.
func testReadConcurrent(t *testing.T, newStore func(tb testing.TB) store.Store) {
	const (
		writers    = 4
		perWriter  = 25
		readers    = 4
		minReads   = 20
		readerWait = 20 * time.Second
	)
	race := &readRace{
		ctx:  ctx(t),
		room: RoomName("read-concurrent"),
		errs: make(chan error, writers+readers),
		stop: make(chan struct{}),
	}
	var wg sync.WaitGroup
	for range writers {
		s := open(t, newStore)
		wg.Go(func() { race.write(s, perWriter) })
	}
	var rg sync.WaitGroup
	for range readers {
		r := open(t, newStore).(store.Reader)
		rg.Go(func() { race.read(r, minReads, readerWait) })
	}
	wg.Wait()
	close(race.stop)
	rg.Wait()
	close(race.errs)
	for err := range race.errs {
		require.NoError(t, err)
	}
	assert.Equal(t, uint64(writers*perWriter), race.returned.Load(), "lost updates")
}

// readRace is what testReadConcurrent's writers and readers share.
type readRace struct {
	ctx      context.Context
	room     string
	returned atomic.Uint64 // the newest version whose Update returned
	errs     chan error    // the first error of each writer and reader
	stop     chan struct{} // closed once every writer is done
}

// write makes n Updates, each writing the coherent state of the next
// version, and raises returned to each version once its Update returned.
func (rr *readRace) write(s store.Store, n int) {
	for range n {
		var v uint64
		if err := s.Update(rr.ctx, rr.room, func(st *store.State) error {
			v = st.Version + 1
			*st = coherent(v)
			return nil
		}); err != nil {
			rr.errs <- err
			return
		}
		for {
			old := rr.returned.Load()
			if v <= old || rr.returned.CompareAndSwap(old, v) {
				break
			}
		}
	}
}

// read reads the room until the writers are done and it has read at least
// minReads times, or until wait has passed, and checks every read.
func (rr *readRace) read(r store.Reader, minReads int, wait time.Duration) {
	var last uint64
	deadline := time.After(wait)
	for n := 0; ; n++ {
		select {
		case <-rr.stop:
			if n >= minReads {
				return
			}
		case <-deadline:
			return
		default:
		}
		floor := rr.returned.Load()
		st, err := r.Read(rr.ctx, rr.room)
		if err == nil {
			err = checkRead(st, floor, last)
		}
		if err != nil {
			rr.errs <- err
			return
		}
		if st.Version != 0 {
			last = st.Version
		}
	}
}

// checkRead checks a state read after an Update of version floor returned,
// by a reader whose previous read was of version last: it is no state only
// while nothing was written, else a whole state of a version no older than
// floor and last.
func checkRead(st *store.State, floor, last uint64) error {
	if st.Version == 0 {
		if floor != 0 {
			return fmt.Errorf("read no state after version %d was written", floor)
		}
		return nil
	}
	if want := coherent(st.Version); !assert.ObjectsAreEqual(want, *st) {
		return fmt.Errorf("read a state no Update wrote (torn?) at version %d", st.Version)
	}
	if st.Version < floor {
		return fmt.Errorf("read version %d after an Update of version %d returned", st.Version, floor)
	}
	if st.Version < last {
		return fmt.Errorf("read version %d after version %d", st.Version, last)
	}
	return nil
}

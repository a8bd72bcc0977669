package faults

import (
	"context"
	"errors"
	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
)

// The tests in this file pin down defects the scenarios once ran into,
// each with the smallest setup that shows it, so that they stay fixed.

// knownDefect fails the test: a defect this file pins down is back.
func knownDefect(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("defect back: "+format, args...)
}

// vclock is the tests' virtual clock.
type vclock = testclock.Clock

// newVClock returns a clock at the given second of a minute.
func newVClock(second int) *vclock {
	return testclock.New(testclock.Start.Add(time.Duration(second) * time.Second))
}

// manualRoom returns a room on clk that syncs only when told.
func manualRoom(t *testing.T, st store.Store, clk *vclock, name string) *waitingroom.Room {
	rm, err := waitingroom.New(waitingroom.Config{
		Name: name,
		Settings: waitingroom.Settings{
			TotalActiveUsers:  10,
			NewUsersPerMinute: 10,
		},
		Keys:         [][]byte{key},
		SyncInterval: -1,
		Now:          clk.Now,
		Logger:       slog.New(slog.DiscardHandler),
	}, st)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	return rm
}

// newcomers sends n requests without a cookie through h and returns how
// many were let in.
func newcomers(h http.Handler, n int) int {
	in := 0
	for range n {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://example.com/", nil))
		if w.Code == http.StatusOK && w.Body.String() == "app" {
			in++
		}
	}
	return in
}

var okApp = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "app") })

// TestRedisUpdateHonoursDeadline: store.Store promises that Update honours
// ctx's deadline. Against a server that hangs (SIGSTOP), redisstore.Update
// with a client configured as the package documents (ContextTimeoutEnabled)
// returns at the deadline, so a room's sync notices the outage in time.
func TestRedisUpdateHonoursDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: waits for a hung redis-server")
	}
	srv := StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	st := redisstore.New(c, redisstore.Options{KeyPrefix: randomName("faults:") + ":"})
	noop := func(*store.State) error { return nil }
	require.NoError(t, st.Update(context.Background(), "deadline", noop))

	require.NoError(t, srv.Pause())
	t.Cleanup(func() { _ = srv.Resume() })
	const deadline = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	began := time.Now()
	err := st.Update(ctx, "deadline", noop)
	took := time.Since(began)
	require.Error(t, err, "a hung server cannot commit")
	t.Logf("Update against a hung server returned after %v (deadline %v): %v", took.Round(time.Millisecond), deadline, err)
	if took > deadline+time.Second {
		knownDefect(t, "store/redisstore Store.Update ignores ctx's deadline with a default go-redis client: it returned after %v, deadline %v (Options.ContextTimeoutEnabled is false by default, so the socket waits for ReadTimeout)", took.Round(time.Millisecond), deadline)
	}
}

// TestLostReplyCountsOnce: when the reply to redisstore's compare-and-set
// is lost (the server ran the script, the client timed out), Update
// returns an error although the write committed; Room.Sync then keeps the
// counts it had sent for the next sync, which merges them a second time.
// Admissions and active visitors are counted twice until they age out:
// the room then lets in fewer visitors than its limits allow.
func TestLostReplyCountsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: holds back a reply for 3 s")
	}
	srv := StartRedis(t)
	p := StartProxy(t, srv.Addr())
	c := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	st := redisstore.New(c, redisstore.Options{KeyPrefix: randomName("faults:") + ":"})
	clk := newVClock(10)
	rm := manualRoom(t, st, clk, "lostreply")
	h := rm.Handler(okApp)
	ctx := context.Background()
	require.NoError(t, rm.Sync(ctx)) // loads the script: the next writes are EVALSHA
	require.Equal(t, 4, newcomers(h, 4), "the room is empty: 4 newcomers get in")

	// The next compare-and-set runs on the server but its reply never
	// comes back; the sync gives up at its deadline, as the loop's does.
	stalled := p.StallReply([]byte("evalsha"), 3*time.Second)
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err := rm.Sync(syncCtx)
	cancel()
	require.Error(t, err, "the sync cannot know that its write committed")
	<-stalled
	require.NoError(t, rm.Sync(ctx))

	s := rm.Stats()
	t.Logf("after the lost reply: %d active, %d admitted this minute (4 were let in)", s.Active, s.AdmittedThisMinute)
	// After an outage nobody is let in until every instance had time to
	// bring its counts in (twice the 3 s an instance keeps its share).
	clk.Add(6 * time.Second)
	require.NoError(t, rm.Sync(ctx))
	more := newcomers(h, 10)
	if s.AdmittedThisMinute != 4 || s.Active != 4 {
		knownDefect(t, "sync.go Room.Sync re-adds the delta of a sync whose store write committed but reported an error (redisstore.Update returns the lost reply's error although the CAS ran): %d admitted this minute and %d active instead of 4 and 4; %d of 10 newcomers let in where 6 should be",
			s.AdmittedThisMinute, s.Active, more)
	}
	require.Equal(t, 6, more, "the limits leave room for 6 more")
}

// TestSharedClockDoesNotRunAhead: every instance here has the same clock,
// yet the room's shared clock runs away from it. Room.Sync reads the
// instance's clock (local) before the store's read-modify-write and adopts
// the state's Clock when it is ahead of local; when another instance's
// sync lands in between (overlapping round trips to a slow store, a
// conflict retry, a row lock), its later clock looks like skew, the offset
// grows by the overlap, is written back as the shared clock and adopted by
// the others in turn. The offset never decreases, so the lead ratchets up
// to maxClockLead (10 s): minutes, sessions and the release of New Users
// Per Minute then run that far ahead of every instance's clock. The
// scenario "redis slow" shows the same in real time (admissions stamped up
// to seconds ahead of the clock).
func TestSharedClockDoesNotRunAhead(t *testing.T) {
	clk := newVClock(0)
	mem := memstore.New()
	var (
		rooms      [2]*waitingroom.Room
		overtaking atomic.Bool
	)
	for i := range rooms {
		rooms[i] = manualRoom(t, &overtaken{Store: mem, overtake: func(ctx context.Context) {
			// 100 ms pass on the way to the store, and the other
			// instance's sync lands first.
			if overtaking.CompareAndSwap(false, true) {
				clk.Add(100 * time.Millisecond)
				_ = rooms[1-i].Sync(ctx)
				overtaking.Store(false)
			}
		}}, clk, "clock")
	}
	ctx := context.Background()
	lead := time.Duration(0)
	for range 60 {
		for _, rm := range rooms {
			require.NoError(t, rm.Sync(ctx))
			lead = max(lead, rm.Stats().Synced.Sub(clk.Now()))
		}
	}
	t.Logf("shared clock at most %v ahead of the instances' (identical) clock", lead)
	if lead > time.Second {
		knownDefect(t, "sync.go Room.Sync adopts st.Clock as an offset when another instance's write lands between reading the local clock and the store's read; the offset only grows: the shared clock ran %v ahead of identical instance clocks after 120 syncs of 100 ms round trips", lead)
	}
}

// overtaken is a store whose every Update first calls overtake: another
// instance's sync lands between the caller's reading of its clock and its
// read of the state.
type overtaken struct {
	store.Store
	overtake func(context.Context)
}

func (s *overtaken) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	s.overtake(ctx)
	return s.Store.Update(ctx, room, fn)
}

// TestRebuildWaitsForEveryInstance: after the shared state is lost, the
// instance that recreates it sets Grace (instanceTTL, max(3×SyncInterval,
// 3 s)) for every other instance to contribute its counts again. But an
// instance whose syncs failed during the outage retries with a backoff of
// up to 10×SyncInterval (loop in sync.go): with the default SyncInterval
// of 1 s, it comes back up to 11 s later. The instances that came back
// first then carve grants from a state that lacks its active visitors and
// admissions, and the room lets in more than TotalActiveUsers. Here Redis
// is killed and restarted empty right after one instance's third failed
// sync (its next try is 8 s away), while the others retry sooner.
func TestRebuildWaitsForEveryInstance(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: about 25 s against a redis-server")
	}
	const limit = 12
	srv := StartRedis(t)
	start := time.Now().Add(500 * time.Millisecond)
	// t = 0 is :55 of a minute on the rooms' clock: the first visitors get
	// the whole minute's slots at once; the outage runs into the next
	// minute, whose slots are released over it.
	shift := 55*time.Second - time.Duration(start.UnixNano()%int64(time.Minute))
	if shift < 0 {
		shift += time.Minute
	}
	r := &run{shift: shift, clock: func() time.Time { return time.Now().Add(shift) }}
	r.t0 = start.Add(shift)
	r.canary = startCanary(t)
	prefix := randomName("faults:") + ":"
	name := randomName("rebuild-")
	handlers := make([]http.Handler, nRooms)
	for i := range nRooms {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: 10 * time.Millisecond})
		t.Cleanup(func() { _ = c.Close() })
		rm, err := waitingroom.New(waitingroom.Config{
			Name: name, Settings: waitingroom.Settings{TotalActiveUsers: limit, NewUsersPerMinute: limit, SessionDuration: time.Minute},
			RefreshInterval: refresh, Keys: [][]byte{key},
			Now: r.clock, Logger: slog.New(slog.DiscardHandler), // SyncInterval: the default, 1 s
		}, redisstore.New(c, redisstore.Options{KeyPrefix: prefix}))
		require.NoError(t, err)
		t.Cleanup(func() { _ = rm.Close() })
		r.rooms = append(r.rooms, rm)
		handlers[i] = rm.Handler(r.app())
	}
	time.Sleep(time.Until(start))
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 3 * limit {
		v := &visitor{id: i, wave: 1 + i/limit, stay: true}
		r.visitors = append(r.visitors, v)
		arrive := time.Duration(i/limit) * 1500 * time.Millisecond
		wg.Go(func() {
			if sleepUntil(ctx, start.Add(arrive)) {
				r.browse(ctx, v, handlers, mrand.New(mrand.NewPCG(uint64(i), 3)))
			}
		})
	}

	// The room fills up, then Redis dies; it comes back, empty, as soon as
	// one instance has failed three syncs in a row.
	time.Sleep(time.Until(start.Add(4 * time.Second)))
	r.faultAt = r.clock()
	srv.Kill()
	late := -1
	for late < 0 && ctx.Err() == nil {
		for i, rm := range r.rooms {
			if rm.Stats().Counters.SyncErrors >= 3 {
				late = i
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, srv.Start())
	r.healedAt = r.clock()
	errs := r.rooms[late].Stats().Counters.SyncErrors
	for r.rooms[late].Stats().Counters.SyncErrors == errs && r.rooms[late].Stats().Synced.Before(r.healedAt) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	back := r.clock()
	time.Sleep(2 * time.Second)
	cancel()
	wg.Wait()

	peak, peakAt := r.peakActive()
	pm := r.perMinute()
	worst := 0
	for _, n := range pm {
		worst = max(worst, n)
	}
	t.Logf("Redis back at %s; instance %d (3 failed syncs) synced again at %s; peak active %d at %s, most admissions in a minute %d (limits %d)",
		r.rel(r.healedAt), late+1, r.rel(back), peak, r.rel(peakAt), worst, limit)
	if peak > limit || worst > limit {
		knownDefect(t, "sync.go: Grace after a state loss (instanceTTL, 3 s) is shorter than the loop's retry backoff (up to 10×SyncInterval = 10 s by default): instance %d came back %v after Redis, and meanwhile the others let in visitors without its counts: peak active %d, %d admissions in a minute (limits %d)",
			late+1, back.Sub(r.healedAt).Round(time.Millisecond), peak, worst, limit)
	}
}

// flaky is a store that fails while down is set.
type flaky struct {
	store.Store
	down atomic.Bool
}

func (f *flaky) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	if f.down.Load() {
		return errors.New("connection refused")
	}
	return f.Store.Update(ctx, room, fn)
}

// TestFIFOAfterOutage: a visitor who kept refreshing through an outage
// must not be overtaken by one who arrives after it. But waiting visitors
// count (and hold FIFO reservations) only for about two refresh intervals
// after the check-in the state last heard of; their check-ins during the
// outage wait in the pending counts of the instances they reached. The
// first instance back finds the queue empty (applySync in slots.go drops
// the stale cells; carve then gives every free slot to the anyBucket entry)
// and lets a fresh arrival in ahead of them. The PostgreSQL restart
// scenario runs into the same: visitors of the next minute let in before
// visitors of the previous one who were still refreshing.
func TestFIFOAfterOutage(t *testing.T) {
	clk := newVClock(50)
	st := &flaky{Store: memstore.New()}
	mk := func() *waitingroom.Room {
		rm, err := waitingroom.New(waitingroom.Config{
			Name: "fifo", Settings: waitingroom.Settings{TotalActiveUsers: 10, NewUsersPerMinute: 1}, RefreshInterval: time.Second, RefreshJitter: -1,
			Keys: [][]byte{key}, SyncInterval: -1, Now: clk.Now, Logger: slog.New(slog.DiscardHandler),
		}, st)
		require.NoError(t, err)
		t.Cleanup(func() { _ = rm.Close() })
		return rm
	}
	a, b := mk(), mk()
	ha, hb := a.Handler(okApp), b.Handler(okApp)
	ctx := context.Background()
	syncAll := func() {
		require.NoError(t, a.Sync(ctx))
		require.NoError(t, b.Sync(ctx))
	}
	syncAll()
	syncAll()
	require.Equal(t, 1, newcomers(ha, 1), "the minute's one slot")

	// The waiting visitor arrives at :52 and refreshes at instance B every
	// second, through an outage from :53 to :05 of the next minute.
	var cookie string
	visit := func(h http.Handler) bool {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		h.ServeHTTP(w, req)
		for _, c := range w.Result().Cookies() {
			cookie = c.Name + "=" + c.Value
		}
		return w.Body.String() == "app"
	}
	clk.Add(2 * time.Second)
	syncAll()
	require.False(t, visit(hb), "the minute is full: the visitor waits")
	clk.Add(time.Second)
	syncAll()
	st.down.Store(true)
	for range 12 {
		clk.Add(time.Second)
		require.False(t, visit(hb))
		require.Error(t, a.Sync(ctx))
		require.Error(t, b.Sync(ctx))
	}
	// :05: the store is back; instance A syncs first, B retries later.
	st.down.Store(false)
	require.NoError(t, a.Sync(ctx))
	fresh := newcomers(ha, 1)
	clk.Add(time.Second)
	require.NoError(t, b.Sync(ctx))
	waited := visit(hb)
	t.Logf("after the outage: the fresh arrival let in: %v; the visitor waiting since :52 let in: %v", fresh == 1, waited)
	if fresh == 1 && !waited {
		knownDefect(t, "slots.go applySync/carve: the first instance back after an outage does not see the waiting visitors whose check-ins the other instances hold, and gives the next minute's slot to a fresh arrival ahead of a visitor of the previous minute who kept refreshing")
	}
	require.Zero(t, fresh, "a fresh arrival waits behind the visitor who kept refreshing")
}

package waitingroom_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// This file holds one focused test per attack on the accounting of
// visitors: a cookie copied, replayed, raced or shared must count as one
// visitor, with one place, at most one admission and one session. Each
// test is small and deterministic. Most state what the room did before
// visitors carried an identity (a465f96, when cookies were counted rather
// than the visitors they stand for), measured with these very tests; the
// last three are about the accounting by identity itself.
//
// The tests use nothing but the public behaviour (responses, Stats,
// Counters) and the test helpers, so that they also build against rooms
// without Ticket.ID.

// atkCluster is n instances of a room on one store, on a virtual clock,
// each in front of an application that answers "app" and revokes the
// session when the request asks it to (header X-Revoke: "header" for the
// command header, "func" for Revoke).
type atkCluster struct {
	t     *testing.T
	clk   *clock
	rooms []*waitingroom.Room
	hs    []http.Handler
	// beforeRevoke, when set, runs in the application before it
	// revokes.
	beforeRevoke func()
}

// The first instance lets in the first initial visitors before the others
// join, so that every one of them gets in (an instance admits only its
// share of the free places), and they are returned.
func newAtkCluster(t *testing.T, n int, mutate func(*waitingroom.Config), initial int) (*atkCluster, []*visitor) {
	t.Helper()
	clk := newClock()
	st := memstore.New()
	a := &atkCluster{t: t, clk: clk}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Revoke") != "" && a.beforeRevoke != nil {
			a.beforeRevoke()
		}
		switch r.Header.Get("X-Revoke") {
		case "header":
			w.Header().Set(waitingroom.CommandHeader, "revoke")
		case "func":
			if !waitingroom.Revoke(w) {
				panic("Revoke refused")
			}
		}
		_, _ = io.WriteString(w, "app")
	})
	add := func() {
		rm := newTestRoomOn(t, clk, st, mutate).Room
		a.rooms = append(a.rooms, rm)
		a.hs = append(a.hs, rm.Handler(app))
	}
	add()
	vs := make([]*visitor, initial)
	for i := range vs {
		vs[i] = &visitor{}
		require.True(t, admitted(a.get(0, vs[i])), "initial visitor %d", i)
	}
	for len(a.rooms) < n {
		add()
	}
	// Each instance syncs once more now that all have joined: a new
	// instance gets its share at the others' next sync.
	a.sync()
	return a, vs
}

// send sends a request carrying cookie ("name=value" or "") to instance i
// and returns the response; revoke is the X-Revoke header ("" for none).
func (a *atkCluster) send(i int, cookie, revoke string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	if cookie != "" {
		r.Header.Set("Cookie", cookie)
	}
	if revoke != "" {
		r.Header.Set("X-Revoke", revoke)
	}
	w := httptest.NewRecorder()
	a.hs[i].ServeHTTP(w, r)
	return w
}

// get is send for a visitor that keeps the newest cookie, as a browser
// does (a cleared cookie is dropped).
func (a *atkCluster) get(i int, v *visitor) *httptest.ResponseRecorder {
	w := a.send(i, v.cookie, "")
	keepCookie(v, w)
	return w
}

func keepCookie(v *visitor, w *httptest.ResponseRecorder) {
	for _, c := range w.Result().Cookies() {
		if c.MaxAge < 0 {
			v.cookie = ""
		} else {
			v.cookie = c.Name + "=" + c.Value
		}
	}
}

// sync syncs every instance once, in order.
func (a *atkCluster) sync() {
	a.t.Helper()
	for _, rm := range a.rooms {
		require.NoError(a.t, rm.Sync(context.Background()))
	}
}

// advance moves the clock by d in one-second steps, syncing every
// instance at every step, as the background loop would.
func (a *atkCluster) advance(d time.Duration) {
	a.t.Helper()
	for d > 0 {
		step := min(d, time.Second)
		a.clk.Add(step)
		a.sync()
		d -= step
	}
}

func (a *atkCluster) admitted() uint64 {
	var n uint64
	for _, rm := range a.rooms {
		n += rm.Stats().Counters.Admitted
	}
	return n
}

// admittedInState is the number of admissions the shared state recorded,
// as of the latest sync of instance 0.
func (a *atkCluster) admittedInState() int {
	n := 0
	for _, m := range a.rooms[0].Stats().AdmittedByMinute {
		n += m.Admitted
	}
	return n
}

// Attack: one visitor's requests counted as many active visitors. Parallel
// requests of one browser that all carry a cookie due for re-issue, one
// admitted cookie shared by many clients, one cookie replayed over and
// over: each request used to move the visitor's count to the second of
// the re-issue, but the count it left behind was taken only once, so once
// the old second stopped counting, five browsers loading six resources
// each at the re-issue point read as 30 active (limit 20), one cookie
// shared by 200 clients as 201 (limit 5, and the room shut to everyone
// else), and 300 replays of one cookie as 305 with 5 visitors. Each is one
// visitor, counted once, and the room keeps its free places.
func TestAttackActiveCountedOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		total     int
		visitors  int // admitted at the start; they browse every minute
		parallel  int // each visitor's requests at the re-issue point, at once
		copies    int // clients that get a copy of visitor 0's cookie and use it
		replays   int // replays of visitor 0's cookie at the re-issue point
		instances int
	}{
		{"five browsers, six parallel requests each", 20, 5, 6, 0, 0, 1},
		{"five browsers, six parallel requests each, four instances", 20, 5, 6, 0, 0, 4},
		{"one admitted cookie shared by 200 clients", 5, 1, 1, 200, 0, 1},
		{"one admitted cookie shared by 200 clients, four instances", 5, 1, 1, 200, 0, 4},
		{"300 sequential replays of one cookie", 5, 5, 1, 0, 300, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, browsers := newAtkCluster(t, tc.instances, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = tc.total, tc.total
			}, tc.visitors)
			n := len(a.rooms)
			// Copies and replays are of visitor 0's cookie as admitted.
			orig := browsers[0].cookie
			// The re-issue point: a minute after admission (a fifth of
			// the five-minute session).
			a.advance(time.Minute)
			for i, b := range browsers {
				var (
					wg sync.WaitGroup
					mu sync.Mutex
				)
				sent := b.cookie
				for k := range tc.parallel {
					wg.Add(1)
					go func() {
						defer wg.Done()
						w := a.send((i+k)%n, sent, "")
						mu.Lock()
						defer mu.Unlock()
						assert.True(t, admitted(w))
						keepCookie(b, w) // in arrival order
					}()
				}
				wg.Wait()
			}
			copies := make([]*visitor, tc.copies)
			for i := range copies {
				copies[i] = &visitor{cookie: orig}
				require.True(t, admitted(a.get(i%n, copies[i])))
			}
			for k := range tc.replays {
				require.True(t, admitted(a.send(k%n, orig, "")))
				a.clk.Add(100 * time.Millisecond)
			}
			a.sync()
			// Everyone keeps browsing, a request a minute, past the end
			// of the session the first requests opened.
			for m := range 4 {
				a.advance(time.Minute)
				for i, b := range browsers {
					require.True(t, admitted(a.get((i+m)%n, b)))
				}
				for i, c := range copies {
					require.True(t, admitted(a.get((i+m)%n, c)))
				}
			}
			a.advance(30 * time.Second)
			a.sync()
			for i, rm := range a.rooms {
				assert.Equal(t, tc.visitors, rm.Stats().Active, "instance %d: active visitors", i)
			}
			if n > 1 {
				return // an instance admits only its share of the free places
			}
			// The free places are there: a newcomer gets one, while
			// there is one.
			in := 0
			for range tc.total {
				if admitted(a.get(0, &visitor{})) {
					in++
				}
			}
			assert.Equal(t, tc.total-tc.visitors, in, "newcomers let in")
		})
	}
}

// Attack: jumping the queue with copies of a waiting cookie. A client
// that resends the first waiting cookie it got, or a hundred clients
// holding copies of one early cookie, used to get a chance with every
// copy and every resend once its refresh interval had passed, and an
// admission with each: one client resending its cookie every 200 ms took
// all 18 admissions of 4.5 minutes while 20 later, polite visitors got
// none; 100 clones of one early cookie took all 12 of the next three
// minutes. A place yields one admission, whatever number of copies ask:
// the rest go to the polite visitors.
func TestAttackQueueJumpingFIFO(t *testing.T) {
	for _, tc := range []struct {
		name      string
		clones    int // 0: one client resending its first cookie every 200 ms
		duration  time.Duration
		instances int
		politeMin int // polite visitors let in, at least
	}{
		{"a client resends its first waiting cookie every 200 ms", 0, 4*time.Minute + 30*time.Second, 1, 14},
		{"100 clones of one early cookie", 100, 4 * time.Minute, 1, 12},
		{"100 clones of one early cookie, four instances", 100, 4 * time.Minute, 4, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The first minute's five admissions.
			a, _ := newAtkCluster(t, tc.instances, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 50, 5
				c.RefreshJitter = -1
			}, 5)
			n := len(a.rooms)
			start := a.clk.Now()
			a.clk.Add(1100 * time.Millisecond)
			origin := &visitor{}
			require.True(t, isWaiting(a.get(0, origin)), "the early visitor waits")
			// The replayer resends origin's cookie as it is; clones each
			// start from a copy and keep what the room gives them.
			clones := make([]*visitor, tc.clones)
			cloneNext := make([]time.Time, tc.clones)
			for i := range clones {
				clones[i] = &visitor{cookie: origin.cookie}
				cloneNext[i] = a.clk.Now().Add(time.Duration(1+i%20) * time.Second)
			}
			// 20 polite visitors arrive in the next minute, one a second,
			// and come back when the page says.
			polite := make([]*visitor, 20)
			politeNext := make([]time.Time, 20)
			politeIn := make([]bool, 20)
			for i := range polite {
				polite[i] = &visitor{}
				politeNext[i] = start.Add(time.Duration(61+i)*time.Second + 500*time.Millisecond)
			}
			end := start.Add(tc.duration)
			for step := 0; a.clk.Now().Before(end); step++ {
				a.clk.Add(100 * time.Millisecond)
				now := a.clk.Now()
				if now.Sub(start)%time.Second == 0 {
					a.sync()
				}
				if tc.clones == 0 && step%2 == 0 {
					a.send(step/2%n, origin.cookie, "")
				}
				for i, c := range clones {
					if !now.Before(cloneNext[i]) {
						w := a.get((i+step)%n, c)
						cloneNext[i] = now.Add(refreshAfter(w, 20*time.Second))
					}
				}
				for i, p := range polite {
					if politeIn[i] || now.Before(politeNext[i]) {
						continue
					}
					w := a.get((i+step)%n, p)
					if admitted(w) {
						politeIn[i] = true
						continue
					}
					require.True(t, isWaiting(w))
					politeNext[i] = now.Add(refreshAfter(w, 20*time.Second))
				}
			}
			a.sync()
			in := 0
			for _, ok := range politeIn {
				if ok {
					in++
				}
			}
			admissions := a.admittedInState()
			jumper := admissions - 5 - in
			t.Logf("admissions %d: polite %d, the early cookie's holders %d", admissions, in, jumper)
			assert.Equal(t, 1, jumper, "the early cookie's place yields one admission")
			assert.GreaterOrEqual(t, in, tc.politeMin, "the polite visitors get the rest")
			for _, m := range a.rooms[0].Stats().AdmittedByMinute {
				assert.LessOrEqual(t, m.Admitted, 5, "minute %v", m.Minute)
			}
			if n == 1 {
				assert.Equal(t, uint64(admissions), a.admitted(), "the instance's count of admissions")
			}
		})
	}
}

func testclockStart() time.Time { return newClock().Now() }

// refreshAfter is the wait a waiting page asks for (its Refresh header),
// or def for a page without one.
func refreshAfter(w *httptest.ResponseRecorder, def time.Duration) time.Duration {
	var secs int
	if _, err := fmt.Sscan(w.Header().Get("Refresh"), &secs); err != nil || secs <= 0 {
		return def
	}
	return time.Duration(secs) * time.Second
}

// Attack: resending a waiting cookie to win the draw. In random mode every
// waiting visitor has the same chance at each refresh; three clients
// resending their first waiting cookie every 200 ms used to get a chance
// with each resend once their interval had passed (over 1,000 in four
// minutes each): they took the slots as they came free, ahead of 30 polite
// visitors, and every resend was counted as one more waiting visitor (33
// waiting read as 763). A resend is as early as the cookie's latest
// chance: one chance per interval, one waiting visitor.
//
// The draw is a lottery: two of the three replayers are among the first
// three let in about one run in a hundred (6 in 600), all three more
// rarely. So the first three of several runs are counted: the draw puts
// 0.2 replayers a run among them (40 in 200 runs), replayers taking the
// slots as they come free would put three.
func TestAttackQueueJumpingRandom(t *testing.T) {
	const runs = 4
	var each []int
	first := 0
	for range runs {
		each = append(each, queueJumpingRandomRun(t))
		first += each[len(each)-1]
	}
	assert.LessOrEqual(t, first, 6, "replayers among the first three let in, by run: %v", each)
	t.Logf("replayers among the first three let in, by run: %v", each)
}

// queueJumpingRandomRun is one run of TestAttackQueueJumpingRandom: it
// returns how many replayers are among the first three let in.
func queueJumpingRandomRun(t *testing.T) int {
	// The first minute's three admissions.
	a, _ := newAtkCluster(t, 1, func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 50, 3
		c.QueueingMethod = waitingroom.Random
		c.RefreshJitter = -1
	}, 3)
	start := a.clk.Now()
	type client struct {
		v        *visitor
		replayer bool
		saved    string // a replayer's first cookie
		next     time.Time
		chances  int
		in       bool
	}
	var clients []*client
	// 33 arrivals, one a second from 1.5 s; the three replayers arrive at
	// 7.1, 13.1 and 17.1 s and resend every 200 ms.
	for i := range 30 {
		clients = append(clients, &client{v: &visitor{}, next: start.Add(time.Duration(i+1)*time.Second + 500*time.Millisecond)})
	}
	for _, at := range []time.Duration{7100, 13100, 17100} {
		clients = append(clients, &client{v: &visitor{}, replayer: true, next: start.Add(at * time.Millisecond)})
	}
	var order []bool // replayer or not, by admission
	maxWaiting := 0
	end := start.Add(4 * time.Minute)
	for a.clk.Now().Before(end) {
		a.clk.Add(100 * time.Millisecond)
		now := a.clk.Now()
		if now.Sub(start)%time.Second == 0 {
			a.sync()
			maxWaiting = max(maxWaiting, a.rooms[0].Stats().Waiting)
		}
		for _, c := range clients {
			if now.Before(c.next) {
				continue
			}
			var w *httptest.ResponseRecorder
			if c.replayer {
				w = a.send(0, c.saved, "")
				if c.saved == "" {
					keepCookie(c.v, w)
					c.saved = c.v.cookie
				}
				c.next = now.Add(200 * time.Millisecond)
			} else {
				if c.in {
					continue
				}
				w = a.get(0, c.v)
				c.next = now.Add(refreshAfter(w, 20*time.Second))
			}
			if len(w.Result().Cookies()) > 0 && !admitted(w) {
				c.chances++
			}
			if admitted(w) && !c.in {
				c.in = true
				order = append(order, c.replayer)
			}
		}
	}
	elapsed := end.Sub(start)
	for i, c := range clients {
		assert.LessOrEqual(t, c.chances, int(elapsed/(20*time.Second))+1, "client %d (replayer %v): one chance per refresh interval", i, c.replayer)
	}
	assert.LessOrEqual(t, maxWaiting, 33, "waiting visitors: 33 at most")
	assert.LessOrEqual(t, a.admitted(), uint64(3+9), "three minutes of admissions at most")
	first := 0
	if assert.GreaterOrEqual(t, len(order), 3, "visitors let in") {
		for _, r := range order[:3] {
			if r {
				first++
			}
		}
	}
	return first
}

// Attack: revoking one session many times at once. 50 concurrent requests
// carrying one admitted cookie, all in the application before any of them
// revokes the session, used to subtract 50 from the active count: with the
// revoked visitor's four companions still browsing, the room read 0 active
// and let five more in on top of them (limit 5). A revoke ends one
// session, once.
func TestAttackConcurrentRevokes(t *testing.T) {
	for _, instances := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d instances", instances), func(t *testing.T) {
			a, vs := newAtkCluster(t, instances, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 5, 5
			}, 5)
			n := len(a.rooms)
			a.advance(10 * time.Second)
			// The 50 requests are all in the application before any of
			// them revokes: each request, once in the application or
			// answered by the room, checks in, and the application waits
			// until all have.
			const burst = 50
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				pending = burst
				all     = make(chan struct{})
			)
			checkIn := func() {
				mu.Lock()
				defer mu.Unlock()
				if pending--; pending == 0 {
					close(all)
				}
			}
			a.beforeRevoke = func() { checkIn(); <-all }
			cookie := vs[0].cookie
			for k := range burst {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if !admitted(a.send(k%n, cookie, []string{"header", "func"}[k%2])) {
						checkIn() // turned away without reaching the application
					}
				}()
			}
			wg.Wait()
			a.beforeRevoke = nil
			// Every instance syncs twice, so that each has the others'
			// reports.
			a.advance(2 * time.Second)
			for i, rm := range a.rooms {
				assert.Equal(t, 4, rm.Stats().Active, "instance %d: the four others are active", i)
			}
			for _, v := range vs[1:] {
				require.True(t, admitted(a.get(0, v)))
			}
			// The next minute, one place is free, not five.
			a.advance(time.Minute)
			in := 0
			for i := range 5 {
				if admitted(a.get(i%n, &visitor{})) {
					in++
				}
			}
			assert.Equal(t, 1, in, "newcomers let in")
		})
	}
}

// Attack (or plain bad luck): a session ended by a visitor who never
// paused as long as SessionDuration. The cookie's check-in was renewed
// only at its re-issue (a fifth of the session), so requests at 0, 59 s
// and 5:01 with a five-minute session (0, 11 s and 61 s with one minute)
// used to send the visitor back to the queue at the third request, whose
// gap was 4:02 (50 s). Sessions are judged from the latest request, to the
// second, on the instance that served it and, from their next syncs, on
// the others.
func TestAttackSessionsEndEarly(t *testing.T) {
	for _, tc := range []struct {
		name      string
		session   time.Duration
		at        []time.Duration
		instances int
	}{
		{"five minutes: 0, 59 s, 5:01", 5 * time.Minute, []time.Duration{0, 59 * time.Second, 5*time.Minute + time.Second}, 1},
		{"one minute: 0, 11 s, 61 s", time.Minute, []time.Duration{0, 11 * time.Second, 61 * time.Second}, 1},
		{"five minutes, each request on another instance", 5 * time.Minute, []time.Duration{0, 59 * time.Second, 5*time.Minute + time.Second}, 3},
		{"one minute, each request on another instance", time.Minute, []time.Duration{0, 11 * time.Second, 61 * time.Second}, 3},
		{"one minute, gaps of 59.9 s", time.Minute, []time.Duration{0, 59900 * time.Millisecond, 119800 * time.Millisecond, 179700 * time.Millisecond}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := newAtkCluster(t, tc.instances, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 10, 10
				c.SessionDuration = tc.session
			}, 0)
			start := a.clk.Now()
			v := &visitor{}
			for i, at := range tc.at {
				a.advance(start.Add(at).Sub(a.clk.Now()))
				assert.True(t, admitted(a.get(i%len(a.rooms), v)), "request %d at %v", i, at)
			}
			// Let in, and in the same session: a visitor sent back would
			// have been let in again at once, as a new admission.
			assert.Equal(t, uint64(1), a.admitted(), "admissions")
		})
	}
}

// Attack: a capped session counted twice. With DisableSessionRenewal, a
// visitor whose session reaches its cap and who is let straight in again
// (nobody waiting) used to be counted twice for a session's length: the
// old session's count stayed until SessionDuration after its last
// check-in. One visitor read as 2 active. The capped session stops
// counting at its cap; with visitors waiting, the capped visitor queues
// behind them.
func TestAttackCappedSessionCountsOnce(t *testing.T) {
	for _, instances := range []int{1, 4} {
		t.Run(fmt.Sprintf("nobody waiting, %d instances", instances), func(t *testing.T) {
			a, _ := newAtkCluster(t, instances, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 10, 10
				c.SessionDuration = time.Minute
				c.DisableSessionRenewal = true
			}, 0)
			n := len(a.rooms)
			v := &visitor{}
			for i := range 10 { // a request every 10 s for 100 s
				require.True(t, admitted(a.get(i%n, v)), "request %d", i)
				a.advance(2 * time.Second) // every instance has every report
				for j, rm := range a.rooms {
					require.Equal(t, 1, rm.Stats().Active, "request %d, instance %d: one visitor", i, j)
				}
				a.advance(8 * time.Second)
			}
			// The cap at 60 s sent the visitor to the queue, empty, and
			// a new session began at once.
			assert.Equal(t, uint64(2), a.admitted(), "sessions")
		})
	}
	t.Run("visitors waiting", func(t *testing.T) {
		// The first minute's two admissions; the first one browses.
		a, vs := newAtkCluster(t, 1, func(c *waitingroom.Config) {
			c.TotalActiveUsers, c.NewUsersPerMinute = 10, 2
			c.SessionDuration = time.Minute
			c.DisableSessionRenewal = true
			c.RefreshJitter = -1
		}, 2)
		capped := vs[0]
		var queue []*visitor
		for range 3 {
			a.advance(time.Second)
			q := &visitor{}
			require.True(t, isWaiting(a.get(0, q)))
			queue = append(queue, q)
		}
		// Everyone comes back every 20 s: the queue as its pages say
		// until let in, the capped visitor browsing until the cap sends
		// it to the back of the queue, and then as its pages say.
		in := map[*visitor]time.Time{}
		var back, cappedIn time.Time
		for range 12 {
			a.advance(20 * time.Second)
			now := a.clk.Now()
			for _, q := range queue {
				if _, ok := in[q]; !ok && admitted(a.get(0, q)) {
					in[q] = now
				}
			}
			w := a.get(0, capped)
			switch {
			case back.IsZero() && !admitted(w):
				require.True(t, isWaiting(w), "the capped visitor queues")
				back = now
			case !back.IsZero() && cappedIn.IsZero() && admitted(w):
				cappedIn = now
			}
		}
		require.False(t, back.IsZero(), "the cap ended the session")
		assert.GreaterOrEqual(t, back.Sub(testclockStart()), time.Minute, "not before the cap")
		require.Len(t, in, 3, "the three who waited got in")
		for _, at := range in {
			assert.True(t, cappedIn.IsZero() || !cappedIn.Before(at), "the capped visitor got in before one who waited")
		}
	})
}

// Attack: a revoked cookie sent to another instance. The application ends
// a session (a one-time action); the client keeps the cookie and sends it
// through another instance, which used to let it through uncounted for
// as long as the session would have lasted: revokes were known only where
// they happened. The revoke is in the shared state now: once the revoking
// instance and then the other one have synced (the revoking one at once:
// TestAttackRevokeReachesEveryInstance) every instance treats the cookie
// as a new visitor's. Before that, the other instance still lets it pass,
// until its next sync, without counting it (the session's record stays
// revoked).
func TestAttackRevokedCookieOnOtherInstance(t *testing.T) {
	for _, revoke := range []string{"header", "func"} {
		t.Run(revoke, func(t *testing.T) {
			a, vs := newAtkCluster(t, 4, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 5, 1
			}, 1) // the minute's one admission
			v := vs[0]
			saved := v.cookie
			a.advance(5 * time.Second)
			w := a.send(0, saved, revoke)
			require.True(t, admitted(w))
			a.sync() // the revoking instance first, then the others
			for i := range a.rooms {
				w := a.send(i, saved, "")
				assert.True(t, isWaiting(w), "instance %d: the revoked cookie is a new visitor's, and the minute's admission is spent", i)
			}
			a.advance(time.Second)
			for i, rm := range a.rooms {
				assert.Zero(t, rm.Stats().Active, "instance %d", i)
			}
		})
	}
}

// Attack: one waiting cookie copied to clients behind every instance of a
// room that does not pin visitors. The copies used to be visitors of their
// own, each with the early place: they took all 16 admissions of four
// minutes, and none of 16 later polite visitors got in. The copies are one
// visitor: one admission, the place's holders let into one session, and
// the other visitors take the other slots.
func TestAttackCopiedCookieAcrossInstances(t *testing.T) {
	// The first minute's five admissions.
	a, _ := newAtkCluster(t, 4, func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 30, 5
		c.RefreshJitter = -1
	}, 5)
	start := a.clk.Now()
	a.advance(time.Second)
	origin := &visitor{}
	require.True(t, isWaiting(a.get(0, origin)))
	// 40 copies, ten behind each instance, sent every 5 s; half keep what
	// the room returns.
	type copyHolder struct {
		v    *visitor
		keep bool
		in   bool
	}
	copies := make([]*copyHolder, 40)
	for i := range copies {
		copies[i] = &copyHolder{v: &visitor{cookie: origin.cookie}, keep: i%2 == 0}
	}
	polite := make([]*visitor, 16)
	politeNext := make([]time.Time, len(polite))
	politeIn := 0
	for i := range polite {
		polite[i] = &visitor{}
		politeNext[i] = start.Add(time.Duration(61+i) * time.Second)
	}
	for s := 2; s < 5*60; s++ {
		a.clk.Set(start.Add(time.Duration(s) * time.Second))
		a.sync()
		now := a.clk.Now()
		if s%5 == 0 {
			for i, c := range copies {
				var w *httptest.ResponseRecorder
				if c.keep {
					w = a.get(i%4, c.v)
				} else {
					w = a.send(i%4, origin.cookie, "")
				}
				c.in = c.in || admitted(w)
			}
		}
		for i, p := range polite {
			if p == nil || now.Before(politeNext[i]) {
				continue
			}
			w := a.get(i%4, p)
			if admitted(w) {
				polite[i] = nil
				politeIn++
				continue
			}
			politeNext[i] = now.Add(refreshAfter(w, 20*time.Second))
		}
		for i, rm := range a.rooms {
			require.LessOrEqual(t, rm.Stats().Active, 30, "instance %d at %ds", i, s)
		}
	}
	a.sync()
	in := 0
	for _, c := range copies {
		if c.in {
			in++
		}
	}
	admissions := a.admittedInState()
	t.Logf("admissions %d (polite %d); copies let in %d of %d", admissions, politeIn, in, len(copies))
	assert.Equal(t, 5+politeIn+1, admissions, "the copies made one admission")
	assert.Equal(t, len(copies), in, "every holder of the place is in its session")
	assert.Equal(t, len(polite), politeIn, "the polite visitors all got in")
	for _, m := range a.rooms[0].Stats().AdmittedByMinute {
		assert.LessOrEqual(t, m.Admitted, 5, "minute %v", m.Minute)
	}
}

// No attack needed: an honest visitor's place counted as several waiting
// visitors. Behind a load balancer that does not pin visitors, a waiting
// visitor's refreshes reach different instances. Each instance remembers
// the slot of the latest chance it gave the visitor, and a chance it gives
// takes the visitor's count from that slot while it still counts, not
// from the slot of the visitor's latest chance (which the cookie carries):
// the count another instance added since is never taken back. One visitor
// whose refreshes alternate between two instances reads as 2 waiting for
// as long as it waits; FIFO then reserves slots for visitors who are not
// there, and the estimates grow. A visitor counts once as waiting (as it
// did in a465f96, which took the count from the cookie's check-in).
func TestAttackWaitingCountedOnceAcrossInstances(t *testing.T) {
	for _, tc := range []struct {
		name      string
		instances int
		pick      func(i int) int
	}{
		{"alternating between two instances", 2, func(i int) int { return i % 2 }},
		{"random instances of four", 4, func(i int) int { return []int{0, 2, 0, 1, 3, 1, 2, 0, 2, 3, 1, 3, 0, 1, 0, 2, 3, 2}[i] }},
		{"round robin over four instances (each instance's memory is stale by then)", 4, func(i int) int { return i % 4 }},
		{"always the same instance of four", 4, func(int) int { return 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := newAtkCluster(t, tc.instances, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
				c.RefreshInterval = 10 * time.Second
				c.RefreshJitter = -1
			}, 1) // the one admission
			a.advance(time.Second)
			v := &visitor{}
			worst := 0
			for i := range 18 { // three minutes
				require.True(t, isWaiting(a.get(tc.pick(i), v)))
				a.advance(10 * time.Second)
				for _, rm := range a.rooms {
					worst = max(worst, rm.Stats().Waiting)
				}
			}
			assert.Equal(t, 1, worst, "most waiting visitors any instance saw")
		})
	}
}

// Attack: a place's holder let into its session with the waiting cookie,
// over and over. A client that keeps resending its first waiting cookie
// (a replayer, or a copy of the cookie that is not updated) is let into
// the session its place became. Those requests must be signs of life of
// the session in the shared state: when they were noted only by the
// instance that served them (aaca848), the room stopped counting the
// visitor SessionDuration after its admission while the instance kept
// letting it in, and TotalActiveUsers was exceeded by one for every such
// client for as long as it went on. Here, with a limit of one, the
// replayer and a newcomer were both in.
func TestAttackReplayedWaitingCookieUncounted(t *testing.T) {
	for _, instances := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d instances", instances), func(t *testing.T) {
			a, _ := newAtkCluster(t, instances, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
				c.SessionDuration = time.Minute
				c.RefreshJitter = -1
			}, 1) // the minute's one admission; that visitor goes idle
			n := len(a.rooms)
			a.advance(time.Second)
			replayer := &visitor{}
			require.True(t, isWaiting(a.get(0, replayer)))
			first := replayer.cookie
			// The replayer resends its first cookie every 2 s, to one
			// instance after the other.
			var in time.Time
			for i := 0; a.clk.Now().Before(testclockStart().Add(4 * time.Minute)); i++ {
				a.advance(2 * time.Second)
				w := a.send(i%n, first, "")
				if admitted(w) && in.IsZero() {
					in = a.clk.Now()
				}
				require.True(t, in.IsZero() || admitted(w), "the replayer stays in its session")
			}
			require.False(t, in.IsZero(), "the replayer got in")
			a.advance(2 * time.Second)
			for i, rm := range a.rooms {
				assert.Equal(t, 1, rm.Stats().Active, "instance %d: the replayer is active", i)
			}
			newcomer := &visitor{}
			assert.True(t, isWaiting(a.get(0, newcomer)), "a newcomer waits: the replayer holds the one place (limit 1)")
		})
	}
}

// Attack (or plain parallel page loads): an admitted visitor's next
// requests reach other instances before the admitting instance syncs. The
// shared state counts an admission when the report that creates the
// visitor's record says "admitted"; a sign of life of the same visitor
// from another instance whose sync lands first creates the record
// without it, and the admission is then never counted. The minute's count
// falls short and the room lets in more than NewUsersPerMinute: here, 2
// in a minute with a limit of 1. A browser loading a page's resources in
// parallel behind a load balancer that does not pin visitors does this.
func TestAttackAdmissionLostToAnotherInstancesReport(t *testing.T) {
	for _, tc := range []struct {
		name   string
		second string // what reaches the other instance: a request, or a revoking one
	}{
		{"a request", ""},
		{"a revoking request", "header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := newAtkCluster(t, 2, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 10, 1
			}, 0)
			a.advance(time.Second)
			v := &visitor{}
			require.True(t, admitted(a.get(0, v)), "the minute's one admission, on instance 0")
			a.clk.Add(500 * time.Millisecond)
			w := a.send(1, v.cookie, tc.second)
			require.True(t, admitted(w), "the visitor's next request, on instance 1")
			// Instance 1's sync lands first.
			require.NoError(t, a.rooms[1].Sync(context.Background()))
			require.NoError(t, a.rooms[0].Sync(context.Background()))
			a.advance(time.Second)
			for i, rm := range a.rooms {
				assert.Equal(t, 1, rm.Stats().AdmittedThisMinute, "instance %d: admissions this minute", i)
			}
			in := 0
			for i := range 4 {
				if admitted(a.get(i%2, &visitor{})) {
					in++
				}
			}
			assert.Zero(t, in, "newcomers let in this minute, beyond its one admission")
		})
	}
}

// Attack: a revoked cookie sent to the other instances at once. The revoke
// used to reach the shared state only at the revoking instance's next
// sync, and the others at their sync after that: with three instances
// syncing every second the cookie still passed elsewhere for up to 1.73 s
// after the revoke (two SyncIntervals at worst). The revoke wakes the
// revoking instance's sync (at most a tenth of SyncInterval after the
// previous one began), so it reaches the state at once and every instance
// refuses the cookie from its next sync. On the bubble's clock the store
// answers at once: the worst case is a revoke just after the revoking
// instance's sync.
func TestAttackRevokeReachesEveryInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = time.Second
		st := memstore.New()
		var (
			rooms []*waitingroom.Room
			hs    []http.Handler
		)
		app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Revoke") != "" {
				w.Header().Set(waitingroom.CommandHeader, "revoke")
			}
			tk, _ := waitingroom.TicketFrom(w)
			_, _ = io.WriteString(w, strconv.FormatUint(tk.ID, 16))
		})
		for range 3 {
			rm, err := waitingroom.New(waitingroom.Config{
				Name: "launch", Settings: waitingroom.Settings{TotalActiveUsers: 100, NewUsersPerMinute: 100}, Keys: [][]byte{testKey},
				SyncInterval: interval, Now: time.Now, Logger: slog.New(slog.DiscardHandler),
			}, st)
			require.NoError(t, err)
			defer rm.Close()
			rooms, hs = append(rooms, rm), append(hs, rm.Handler(app))
		}
		// lets reports whether instance i lets cookie in as the session id.
		lets := func(i int, cookie string, id uint64) bool {
			r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
			r.Header.Set("Cookie", cookie)
			w := httptest.NewRecorder()
			hs[i].ServeHTTP(w, r)
			return w.Code == http.StatusOK && w.Body.String() == strconv.FormatUint(id, 16)
		}
		inState := func(id uint64) bool {
			s, err := st.Read(context.Background(), "launch")
			require.NoError(t, err)
			return slices.ContainsFunc(s.Sessions, func(x store.Session) bool { return x.ID == id && x.Revoked })
		}
		time.Sleep(2 * interval) // every instance synced, with a grant
		var worstState, worst time.Duration
		for trial := range 4 {
			v := &visitor{}
			w := httptest.NewRecorder()
			hs[0].ServeHTTP(w, v.request(http.MethodGet, ""))
			keepCookie(v, w)
			id, err := strconv.ParseUint(w.Body.String(), 16, 64)
			require.NoError(t, err, "trial %d: admitted", trial)
			time.Sleep(interval + interval/2) // every instance knows the session
			for i := range rooms {
				require.True(t, lets(i, v.cookie, id), "trial %d: instance %d lets the visitor in", trial, i)
			}
			// Revoke just after instance 0's sync, the last of a
			// number of trial-dependent syncs.
			for n := rooms[0].Stats().Counters.Syncs + uint64(trial); rooms[0].Stats().Counters.Syncs <= n; {
				time.Sleep(time.Millisecond)
			}
			r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
			r.Header.Set("Cookie", v.cookie)
			r.Header.Set("X-Revoke", "1")
			hs[0].ServeHTTP(httptest.NewRecorder(), r)
			start := time.Now()
			var reached time.Duration
			open := map[int]bool{1: true, 2: true}
			for len(open) > 0 && time.Since(start) < 3*interval {
				if reached == 0 && inState(id) {
					reached = time.Since(start)
				}
				for i := range open {
					if !lets(i, v.cookie, id) {
						delete(open, i)
						worst = max(worst, time.Since(start))
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
			require.Empty(t, open, "trial %d: instances that still let the revoked cookie in", trial)
			worstState = max(worstState, reached)
		}
		t.Logf("a revoke reached the state within %v, every instance within %v", worstState, worst)
		assert.LessOrEqual(t, worstState, interval/10, "the revoke reaches the state at once")
		assert.LessOrEqual(t, worst, interval+interval/10+5*time.Millisecond, "every instance refuses the cookie from its next sync")
	})
}

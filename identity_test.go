package waitingroom_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// idRoom is a test room whose application records the Ticket.ID of every
// request that reaches it.
type idRoom struct {
	*testRoom
	mu   sync.Mutex
	ids  map[uint64]int // Ticket.ID → requests that reached the application
	last uint64         // the Ticket.ID of the latest request that did
}

func newIDRoom(t *testing.T, mutate func(*waitingroom.Config)) *idRoom {
	tr := newTestRoom(t, mutate)
	ir := &idRoom{testRoom: tr, ids: map[uint64]int{}}
	tr.app = tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tk, ok := waitingroom.TicketFrom(w)
		if !ok {
			panic("no ticket")
		}
		ir.mu.Lock()
		ir.ids[tk.ID]++
		ir.last = tk.ID
		ir.mu.Unlock()
		_, _ = io.WriteString(w, "app")
	}))
	return ir
}

func (ir *idRoom) admissions() int {
	ir.mu.Lock()
	defer ir.mu.Unlock()
	return len(ir.ids)
}

// send sends one request with cookie (a "name=value" pair, or "") and
// returns the response; the cookie it sets, if any, is in the recorder.
func (tr *testRoom) send(cookie string) *httptest.ResponseRecorder {
	v := &visitor{cookie: cookie}
	w := httptest.NewRecorder()
	tr.app.ServeHTTP(w, v.request(http.MethodGet, ""))
	return w
}

// A waiting place yields one admission, whoever holds a copy of its
// cookie: a client resending its first waiting cookie every 200 ms, and
// 100 clones of one early cookie, each make one visitor, no more, while
// their place is held. The copies let in after the first share its
// session.
func TestOnePlaceOneAdmission(t *testing.T) {
	for _, method := range []waitingroom.QueueingMethod{waitingroom.FIFO, waitingroom.Random} {
		t.Run(string(method), func(t *testing.T) {
			ir := newIDRoom(t, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 100, 5
				c.QueueingMethod = method
				c.SessionDuration = 10 * time.Minute
			})
			for range 5 {
				require.True(t, admitted(ir.get(&visitor{}, "")))
			}
			ir.clk.Add(time.Second)
			replayer, cloned := &visitor{}, &visitor{}
			require.True(t, isWaiting(ir.get(replayer, "")))
			require.True(t, isWaiting(ir.get(cloned, "")))
			first, clone := replayer.cookie, cloned.cookie
			ir.clk.Add(time.Minute)
			polite := make([]*visitor, 20)
			for i := range polite {
				polite[i] = &visitor{}
				require.True(t, isWaiting(ir.get(polite[i], "")))
			}
			before := ir.admissions()
			next := make([]time.Time, len(polite))
			got := map[string]map[uint64]bool{"replayer": {}, "clones": {}, "polite": {}}
			send := func(who, cookie string) {
				if w := ir.send(cookie); admitted(w) {
					got[who][ir.last] = true
				}
			}
			for step := range 239 * 5 { // to the end of minute 4, every 200 ms
				now := ir.clk.Now()
				if step%5 == 0 {
					ir.sync()
				}
				send("replayer", first)
				for range 100 / 20 {
					send("clones", clone)
				}
				for i, v := range polite {
					if !now.Before(next[i]) {
						w := ir.get(v, "")
						if admitted(w) {
							got["polite"][ir.last] = true
						}
						next[i] = now.Add(refreshOf(w))
					}
				}
				ir.clk.Add(200 * time.Millisecond)
			}
			total := ir.admissions() - before
			// Four minutes of five a minute, never more; released over each
			// minute, a slot released in a minute's last seconds may find
			// nobody due before the minute ends.
			assert.LessOrEqual(t, total, 20, "four minutes of five a minute")
			assert.GreaterOrEqual(t, total, 15, "most of the minutes' slots are used")
			assert.LessOrEqual(t, len(got["replayer"]), 1, "the replayer: one place, one admission at most")
			assert.LessOrEqual(t, len(got["clones"]), 1, "the clones: one place, one admission at most")
			if method == waitingroom.FIFO {
				// Their places are older than every polite visitor's.
				assert.Len(t, got["replayer"], 1)
				assert.Len(t, got["clones"], 1)
			}
			assert.Len(t, got["polite"], total-len(got["replayer"])-len(got["clones"]), "every other admission is a polite visitor's")
		})
	}
}

// refreshOf is how long a waiting page asks the visitor to wait; a long
// time for a response that is not a waiting page.
func refreshOf(w *httptest.ResponseRecorder) time.Duration {
	if !isWaiting(w) {
		return time.Hour
	}
	d, err := time.ParseDuration(w.Header().Get("Refresh") + "s")
	if err != nil || d <= 0 {
		return time.Second
	}
	return d
}

// A visitor whose requests are never further apart than SessionDuration
// keeps their session, though the cookie is renewed only now and then.
func TestSessionsLastFromTheLatestRequest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		session time.Duration
		at      []time.Duration // request times after admission
		stillIn bool
	}{
		{"5 min: 0, 59 s, 5:01", 5 * time.Minute, []time.Duration{59 * time.Second, 5*time.Minute + time.Second}, true},
		{"5 min: 0, 59 s, 5:58", 5 * time.Minute, []time.Duration{59 * time.Second, 5*time.Minute + 58*time.Second}, true},
		{"5 min: 0, 59 s, 6:00", 5 * time.Minute, []time.Duration{59 * time.Second, 6 * time.Minute}, false},
		{"1 min: 0, 11 s, 61 s", time.Minute, []time.Duration{11 * time.Second, 61 * time.Second}, true},
		{"1 min: 0, 11 s, 71 s", time.Minute, []time.Duration{11 * time.Second, 71*time.Second + 999*time.Millisecond}, true},
		{"1 min: 0, 11 s, 72 s", time.Minute, []time.Duration{11 * time.Second, 72 * time.Second}, false},
	} {
		for _, instances := range []int{1, 2} {
			t.Run(tc.name+"/"+string(rune('0'+instances)), func(t *testing.T) {
				clk, st := newClock(), memstore.New()
				mutate := func(c *waitingroom.Config) {
					c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
					c.SessionDuration = tc.session
				}
				rooms := []*testRoom{newTestRoomOn(t, clk, st, mutate)}
				if instances == 2 {
					rooms = append(rooms, newTestRoomOn(t, clk, st, mutate))
				}
				start := clk.Now()
				v := &visitor{}
				require.True(t, admitted(rooms[0].get(v, "")))
				var w *httptest.ResponseRecorder
				admissions := func() (n uint64) {
					for _, tr := range rooms {
						n += tr.Stats().Counters.Admitted
					}
					return n
				}
				for i, at := range tc.at {
					for clk.Now().Before(start.Add(at)) {
						step := min(time.Second, start.Add(at).Sub(clk.Now()))
						clk.Add(step)
						for _, tr := range rooms {
							tr.sync()
						}
					}
					// Alternate instances: the other learns of the
					// request at its next sync.
					w = rooms[i%len(rooms)].get(v, "")
				}
				// Still in: let in on the first admission. Otherwise a new
				// visitor, let in anew (nobody else is there) or not.
				assert.Equal(t, tc.stillIn, admitted(w) && admissions() == 1)
			})
		}
	}
}

// cfCommandHeader is the commercial product's name for CommandHeader,
// which Handler takes the same way (see CommandHeader).
const cfCommandHeader = "Cf-Waiting-Room-Command"

// A bypassed response's command header is removed, not obeyed.
func TestBypassedCommandHeader(t *testing.T) {
	tr := newTestRoom(t, func(c *waitingroom.Config) { c.Bypass = []waitingroom.Rule{waitingroom.PathPrefix("/static/")} })
	tr.app = tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(waitingroom.CommandHeader, "revoke")
		w.Header().Set(cfCommandHeader, "revoke")
	}))
	w := httptest.NewRecorder()
	tr.app.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://example.com/static/a.css", nil))
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Empty(t, w.Header().Values(waitingroom.CommandHeader))
	assert.Empty(t, w.Header().Values(cfCommandHeader))
	assert.Zero(t, tr.Stats().Counters.Revoked)
}

// Several cookies of the room's name (one a sibling subdomain set for the
// parent domain, say): junk, forged or stale ones do not hide the
// visitor's own.
func TestCookieAmongOthers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before func(tr *testRoom, stale string) string
	}{
		{"garbage", func(tr *testRoom, _ string) string { return tr.cookieName + "=garbage" }},
		{"forged", func(tr *testRoom, _ string) string {
			return tr.cookieName + "=" + seal(t, tr.cookieName, otherKey, waitingroom.CookieState{ID: 1, Bucket: 1, AcceptedAt: 1, LastCheckIn: 1})
		}},
		{"a stale session's", func(_ *testRoom, stale string) string { return stale }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *waitingroom.Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1 })
			old := &visitor{}
			require.True(t, admitted(tr.get(old, "")))
			tr.clk.Add(6 * time.Minute)
			tr.sync()
			v := &visitor{}
			require.True(t, admitted(tr.get(v, "")))
			r := v.request(http.MethodGet, "")
			r.Header.Set("Cookie", tc.before(tr, old.cookie)+"; "+v.cookie)
			w := httptest.NewRecorder()
			tr.app.ServeHTTP(w, r)
			assert.True(t, admitted(w))
		})
	}
}

// A state lost with the store is rebuilt with the sessions this instance
// knows: they count again, once each, and their visitors keep passing.
func TestIdentitySurvivesStateLoss(t *testing.T) {
	w := &wipeable{Store: memstore.New()}
	tr := newTestRoomOn(t, newClock(), w, func(c *waitingroom.Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 3, 3 })
	vs := make([]*visitor, 3)
	for i := range vs {
		vs[i] = &visitor{}
		require.True(t, admitted(tr.get(vs[i], "")))
	}
	tr.sync()
	w.wipe()
	require.NoError(t, tr.Sync(context.Background()))
	assert.Equal(t, 3, tr.Stats().Active, "this instance's sessions are contributed again")
	for _, v := range vs {
		assert.True(t, admitted(tr.get(v, "")))
	}
	tr.sync()
	assert.Equal(t, 3, tr.Stats().Active)
}

// A cookie whose place lapsed, resent again and again, is one new visitor
// (its successor), counted once as waiting and given one chance per
// interval; requests without a cookie cost the instance no memory.
func TestLapsedCookieIsOneNewVisitor(t *testing.T) {
	tr := newTestRoom(t, func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
		c.RefreshJitter = -1
		c.SessionDuration = 10 * time.Minute // the first visitor keeps the one slot
	})
	require.True(t, admitted(tr.get(&visitor{}, "")))
	v := &visitor{}
	require.True(t, isWaiting(tr.get(v, "")))
	lapsed := v.cookie
	tr.clk.Add(tr.cfg.QueueHold + time.Second)
	tr.sync()
	for i := range 600 { // two minutes, five copies a second
		require.True(t, isWaiting(tr.send(lapsed)))
		tr.clk.Add(200 * time.Millisecond)
		if i%5 == 0 {
			tr.sync()
			// Once, not fifty times, nor zero once its first count
			// expired: the count moves with each chance it takes.
			require.Equal(t, 1, tr.Stats().Waiting, "copies of one lapsed cookie are one visitor, at %d", i)
		}
	}

	tr.local.Lock()
	before := waitingroom.ChancesKept(tr.Room)
	tr.local.Unlock()
	for range 100 {
		require.True(t, isWaiting(tr.send("")))
	}
	tr.local.Lock()
	assert.Equal(t, before, waitingroom.ChancesKept(tr.Room), "no memory for visitors without a cookie")
	tr.local.Unlock()
}

// With renewal disabled and someone waiting, the capped visitor goes to
// the back of the queue: the waiting visitor gets the freed slot first.
func TestCappedSessionQueuesBehindTheWaiting(t *testing.T) {
	tr := newTestRoom(t, func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
		c.DisableSessionRenewal = true
		c.SessionDuration = 2 * time.Minute
		c.RefreshJitter = -1
	})
	capped := &visitor{}
	require.True(t, admitted(tr.get(capped, "")))
	tr.clk.Add(30 * time.Second)
	waiting := &visitor{}
	require.True(t, isWaiting(tr.get(waiting, "")))
	for range 4 { // to 2:10, refreshing at the page's pace
		tr.clk.Add(20 * time.Second)
		tr.sync()
		require.True(t, isWaiting(tr.get(waiting, "")))
		require.True(t, admitted(tr.get(capped, "")))
	}
	tr.clk.Add(10 * time.Second) // 2:00: the cap
	tr.sync()
	assert.True(t, isWaiting(tr.get(capped, "")), "the capped visitor queues")
	tr.clk.Add(10 * time.Second)
	tr.sync()
	assert.True(t, admitted(tr.get(waiting, "")), "the visitor who waited gets the slot")
	tr.sync()
	assert.Equal(t, 1, tr.Stats().Active)
}

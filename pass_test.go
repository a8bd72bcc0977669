package waitingroom

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/fronttest"
	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
)

const testPassSecret = fronttest.PassSecret

// Headers of package forwardauth, which the tests of this package cannot
// import (it imports this package).
const (
	modeHeader      = "Waiting-Room-Forward-Auth"
	fwdCookieHeader = "Waiting-Room-Cookie"
	passHeader      = "Waiting-Room-Pass"
	modeStatus      = "status"
	modePage        = "page"
	proxyAddr       = "192.0.2.10:41000"
	visitorAddr     = "203.0.113.7"
)

// NewForwardAuth returns package forwardauth's handler for rm behind the
// forwarded front door (nginx's), with passes of secret lasting d: a
// test file of package waitingroom_test sets it, since the tests of this
// package cannot import forwardauth.
var NewForwardAuth func(rm *Room, secret string, d time.Duration) http.Handler

// nginxPass checks a pass as nginx does (fronttest.CheckPass).
func nginxPass(value, name, secret string, now int64) (ticket string, ok bool) {
	return fronttest.CheckPass(value, name, secret, now)
}

// authRequest is the auth request nginx sends from its address for the
// headers h and the visitor's cookie.
func authRequest(method, target string, h map[string]string, cookie string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	r.RemoteAddr = proxyAddr
	for k, v := range h {
		r.Header.Set(k, v)
	}
	r.Header.Set("Accept", "text/html")
	if cookie != "" {
		r.Header.Set("Cookie", cookie)
	}
	return r
}

// passBrowser is a browser behind nginx configured with passes: its
// requests pass on a good pass, and otherwise go through the room's
// forward-auth as nginx's auth_request sends them.
type passBrowser struct {
	cookie string // the room's cookie, "name=value"
	pass   string // the pass cookie's value
}

// passAnswer is what one request of a passBrowser got.
type passAnswer struct {
	passed bool   // the request reached the application
	local  bool   // nginx passed it on the pass, without the room
	ticket string // the ticket the application got
}

func (tr *testRoom) passGet(h http.Handler, b *passBrowser, uri string, revoke bool) passAnswer {
	tr.t.Helper()
	if b.pass != "" && !revoke {
		if tk, ok := nginxPass(b.pass, tr.cookieName, testPassSecret, tr.clk.Now().Unix()); ok {
			return passAnswer{passed: true, local: true, ticket: tk}
		}
	}
	r := authRequest(http.MethodGet, "http://127.0.0.1:8081/", map[string]string{
		"X-Forwarded-Method": http.MethodGet, "X-Forwarded-Uri": uri, "X-Forwarded-Host": "shop.example",
		"X-Forwarded-Proto": "https", modeHeader: modeStatus,
	}, b.cookie)
	if revoke {
		r.Header.Set(CommandHeader, "revoke")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	set := w.Header().Values("Set-Cookie")
	set = append(set, w.Header().Values(passHeader)...)
	for _, c := range (&http.Response{Header: http.Header{"Set-Cookie": set}}).Cookies() {
		switch {
		case c.Name == tr.cookieName && c.MaxAge < 0:
			b.cookie = ""
		case c.Name == tr.cookieName:
			b.cookie = c.Name + "=" + c.Value
		case c.Name == tr.cookieName+"_pass" && c.MaxAge < 0:
			b.pass = ""
		case c.Name == tr.cookieName+"_pass":
			b.pass = c.Value
		}
	}
	return passAnswer{passed: w.Code == http.StatusOK, ticket: w.Header().Get(TicketHeader)}
}

// passRoom is a room behind nginx's trusted address, with its
// forward-auth handler (fa) giving passes of Duration d (0: the
// default).
func passRoom(t *testing.T, clk *clock, st store.Store, d time.Duration, mutate func(*Config)) *testRoom {
	tr := newTestRoomOn(t, clk, st, func(c *Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
		if mutate != nil {
			mutate(c)
		}
	})
	tr.fa = NewForwardAuth(tr.Room, testPassSecret, d)
	return tr
}

// Invariant 9 behind nginx with passes: the room does not see the
// requests nginx passes on a pass, and a visitor whose requests are never
// further apart than SessionDuration is still never sent back to the
// queue, on the instance that gave the pass or on another.
func TestPassKeepsTheSession(t *testing.T) {
	for _, other := range []bool{false, true} {
		t.Run(map[bool]string{false: "same instance", true: "another instance"}[other], func(t *testing.T) {
			clk := newClock()
			st := newMemStore()
			mutate := func(c *Config) {
				c.SessionDuration = time.Minute
				c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
			}
			a := passRoom(t, clk, st, 0, mutate)
			b := a
			if other {
				b = passRoom(t, clk, st, 0, mutate)
			}
			br := &passBrowser{}
			in := a.passGet(a.fa, br, "/", false)
			require.True(t, in.passed)
			a.sync()
			// Requests on the pass until its last moment: the room
			// sees none of them.
			clk.Add(1900 * time.Millisecond)
			got := a.passGet(a.fa, br, "/a", false)
			require.True(t, got.local, "nginx passes this one itself")
			// The next request a session later than that one.
			clk.Add(time.Minute - 100*time.Millisecond)
			br.pass = "" // expired: nginx asks the room
			a.sync()
			b.sync()
			got = b.passGet(b.fa, br, "/b", false)
			assert.True(t, got.passed, "the session lasts a session after the latest request nginx passed")
			assert.False(t, got.local)
			assert.Equal(t, in.ticket, got.ticket, "the same session, not a new admission")
			admissions := a.Stats().Counters.Admitted
			if other {
				admissions += b.Stats().Counters.Admitted
			}
			assert.Equal(t, uint64(1), admissions, "one admission")

			// Without passes the same visitor would have been sent
			// back: the room's own check of a record seen at the
			// auth request alone.
			x := store.Session{ID: 1, Admitted: 0, Seen: testclockStartUnix()}
			assert.False(t, recordAlive(&x, a.policyOf(a.syncer.Snapshot(), clk.Now().UnixMilli()), clk.Now().UnixMilli()))

			// And a visitor who stops holds the slot only until a
			// session (and the margin of reports on their way between
			// instances) after the pass's end.
			clk.Add(time.Minute + 5*time.Second)
			a.sync()
			b.sync()
			assert.Zero(t, b.Stats().Active, "the slot is free a session after the latest pass")
			assert.Zero(t, a.Stats().Active)
		})
	}
}

func testclockStartUnix() int64 { return newClock().Now().Unix() }

// A revoke under passes holds the slot until the visitor's latest pass
// has expired, so that a client resending it never makes two active
// visitors out of one slot; the revoked cookie is refused at once on the
// instance that revoked it, and on every instance once the pass is over.
func TestPassRevokeHoldsTheSlot(t *testing.T) {
	clk := newClock()
	st := newMemStore()
	mutate := func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1 }
	a := passRoom(t, clk, st, 3*time.Second, mutate)
	b := passRoom(t, clk, st, 3*time.Second, mutate)
	ha, hb := a.fa, b.fa
	first := &passBrowser{}
	require.True(t, a.passGet(ha, first, "/", false).passed)
	a.sync()
	b.sync()
	// A minute on (a new minute's admission), a pass good through 62 s.
	clk.Add(60400 * time.Millisecond)
	first.pass = ""
	require.True(t, a.passGet(ha, first, "/", false).passed)
	kept := *first // a client that keeps the pass and the cookie
	id := kept.ticketID(t)

	clk.Add(100 * time.Millisecond)
	rev := a.passGet(ha, first, "/checkout/done", true)
	require.True(t, rev.passed)
	assert.Equal(t, "revoked", rev.ticket)
	assert.Empty(t, first.pass, "the revoke expires the pass")
	assert.Empty(t, first.cookie, "and the cookie")
	assert.Equal(t, uint64(1), a.Stats().Counters.Revoked)

	second := &passBrowser{}
	for i, step := range []time.Duration{0, time.Second, time.Second} {
		clk.Add(step)
		a.sync()
		b.sync()
		got := kept
		assert.True(t, a.passGet(ha, &got, "/", false).local, "%d: the kept pass passes nginx until it expires", i)
		assert.False(t, b.passGet(hb, second, "/", false).passed, "%d: so its slot is not given to another", i)
		assert.Equal(t, 1, a.Stats().Active, "%d", i)
		assert.Equal(t, 1, b.Stats().Active, "%d", i)
		stale := passBrowser{cookie: kept.cookie}
		assert.False(t, a.passGet(ha, &stale, "/", false).passed, "%d: the revoking instance refuses the cookie at once", i)
	}
	// The latest pass was good through 62 s; the session ends at 64 s,
	// when no pass that another instance may have given before it learnt
	// of the revoke (within a second of it) is good either.
	clk.Add(1500 * time.Millisecond)
	a.sync()
	b.sync()
	got := kept
	assert.False(t, a.passGet(ha, &got, "/", false).local, "the kept pass is over")
	assert.Equal(t, 0, b.Stats().Active, "the revoke subtracts once the pass is over")
	for _, rm := range []*testRoom{a, b} {
		stale := passBrowser{cookie: kept.cookie}
		ans := rm.passGet(rm.fa, &stale, "/", false)
		require.False(t, ans.passed, "%s: the revoked session is not let in again (the slot is the next visitor's)", rm.id)
	}
	// The minute's slot is paced over what is left of it: the next
	// minute for sure (both instances syncing all along: one silent for
	// longer than an instance TTL is dropped, and the slot it held
	// counted as taken).
	for range 60 {
		clk.Add(time.Second)
		b.sync()
		a.sync()
	}
	// The minute's one admission is the instance's that holds the slot.
	holder, h := b, hb
	a.local.Lock()
	if a.local.Grant().Total() > 0 {
		holder, h = a, ha
	}
	a.local.Unlock()
	ans := holder.passGet(h, second, "/", false)
	require.True(t, ans.passed, "the slot goes to the next visitor")
	tk, ok := ParseTicket(ans.ticket)
	require.True(t, ok)
	assert.NotEqual(t, id, tk.ID)
}

func (b passBrowser) ticketID(t *testing.T) uint64 {
	tk, ok := nginxPass(b.pass, defaultCookieName+"_launch", testPassSecret, 0)
	require.True(t, ok)
	p, ok := ParseTicket(tk)
	require.True(t, ok)
	return p.ID
}

// An instance that learns of another's revoke before the slot's hold is
// over lets the revoked cookie in until then, as the other's passes do,
// but gives no pass good past the hold: the room stops counting the
// session at its end, so a pass beyond it would let the revoked visitor
// in uncounted. At the hold's end it refuses the cookie.
func TestPassAfterRevokeOnAnotherInstance(t *testing.T) {
	for _, dur := range []time.Duration{2 * time.Second, 3 * time.Second, 5 * time.Second} {
		t.Run(dur.String(), func(t *testing.T) {
			clk := newClock()
			st := newMemStore()
			mutate := func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1 }
			a := passRoom(t, clk, st, dur, mutate)
			b := passRoom(t, clk, st, dur, mutate)
			ha, hb := a.fa, b.fa
			br := &passBrowser{}
			require.True(t, a.passGet(ha, br, "/", false).passed)
			id := br.ticketID(t)
			a.sync()
			b.sync()
			clk.Add(1100 * time.Millisecond)
			kept := passBrowser{cookie: br.cookie} // its pass expired
			require.True(t, a.passGet(ha, br, "/done", true).passed)
			clk.Add(900 * time.Millisecond)
			a.sync()
			b.sync()
			end := recordOf(t, st, id).End // the hold's end, Unix s
			for clk.Now().Unix() < end {
				got := kept
				ans := b.passGet(hb, &got, "/", false)
				require.True(t, ans.passed, "until the hold's end the revoked cookie is the session's")
				if got.pass != "" {
					_, ok := nginxPass(got.pass, b.cookieName, testPassSecret, end)
					assert.False(t, ok, "at %v: a pass good past the hold's end", clk.Now().Sub(newClock().Now()))
				}
				assert.Equal(t, 1, b.Stats().Active)
				clk.Add(500 * time.Millisecond)
			}
			got := kept
			assert.False(t, b.passGet(hb, &got, "/", false).passed, "at the hold's end the revoked cookie is refused, before the next sync")
			a.sync()
			b.sync()
			assert.Zero(t, b.Stats().Active, "the slot is free at the hold's end")
			got = kept
			assert.False(t, b.passGet(hb, &got, "/", false).passed, "and the revoked cookie refused")
		})
	}
}

// passEnd returns the Unix second at which the pass value p stops being
// good (nginx takes it through the second before).
func passEnd(t *testing.T, p string) int64 {
	last, ok := fronttest.PassLast(p)
	require.True(t, ok, "a pass: %q", p)
	return last + 1
}

// letsIn reports whether rm lets a client holding only cookie in as the
// session id, through forward-auth.
func (tr *testRoom) letsIn(cookie string, id uint64) bool {
	tr.t.Helper()
	b := passBrowser{cookie: cookie}
	ans := tr.passGet(tr.fa, &b, "/", false)
	tk, ok := ParseTicket(ans.ticket)
	return ans.passed && ok && tk.ID == id
}

// recordOf returns the state's record of session id.
func recordOf(t *testing.T, st store.Store, id uint64) store.Session {
	s, err := st.(store.Reader).Read(context.Background(), "launch")
	require.NoError(t, err)
	for _, x := range s.Sessions {
		if x.ID == id {
			return x
		}
	}
	t.Fatalf("no record of session %x", id)
	return store.Session{}
}

// A revoke under passes holds the slot until every pass that any instance
// may still give the revoked visitor has expired, those of instances that
// learn of the revoke only at their next sync included: the revoking
// instance syncs at once (as its woken loop does), and another that has
// not synced since gives a full pass up to the second a revoke takes to
// reach the others when syncs are the caller's. The slot used to be held
// only for the passes the revoking instance knew of: such a pass was good
// for up to two seconds more (with SyncInterval 1 s), uncounted. Once the
// hold is over, every instance refuses the cookie, before its next sync.
func TestPassGivenBeforeARevokeIsLearned(t *testing.T) {
	for _, dur := range []time.Duration{2 * time.Second, 3 * time.Second, 5 * time.Second} {
		for _, phase := range []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, 900 * time.Millisecond} {
			t.Run(fmt.Sprintf("%v revoked %v into a second", dur, phase), func(t *testing.T) {
				clk := newClock()
				st := newMemStore()
				mutate := func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1 }
				a := passRoom(t, clk, st, dur, mutate)
				br := &passBrowser{}
				require.True(t, a.passGet(a.fa, br, "/", false).passed)
				id := br.ticketID(t)
				rooms := []*testRoom{a, passRoom(t, clk, st, dur, mutate), passRoom(t, clk, st, dur, mutate)}
				syncAll := func() {
					for _, rm := range rooms {
						rm.sync()
					}
				}
				syncAll()
				clk.Set(testclock.Start.Add(2*time.Second + phase))
				syncAll()
				kept := br.cookie

				require.True(t, a.passGet(a.fa, br, "/done", true).passed)
				a.sync()
				clk.Add(900 * time.Millisecond)
				b := passBrowser{cookie: kept}
				require.True(t, rooms[1].passGet(rooms[1].fa, &b, "/", false).passed, "not synced since: the session's")
				require.NotEmpty(t, b.pass, "and a pass")
				end := passEnd(t, b.pass)

				for clk.Now().Unix() < end {
					clk.Add(100 * time.Millisecond)
					syncAll()
					if _, good := nginxPass(b.pass, a.cookieName, testPassSecret, clk.Now().Unix()); good {
						for i, rm := range rooms {
							require.Equal(t, 1, rm.Stats().Active, "instance %d at %v: a pass of the revoked session is good, uncounted",
								i, clk.Now().Sub(testclock.Start))
						}
					}
				}
				hold := recordOf(t, st, id).End
				require.GreaterOrEqual(t, hold, end, "the hold covers the pass")
				clk.Set(time.Unix(hold, 0))
				for i, rm := range rooms {
					assert.False(t, rm.letsIn(kept, id), "instance %d: the revoked cookie let in at the hold's end", i)
				}
				syncAll()
				for i, rm := range rooms {
					assert.Zero(t, rm.Stats().Active, "instance %d: the slot is free at the hold's end", i)
				}
			})
		}
	}
}

// An instance that learns of a revoke under passes only after the hold's
// end (its syncs failed, or lagged) lets the revoked visitor in meanwhile
// and reports it: a sign of life after the session's end, which does not
// hide the revoke. It is still learned, by that instance and by every
// other, from their next sync.
func TestPassRevokeLearnedLate(t *testing.T) {
	clk := newClock()
	st := newMemStore()
	mutate := func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1 }
	a := passRoom(t, clk, st, 0, mutate)
	br := &passBrowser{}
	require.True(t, a.passGet(a.fa, br, "/", false).passed)
	id := br.ticketID(t)
	b, c := passRoom(t, clk, st, 0, mutate), passRoom(t, clk, st, 0, mutate)
	for _, rm := range []*testRoom{a, b, c, a, b, c} {
		rm.sync()
	}
	kept := br.cookie
	clk.Add(time.Second)
	require.True(t, a.passGet(a.fa, br, "/done", true).passed)
	a.sync()
	c.sync()
	clk.Add(10 * time.Second) // b has not synced since before the revoke
	require.True(t, b.letsIn(kept, id), "b has not learned of the revoke")
	for range 5 {
		b.sync()
		a.sync()
		c.sync()
		for name, rm := range map[string]*testRoom{"a": a, "b": b, "c": c} {
			assert.False(t, rm.letsIn(kept, id), "%s at %v: the revoked cookie let in", name, clk.Now().Sub(testclock.Start))
		}
		clk.Add(time.Second)
	}
	for name, rm := range map[string]*testRoom{"a": a, "b": b, "c": c} {
		assert.Zero(t, rm.Stats().Active, name)
	}
}

// A room told of passes keeps the longest, which its revokes' hold
// covers, and refuses one whose hold would reach further ahead than the
// shared state believes, keeping what it had.
func TestExpectPasses(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) { c.SyncInterval = 2 * time.Second })
	assert.Zero(t, tr.passes.Load(), "no passes until told")
	for _, tc := range []struct {
		d    time.Duration
		ok   bool
		want int64
	}{
		{2 * time.Second, true, 2000},
		{time.Second, true, 2000},
		{4 * time.Second, true, 4000},
		{5 * time.Second, false, 4000}, // 2 × 2 s + 0.2 s + 1 s + 5 s > 10 s
	} {
		err := tr.expectPasses(tc.d)
		if tc.ok {
			assert.NoError(t, err, "%v", tc.d)
		} else {
			assert.ErrorIs(t, err, ErrInvalidConfig, "%v", tc.d)
		}
		assert.Equal(t, tc.want, tr.passes.Load(), "%v", tc.d)
	}
}

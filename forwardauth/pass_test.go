package forwardauth

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/fronttest"
	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

const testPassSecret = fronttest.PassSecret

// passBrowser is a browser behind nginx configured with passes: its
// requests pass on a good pass, and otherwise go through the handler as
// nginx's auth_request sends them.
type passBrowser struct {
	cookie string // the room's cookie, "name=value"
	pass   string // the pass cookie's value
}

// passAnswer is what one request of a passBrowser got.
type passAnswer struct {
	passed bool   // the request reached the application
	local  bool   // nginx passed it on the pass, without the room
	ticket string // the ticket the application got
	w      *httptest.ResponseRecorder
}

func (tr *testRoom) passGet(h http.Handler, b *passBrowser, uri string, revoke bool) passAnswer {
	tr.t.Helper()
	if b.pass != "" && !revoke {
		if tk, ok := fronttest.CheckPass(b.pass, cookieName, testPassSecret, tr.clk.Now().Unix()); ok {
			return passAnswer{passed: true, local: true, ticket: tk}
		}
	}
	r := authRequest(http.MethodGet, "http://127.0.0.1:8081/", map[string]string{
		"X-Forwarded-Method": http.MethodGet, "X-Forwarded-Uri": uri, "X-Forwarded-Host": "shop.example",
		"X-Forwarded-Proto": "https", ModeHeader: "status",
	}, b.cookie)
	if revoke {
		r.Header.Set(waitingroom.CommandHeader, "revoke")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	set := w.Header().Values("Set-Cookie")
	set = append(set, w.Header().Values(PassHeader)...)
	for _, c := range (&http.Response{Header: http.Header{"Set-Cookie": set}}).Cookies() {
		switch {
		case c.Name == cookieName && c.MaxAge < 0:
			b.cookie = ""
		case c.Name == cookieName:
			b.cookie = c.Name + "=" + c.Value
		case c.Name == cookieName+"_pass" && c.MaxAge < 0:
			b.pass = ""
		case c.Name == cookieName+"_pass":
			b.pass = c.Value
		}
	}
	return passAnswer{passed: w.Code == http.StatusOK, ticket: w.Header().Get(waitingroom.TicketHeader), w: w}
}

// passRoom is a test room behind nginx's trusted address, and its
// handler with passes of Duration d (0: the default).
func passRoom(t *testing.T, clk *testclock.Clock, d time.Duration, mutate func(*waitingroom.Config)) (*testRoom, http.Handler) {
	tr := newTestRoomOn(t, clk, memstore.New(), func(c *waitingroom.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
		if mutate != nil {
			mutate(c)
		}
	})
	return tr, tr.handler(Forwarded, Pass{Secret: testPassSecret, Duration: d})
}

func TestPassConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		pass Pass
		want Pass
		err  string
	}{
		{"none", Pass{}, Pass{}, ""},
		{"default duration", Pass{Secret: testPassSecret}, Pass{Secret: testPassSecret, Duration: DefaultPassDuration}, ""},
		{"5 s", Pass{Secret: testPassSecret, Duration: 5 * time.Second}, Pass{Secret: testPassSecret, Duration: 5 * time.Second}, ""},
		{"duration without a secret", Pass{Duration: time.Second}, Pass{}, "without Pass.Secret"},
		{"short secret", Pass{Secret: "short"}, Pass{}, "22 to 128"},
		{"secret nginx would read as a variable", Pass{Secret: "$abcdefghijklmnopqrstuvwxyz"}, Pass{}, "22 to 128"},
		{"secret with a space", Pass{Secret: "abcdefghijk lmnopqrstuvwxyz"}, Pass{}, "22 to 128"},
		{"too long", Pass{Secret: testPassSecret, Duration: 6 * time.Second}, Pass{}, "between 1s and 5s"},
		{"not whole seconds", Pass{Secret: testPassSecret, Duration: 1500 * time.Millisecond}, Pass{}, "whole seconds"},
		{"negative", Pass{Secret: testPassSecret, Duration: -time.Second}, Pass{}, "between"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.pass.normalize()
			_, newErr := New(newTestRoom(t, nil).Room, Options{FrontDoor: Forwarded, Pass: tc.pass})
			if tc.err != "" {
				require.ErrorIs(t, err, waitingroom.ErrInvalidConfig)
				assert.ErrorContains(t, err, tc.err)
				assert.NotContains(t, err.Error(), tc.pass.Secret[:min(len(tc.pass.Secret), 5)]+"x", "the secret is not shown")
				assert.Equal(t, err, tc.pass.Validate())
				assert.Equal(t, err, newErr, "New refuses a bad pass")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.NoError(t, tc.pass.Validate())
			assert.NoError(t, newErr)
		})
	}

	// A revoke's hold (Duration and the reach of a revoke) fits in what
	// the shared state believes ahead.
	for _, tc := range []struct {
		interval time.Duration
		duration time.Duration
		ok       bool
	}{
		{-1, MaxPassDuration, true},
		{0, MaxPassDuration, true}, // the default, 1 s: 3.1 s + 5 s
		{time.Second, MaxPassDuration, true},
		{3 * time.Second, DefaultPassDuration, true},
		{4 * time.Second, DefaultPassDuration, false},
		{2 * time.Second, MaxPassDuration, false},
		{7 * time.Second, 0, true}, // no passes
	} {
		rm, err := waitingroom.New(waitingroom.Config{Name: "launch", Settings: waitingroom.Settings{TotalActiveUsers: 1, NewUsersPerMinute: 1}, Keys: [][]byte{testKey},
			SyncInterval: tc.interval}, memstore.New())
		require.NoError(t, err)
		var p Pass
		if tc.duration != 0 {
			p = Pass{Secret: testPassSecret, Duration: tc.duration}
		}
		_, err = New(rm, Options{FrontDoor: Forwarded, Pass: p})
		require.NoError(t, rm.Close())
		if tc.ok {
			assert.NoError(t, err, "%+v", tc)
			continue
		}
		assert.ErrorIs(t, err, waitingroom.ErrInvalidConfig, "%+v", tc)
		assert.ErrorContains(t, err, "hold", "%+v", tc)
	}
}

// A pass is what nginx checks: signed, the ticket the room gives, good
// through the last second of Duration, with the room cookie's
// attributes; a change to any character, or a pass past its second,
// does not pass.
func TestPassSignedAsNginxChecks(t *testing.T) {
	clk := testclock.New(testclock.Start)
	clk.Add(400 * time.Millisecond)
	tr, h := passRoom(t, clk, 0, nil)
	b := &passBrowser{}
	a := tr.passGet(h, b, "/", false)
	require.True(t, a.passed)
	require.False(t, a.local)
	require.NotEmpty(t, b.pass, "an admitted visitor gets a pass")

	w := httptest.NewRecorder()
	r := authRequest(http.MethodGet, "http://127.0.0.1:8081/", map[string]string{"X-Forwarded-Uri": "/"}, b.cookie)
	h.ServeHTTP(w, r)
	line := w.Header().Get(PassHeader)
	assert.Contains(t, line, "; Max-Age=2; Path=/; HttpOnly; SameSite=Lax")
	assert.True(t, strings.HasPrefix(line, cookieName+"_pass="))

	now := clk.Now().Unix()
	tk, ok := fronttest.CheckPass(b.pass, cookieName, testPassSecret, now)
	require.True(t, ok, "nginx takes the pass: %q", b.pass)
	assert.Equal(t, a.ticket, tk, "the application gets the room's ticket from the pass")
	_, ok = fronttest.CheckPass(b.pass, cookieName, testPassSecret, now+1)
	assert.True(t, ok, "good through the second that holds now+Duration-1s")
	_, ok = fronttest.CheckPass(b.pass, cookieName, testPassSecret, now+2)
	assert.False(t, ok, "not a second more")
	_, ok = fronttest.CheckPass(b.pass, cookieName, "another-secret-0123456789", now)
	assert.False(t, ok, "another secret")
	_, ok = fronttest.CheckPass(b.pass, "__waitingroom_other", testPassSecret, now)
	assert.False(t, ok, "another room's, with the same secret")
	sig := func(v string) []byte { b, _ := base64.RawURLEncoding.DecodeString(v[:22]); return b }
	for i := range len(b.pass) {
		for _, c := range []byte{'0', '9', 'a', 'f', 'A', 'Q', '_', '-', 'T', ':'} {
			if b.pass[i] == c {
				continue
			}
			forged := b.pass[:i] + string(c) + b.pass[i+1:]
			if i < 22 && bytes.Equal(sig(forged), sig(b.pass)) {
				continue // the same signature: the last character's unused bits
			}
			if _, ok := fronttest.CheckPass(forged, cookieName, testPassSecret, now); ok {
				t.Fatalf("a pass changed at %d (%q) passes", i, forged)
			}
		}
	}

	// With a session that ends whatever the visitor does, no pass
	// outlives it.
	clk = testclock.New(testclock.Start)
	tr, h = passRoom(t, clk, 0, func(c *waitingroom.Config) {
		c.SessionDuration, c.DisableSessionRenewal = time.Minute, true
	})
	b = &passBrowser{}
	require.True(t, tr.passGet(h, b, "/", false).passed)
	end := clk.Now().Add(time.Minute).Unix()
	clk.Add(58500 * time.Millisecond)
	b.pass = ""
	require.True(t, tr.passGet(h, b, "/", false).passed)
	require.NotEmpty(t, b.pass)
	_, ok = fronttest.CheckPass(b.pass, cookieName, testPassSecret, end-1)
	assert.True(t, ok)
	_, ok = fronttest.CheckPass(b.pass, cookieName, testPassSecret, end)
	assert.False(t, ok, "the pass ends with the session")
	clk.Add(time.Second) // 0.5 s before the end
	b.pass = ""
	require.True(t, tr.passGet(h, b, "/", false).passed)
	require.NotEmpty(t, b.pass)
	_, ok = fronttest.CheckPass(b.pass, cookieName, testPassSecret, end)
	assert.False(t, ok, "the pass ends with the session")
}

// The revoke command with passes: the answer passes with the ticket
// "revoked", and expires the room's cookie (the first Set-Cookie, which
// is the one nginx 1.22's $upstream_http_set_cookie passes on) and the
// pass (PassHeader, and a Set-Cookie after the room's); the command
// header does not leave. Without passes the pass is left alone.
func TestPassRevoke(t *testing.T) {
	for _, passes := range []bool{true, false} {
		t.Run(map[bool]string{true: "passes", false: "no passes"}[passes], func(t *testing.T) {
			tr, h := passRoom(t, testclock.New(testclock.Start), 0, nil)
			if !passes {
				h = tr.handler(Forwarded, Pass{})
			}
			b := &passBrowser{}
			require.True(t, tr.passGet(h, b, "/", false).passed)
			require.Equal(t, passes, b.pass != "")
			a := tr.passGet(h, b, "/checkout/done", true)
			require.True(t, a.passed)
			assert.Equal(t, "revoked", a.ticket)
			assert.Empty(t, a.w.Header().Values(waitingroom.CommandHeader))
			set := a.w.Header().Values("Set-Cookie")
			require.NotEmpty(t, set)
			assert.True(t, strings.HasPrefix(set[0], cookieName+"=;"), "the expired cookie first: %q", set)
			assert.Contains(t, set[0], "Max-Age=0")
			if passes {
				require.Len(t, set, 2)
				assert.Equal(t, cookieName+"_pass=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax", set[1])
				assert.Equal(t, set[1], a.w.Header().Get(PassHeader))
			} else {
				assert.Len(t, set, 1)
				assert.Empty(t, a.w.Header().Values(PassHeader))
			}
			assert.Empty(t, b.cookie)
			assert.Empty(t, b.pass)
			tr.sync()
			assert.Equal(t, uint64(1), tr.Stats().Counters.Revoked)
		})
	}
}

// A copy of a revoked visitor's cookie, sent once its pass has expired:
// the revoking instance refuses it at once, while another lets it in
// until the revoke's hold ends (it may have given passes that long). The
// refused copy brings a new place, whose chance is not due at the next
// request: that 401 sets no cookie, and nginx's page request, which may
// reach any instance, carries the cookie the status request refused. Its
// page is that decision's, waiting with the cookie left alone: a redirect
// would send the visitor back to the refusal, round and round while the
// instances answering alternate.
func TestPassRevokedCopyPage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pageAt int  // the instance the page request reaches: 0 revoked
		learnt bool // instance 1 synced since the revoke
	}{
		{name: "the revoking instance", pageAt: 0, learnt: true},
		{name: "another that learnt of the revoke", pageAt: 1, learnt: true},
		{name: "another that has not synced since", pageAt: 1, learnt: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk, st := testclock.New(testclock.Start), memstore.New()
			var trs []*testRoom
			var hs []http.Handler
			for range 2 {
				tr := newTestRoomOn(t, clk, st, func(c *waitingroom.Config) {
					c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
					c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
				})
				trs, hs = append(trs, tr), append(hs, tr.handler(Forwarded, Pass{Secret: testPassSecret, Duration: 2 * time.Second}))
			}
			a := trs[0]
			a.sync()
			b := &passBrowser{}
			require.True(t, a.passGet(hs[0], b, "/", false).passed)
			kept := *b
			for _, tr := range trs {
				tr.sync()
			}
			clk.Add(500 * time.Millisecond)
			require.Equal(t, "revoked", a.passGet(hs[0], b, "/checkout/done", true).ticket)
			a.sync()
			if tc.learnt {
				trs[1].sync()
			}

			clk.Add(1600 * time.Millisecond)
			_, good := fronttest.CheckPass(kept.pass, cookieName, testPassSecret, clk.Now().Unix())
			require.False(t, good, "the copy's pass has expired")
			status := func() *httptest.ResponseRecorder {
				k := kept // a copy that keeps nothing the room sets
				return a.passGet(hs[0], &k, "/", false).w
			}
			require.Equal(t, http.StatusUnauthorized, status().Code, "refused: the slot is held, the new place waits")
			clk.Add(500 * time.Millisecond)
			w := status()
			require.Equal(t, http.StatusUnauthorized, w.Code)
			require.Empty(t, w.Header().Values("Set-Cookie"), "the new place's chance is not due: the cookie is left alone")

			r := authRequest(http.MethodGet, "http://127.0.0.1:8081/", map[string]string{
				"X-Forwarded-Method": http.MethodGet, "X-Forwarded-Uri": "/", "X-Forwarded-Host": "shop.example",
				"X-Forwarded-Proto": "https", ModeHeader: "page", CookieHeader: "",
			}, kept.cookie)
			p := httptest.NewRecorder()
			hs[tc.pageAt].ServeHTTP(p, r)
			assert.NotEqual(t, http.StatusTemporaryRedirect, p.Code, "redirected to %q", p.Header().Get("Location"))
			assert.Equal(t, http.StatusTooManyRequests, p.Code)
			assert.True(t, isWaiting(p), "the waiting page")
			assert.Empty(t, p.Header().Values("Set-Cookie"), "the cookie left alone")

			if tc.pageAt != 0 {
				// The page's instance lets the copy in on a request of its
				// own until the hold ends: only its page follows the refusal.
				k := kept
				assert.True(t, trs[tc.pageAt].passGet(hs[tc.pageAt], &k, "/", false).passed)
			}
		})
	}
}

package browser

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

const adminToken = "browser-admin-token-0123456789abcdef"

// virtualClock is the room's clock in TestAdminSignIn: the traffic moves
// it, nothing sleeps.
type virtualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *virtualClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *virtualClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// crowd is the traffic of TestAdminSignIn: visitors arriving every 10
// seconds, the waiting coming back at each refresh; one in seven never
// answers the challenge (and is parked), the others solve it; the
// admitted do not come back, so their sessions end after a minute.
type crowd struct {
	t       *testing.T
	room    *waitingroom.Room
	clk     *virtualClock
	app     http.Handler
	waiting []*walker
	n       int
}

// walker is one visitor of the crowd.
type walker struct {
	cookie string
	honest bool
	answer string // the answer to send with the next request
}

// step moves the clock 10 s: arrivals new visitors come, the waiting come
// back, and the room syncs.
func (c *crowd) step(arrivals int) {
	c.clk.Add(10 * time.Second)
	for range arrivals {
		c.n++
		c.waiting = append(c.waiting, &walker{honest: c.n%7 != 0})
	}
	still := c.waiting[:0]
	for _, v := range c.waiting {
		if !c.visit(v) {
			still = append(still, v)
		}
	}
	c.waiting = still
	require.NoError(c.t, c.room.Sync(context.Background()))
}

// visit sends v's request as a JSON client and reports whether it was let
// in.
func (c *crowd) visit(v *walker) bool {
	r := httptest.NewRequest(http.MethodGet, "http://shop.test/", nil)
	r.Header.Set("Accept", "application/json")
	if v.cookie != "" {
		r.Header.Set("Cookie", v.cookie)
	}
	if v.answer != "" {
		r.Header.Set(challenge.Header, v.answer)
		v.answer = ""
	}
	w := httptest.NewRecorder()
	c.app.ServeHTTP(w, r)
	for _, ck := range w.Result().Cookies() {
		v.cookie = ck.Name + "=" + ck.Value
	}
	if w.Body.String() == "app" {
		return true
	}
	var page struct {
		WaitingRoom struct {
			ChallengePuzzle string `json:"challengePuzzle"`
		} `json:"waitingRoom"`
	}
	require.NoError(c.t, json.Unmarshal(w.Body.Bytes(), &page), w.Body.String())
	if p := page.WaitingRoom.ChallengePuzzle; v.honest && p != "" {
		a, err := challenge.Solve(context.Background(), p)
		require.NoError(c.t, err)
		v.answer = a
	}
	return false
}

// TestAdminSignIn signs in to the status page through its form in
// Chromium, as an operator does without a bearer token: a wrong token
// gets the form again, the right one a session cookie (HttpOnly,
// SameSite=Strict, the admin prefix's path) and the page, with the queue
// by arrival minute drawn (empty, then a queue), the series of the
// chart visible where they are equal (active = admitted per minute =
// the limit), and the warning that the challenge parks visitors; then
// signing out. Screenshots admin-signin-light.png and
// admin-status-desktop-light.png go to WAITINGROOM_SCREENSHOTS.
func TestAdminSignIn(t *testing.T) {
	ctx := newBrowser(t, allowThirdParty)
	clk := &virtualClock{t: time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)}
	room, err := waitingroom.New(waitingroom.Config{
		Name:            "launch",
		Settings:        waitingroom.Settings{TotalActiveUsers: 30, NewUsersPerMinute: 30, SessionDuration: time.Minute},
		Keys:            [][]byte{testKey},
		SyncInterval:    -1,
		RefreshInterval: 10 * time.Second,
		RefreshJitter:   -1,
		Now:             clk.Now,
		Logger:          slog.New(slog.DiscardHandler),
	}, memstore.New())
	require.NoError(t, err)
	t.Cleanup(func() { _ = room.Close() })
	require.NoError(t, room.Sync(context.Background()))
	auth, err := admin.BearerToken(adminToken)
	require.NoError(t, err)
	h, err := admin.Handler(room, auth, admin.SignIn(adminToken))
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	dir := os.Getenv("WAITINGROOM_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	shoot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		writeShot(t, dir, name, png)
	}
	js := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		require.NoError(t, err, expr)
		return v
	}
	eventually := func(expr, what string) {
		t.Helper()
		require.Eventually(t, func() bool {
			v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
			return err == nil && v
		}, patience, 50*time.Millisecond, what)
	}
	// signIn fills the form's field with token and clicks its button: the
	// browser posts the form as it would an operator's (same origin).
	signIn := func(token string) {
		t.Helper()
		js(`(function (f) { f.elements.token.value = ` + strconv.Quote(token) + `; f.querySelector('button').click(); return ''; })(document.forms[0])`)
	}
	view := func(width, height int64) {
		t.Helper()
		_, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: width, Height: height, DeviceScaleFactor: 1})
		require.NoError(t, err)
	}
	_, err = chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}},
	})
	require.NoError(t, err)

	// Without credentials: the form. A wrong token: the form again.
	view(560, 420)
	navigate(t, ctx, srv.URL+"/admin/")
	waitPage(t, ctx, `type="password"`)
	signIn("not-the-token-0123456789abcdef")
	waitPage(t, ctx, "Wrong token.")
	shoot("admin-signin-light.png")

	// The right token: the status page, on a session cookie.
	signIn(adminToken)
	waitPage(t, ctx, `<span id="room">launch</span>`)
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{srv.URL + "/admin/"}})
	require.NoError(t, err)
	require.Len(t, res.Cookies, 1, "the session cookie only")
	c := res.Cookies[0]
	assert.Equal(t, admin.SessionCookie, c.Name)
	assert.True(t, c.HTTPOnly)
	assert.Equal(t, network.CookieSameSiteStrict, c.SameSite)
	assert.Equal(t, "/admin/", c.Path)
	assert.False(t, c.Secure, "plain HTTP")
	assert.InDelta(t, float64(time.Now().Add(admin.SessionLifetime).Unix()), float64(c.Expires), 60)
	assert.Equal(t, "", js(`document.cookie`), "out of the page's scripts' reach")

	// Nobody waits yet: the queue's chart is empty and the line below
	// it says so, once.
	eventually(`!!document.querySelector('#queue svg') && !document.querySelector('#queue svg rect')`, "the empty queue drawn")
	assert.Equal(t, "Nobody is waiting.", js(`document.getElementById('queueSummary').textContent`))

	// Forty minutes of a crowd, 30 arrivals a minute for 30 places:
	// active, admitted per minute and the limit at one value; for the last
	// ten, a proof of work challenge that parks those who never answer
	// it, one in seven.
	cr := &crowd{t: t, room: room, clk: clk, app: room.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "app")
	}))}
	for i := range 240 {
		if i == 180 {
			require.NoError(t, room.Update(context.Background(), func(s *waitingroom.Settings) {
				s.Challenge = &challenge.Policy{Kind: challenge.PoW, OnFail: challenge.Infinite, Difficulty: 8}
			}))
		}
		cr.step(5)
	}
	st := room.Stats()
	require.Positive(t, st.Waiting)
	require.Positive(t, st.Counters.ChallengesParked)
	t.Logf("active %d, waiting %d in %d minutes, admitted this minute %d, parked %d, passed %d",
		st.Active, st.Waiting, len(st.Buckets), st.AdmittedThisMinute, st.Counters.ChallengesParked, st.Counters.ChallengesPassed)

	view(1100, 1090)
	navigate(t, ctx, srv.URL+"/admin/")
	eventually(`document.querySelectorAll('#queue rect.bar').length > 0`, "the queue drawn")
	summary := js(`document.getElementById('queueSummary').textContent`)
	assert.Contains(t, summary, strconv.Itoa(st.Waiting)+" waiting")
	bars, err := strconv.Atoi(js(`String(document.querySelectorAll('#queue rect.bar').length)`))
	require.NoError(t, err)
	assert.Equal(t, len(st.Buckets), bars, "a bar per arrival minute")

	// Each series of the chart is drawn and marked in a style of its own,
	// so that equal series stay visible.
	for _, s := range []string{"limit", "admitted", "waiting", "active"} {
		assert.Equal(t, "true", js(`String(document.querySelectorAll('#chart polyline.s.`+s+`').length > 0 && document.querySelectorAll('#chart .m.`+s+`').length > 0)`), s)
	}
	styles := js(`['limit', 'admitted', 'waiting', 'active'].map(function (s) {
		var cs = getComputedStyle(document.querySelector('#chart polyline.s.' + s));
		return cs.strokeWidth + ' ' + cs.strokeDasharray;
	}).join('|')`)
	seen := map[string]bool{}
	for _, s := range strings.Split(styles, "|") {
		assert.False(t, seen[s], "a style of its own: %s", styles)
		seen[s] = true
	}

	// More visitors parked while the page watches: the warning says so.
	assert.Contains(t, js(`document.getElementById('parked').textContent`), "parked by the challenge")
	for range 3 {
		cr.step(5)
	}
	eventually(`document.getElementById('parked').className === 'warn'`, "the warning that visitors are being parked")
	assert.Contains(t, js(`document.getElementById('parked').textContent`), "Visitors are being parked by the challenge")
	assert.Empty(t, js(`document.getElementById('error').textContent`))
	shoot("admin-status-desktop-light.png")

	// Signing out: the form again, and the page asks for it.
	js(`document.querySelector('#signout button').click(), ''`)
	waitPage(t, ctx, "Signed out.")
	res, err = chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{srv.URL + "/admin/"}})
	require.NoError(t, err)
	assert.Empty(t, res.Cookies)
	navigate(t, ctx, srv.URL+"/admin/")
	waitPage(t, ctx, `type="password"`)
}

package browser

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// chromium is where the tests expect the browser.
const chromium = "/usr/bin/chromium"

// requireEnv turns a missing browser into a failure (CI sets it).
const requireEnv = "WAITINGROOM_REQUIRE_SERVICES"

// patience bounds every wait for the browser: generous, because the
// machine may be busy, and never spent unless something is wrong.
const patience = 20 * time.Second

var testKey = []byte("browser test key, 32 bytes or more, tests only")

// thirdPartyCookies is a browser profile's policy for cookies of sites
// embedded in another site.
type thirdPartyCookies int

const (
	// allowThirdParty is Chrome's default for most people.
	allowThirdParty thirdPartyCookies = iota
	// blockThirdParty is Safari's default, Chrome's in private windows and
	// that of some Chromium builds.
	blockThirdParty
)

// newBrowser starts a headless Chromium with a profile of its own for the
// test, and returns a context for its first tab. Every host name under
// .test resolves to 127.0.0.1, so that test servers can be different sites.
func newBrowser(t *testing.T, cookies thirdPartyCookies) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("Chromium is required (%s=1) but missing: %v", requireEnv, err)
		}
		t.Skipf("skipping: no Chromium at %s (apt-get install -y chromium); set %s=1 to make this a failure", chromium, requireEnv)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(profile(t, cookies)),
		chromedp.IgnoreCertErrors, // the test servers' certificates are their own
		chromedp.Flag("host-resolver-rules", "MAP *.test 127.0.0.1"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser to exit, before its profile is removed
	})
	require.NoError(t, chromedp.Do(ctx), "starting Chromium")
	return ctx
}

// profile returns a new, empty Chromium profile directory with the policy
// for third-party cookies.
func profile(t *testing.T, cookies thirdPartyCookies) string {
	t.Helper()
	dir := t.TempDir()
	// cookie_controls_mode: 0 allows third-party cookies, 1 blocks them.
	// A new profile of this Chromium build blocks them.
	mode, block := 0, false
	if cookies == blockThirdParty {
		mode, block = 1, true
	}
	prefs := fmt.Sprintf(`{"profile":{"cookie_controls_mode":%d,"block_third_party_cookies":%t}}`, mode, block)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "Default"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Default", "Preferences"), []byte(prefs), 0o600))
	return dir
}

// hit is one request a site served.
type hit struct {
	cookie bool   // it carried the room's cookie
	app    bool   // the application answered it (the room let it in)
	dest   string // Sec-Fetch-Dest: document, iframe
}

// site is a room in front of a small application, served by an httptest
// server, that records every request.
type site struct {
	room *waitingroom.Room
	srv  *httptest.Server
	url  string // how the browser reaches it

	mu   sync.Mutex
	hits []hit
}

const (
	roomName       = "browser"
	cookieName     = "__waitingroom_" + roomName
	waitingHeading = "Thank you for waiting"
	appHeading     = "Welcome to the shop"
)

// appPage is the application's page. Its script shows whether JavaScript
// ran.
const appPage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Shop</title></head>
<body><h1>` + appHeading + `</h1><p>JavaScript: <span id="js">off</span></p>
<script>document.getElementById("js").textContent = "on"</script></body></html>
`

// newSite serves a room that queues everyone (QueueAll) and refreshes its
// waiting page every second (the floor); letIn opens it. With host "" the
// site is plain HTTP on 127.0.0.1; otherwise it is HTTPS, reached as host.
func newSite(t *testing.T, host string) *site {
	t.Helper()
	return newSiteWith(t, host, waitingroom.Settings{
		TotalActiveUsers:  1,
		NewUsersPerMinute: 1,
		QueueAll:          true,
	})
}

// newSiteWith is newSite with the room's settings.
func newSiteWith(t *testing.T, host string, settings waitingroom.Settings) *site {
	t.Helper()
	room, err := waitingroom.New(waitingroom.Config{
		Name:            roomName,
		Settings:        settings,
		Keys:            [][]byte{testKey},
		RefreshInterval: time.Second,
		RefreshJitter:   -1,
		SyncInterval:    -1,
		Cookie:          waitingroom.CookieOptions{Secure: host != ""},
		Logger:          slog.New(slog.DiscardHandler),
	}, memstore.New())
	require.NoError(t, err)
	t.Cleanup(func() { _ = room.Close() })
	require.NoError(t, room.Sync(context.Background()))

	s := &site{room: room}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("revoke") {
			w.Header().Set(waitingroom.CommandHeader, "revoke")
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("X-App", "1") // tells the recorder below who answered
		_, _ = io.WriteString(w, appPage)
	})
	guarded := room.Handler(app)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r) // favicon.ico
			return
		}
		guarded.ServeHTTP(w, r)
		s.record(r, w.Header().Get("X-App") != "")
	})
	if host == "" {
		s.srv = httptest.NewServer(h)
		s.url = s.srv.URL + "/"
	} else {
		s.srv = httptest.NewTLSServer(h)
		s.url = strings.Replace(s.srv.URL, "127.0.0.1", host, 1) + "/"
	}
	t.Cleanup(s.srv.Close)
	return s
}

func (s *site) record(r *http.Request, app bool) {
	_, err := r.Cookie(cookieName)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits = append(s.hits, hit{cookie: err == nil, app: app, dest: r.Header.Get("Sec-Fetch-Dest")})
}

// count returns the number of requests that match.
func (s *site) count(match func(hit) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.hits {
		if match(h) {
			n++
		}
	}
	return n
}

func (s *site) snapshot() []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hit(nil), s.hits...)
}

// letIn ends QueueAll, so that the next visitor due gets the slot.
func (s *site) letIn(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.room.Update(ctx, func(st *waitingroom.Settings) { st.QueueAll = false }))
	require.NoError(t, s.room.Sync(ctx))
}

// waitHits waits until the site has served n requests that match.
func (s *site) waitHits(t *testing.T, n int, what string, match func(hit) bool) {
	t.Helper()
	if !assert.Eventually(t, func() bool { return s.count(match) >= n }, patience, 50*time.Millisecond) {
		t.Fatalf("waited for %d requests: %s; the site saw %+v", n, what, s.snapshot())
	}
}

// pageHTML returns the tab's document as HTML, read through the DOM domain
// so that it works with JavaScript disabled.
func pageHTML(ctx context.Context) (string, error) {
	depth := int64(-1)
	doc, err := chromedp.Call(ctx, dom.GetDocument, dom.GetDocumentParams{Depth: &depth})
	if err != nil {
		return "", err
	}
	res, err := chromedp.Call(ctx, dom.GetOuterHTML, dom.GetOuterHTMLParams{NodeID: doc.Root.NodeID})
	if err != nil {
		return "", err
	}
	return res.OuterHTML, nil
}

// waitPage waits until the tab's document contains want, and returns it.
// The page may be navigating meanwhile; reading it then fails, and is
// tried again.
func waitPage(t *testing.T, ctx context.Context, want string) string {
	t.Helper()
	var last string
	ok := assert.Eventually(t, func() bool {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		html, err := pageHTML(c)
		if err != nil {
			return false
		}
		last = html
		return strings.Contains(html, want)
	}, patience, 50*time.Millisecond)
	if !ok {
		t.Fatalf("the page never showed %q; it last was:\n%s", want, last)
	}
	return last
}

func navigate(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	require.NoError(t, chromedp.Do(c, chromedp.Navigate(url)), "navigating to %s", url)
}

// browserCookie returns the room's cookie as the browser keeps it for url.
func browserCookie(t *testing.T, ctx context.Context, url string) *network.Cookie {
	t.Helper()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{url}})
	require.NoError(t, err)
	for _, c := range res.Cookies {
		if c.Name == cookieName {
			return c
		}
	}
	t.Fatalf("the browser has no %s cookie for %s; it has %v", cookieName, url, res.Cookies)
	return nil
}

func waitingWithCookie(h hit) bool { return !h.app && h.cookie }
func appWithCookie(h hit) bool     { return h.app && h.cookie }

// lastUpdated finds the default page's time of the last update: its
// datetime and its text.
var lastUpdated = regexp.MustCompile(`<time datetime="([^"]*)"[^>]*data-wr-time="lastUpdated"[^>]*>([^<]*)</time>`)

func TestQueuedVisitorIsLetIn(t *testing.T) {
	tests := []struct {
		name   string
		noJS   bool
		wantJS string
	}{
		{name: "JavaScript on", wantJS: "on"},
		{name: "JavaScript off: the meta refresh", noJS: true, wantJS: "off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := newBrowser(t, allowThirdParty)
			s := newSite(t, "")
			if tt.noJS {
				_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
				require.NoError(t, err)
			}

			navigate(t, ctx, s.url)
			page := waitPage(t, ctx, waitingHeading)
			if tt.noJS {
				// The time of the last update reads as a time of day in
				// UTC, not as an ISO string.
				m := lastUpdated.FindStringSubmatch(page)
				require.NotNil(t, m, "the time of the last update: %s", page)
				at, err := time.Parse(time.RFC3339, m[1])
				require.NoError(t, err)
				assert.Equal(t, at.UTC().Format("3:04 PM UTC"), m[2])
			}
			c := browserCookie(t, ctx, s.url)
			assert.True(t, c.HTTPOnly)
			assert.Equal(t, network.CookieSameSiteLax, c.SameSite)
			// The page refreshes itself, and each refresh carries the cookie.
			s.waitHits(t, 2, "refreshes of the waiting page with the cookie", waitingWithCookie)

			s.letIn(t)
			html := waitPage(t, ctx, appHeading)
			assert.Contains(t, html, `<span id="js">`+tt.wantJS+`</span>`)
			s.waitHits(t, 1, "the application, with the cookie", appWithCookie)
			assert.Equal(t, 1, s.count(func(h hit) bool { return !h.cookie }),
				"only the first request came without the cookie: %+v", s.snapshot())
		})
	}
}

func TestInIframe(t *testing.T) {
	tests := []struct {
		name        string
		outer, room string // host names
		cookies     thirdPartyCookies
	}{
		// SameSite=None; Secure (Cookie.Secure) lets the cookie into the
		// embedded page, where the browser allows third-party cookies.
		{name: "on another site", outer: "news.test", room: "shop.test", cookies: allowThirdParty},
		// The room's cookie is first-party on the same site, whatever the
		// browser thinks of third-party cookies.
		{name: "on another origin of the same site", outer: "www.example.test", room: "shop.example.test", cookies: blockThirdParty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := newBrowser(t, tt.cookies)
			s := newSite(t, tt.room)
			embedder := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprintf(w, `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>News</title></head>
<body><h1>News</h1><iframe src="%s" width="600" height="400" title="Shop"></iframe></body></html>
`, s.url)
			}))
			t.Cleanup(embedder.Close)
			outer := strings.Replace(embedder.URL, "127.0.0.1", tt.outer, 1) + "/"

			navigate(t, ctx, outer)
			// The iframe's page, and the JSON its script asks for.
			inFrame := func(h hit) bool { return h.dest == "iframe" || h.dest == "empty" }
			s.waitHits(t, 2, "refreshes of the waiting page in the iframe, with the cookie",
				func(h hit) bool { return inFrame(h) && waitingWithCookie(h) })
			c := browserCookie(t, ctx, s.url)
			assert.Equal(t, network.CookieSameSiteNone, c.SameSite)
			assert.True(t, c.Secure)

			s.letIn(t)
			s.waitHits(t, 1, "the application in the iframe, with the cookie",
				func(h hit) bool { return inFrame(h) && appWithCookie(h) })
			assert.Equal(t, s.count(func(hit) bool { return true }), s.count(inFrame),
				"every request to the room came from the iframe: %+v", s.snapshot())
			assert.Contains(t, waitPage(t, ctx, "<iframe"), "<h1>News</h1>", "the embedding page stays")
		})
	}
}

// A revoke deletes the visitor's cookie from the browser: over HTTPS the
// cookie is SameSite=None and partitioned (by the site it was set on),
// which only a deletion that says Partitioned too removes.
func TestRevokeDeletesTheCookie(t *testing.T) {
	for _, tt := range []struct {
		name, host  string
		partitioned bool
	}{
		{"plain HTTP: SameSite=Lax", "", false},
		{"HTTPS: SameSite=None, partitioned", "shop.test", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := newBrowser(t, allowThirdParty)
			s := newSiteWith(t, tt.host, waitingroom.Settings{TotalActiveUsers: 2, NewUsersPerMinute: 2})
			navigate(t, ctx, s.url)
			waitPage(t, ctx, appHeading)
			c := browserCookie(t, ctx, s.url)
			assert.Equal(t, tt.partitioned, c.PartitionKey != nil, "partitioned: %+v", c.PartitionKey)

			navigate(t, ctx, s.url+"?revoke")
			waitPage(t, ctx, appHeading)
			res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{s.url}})
			require.NoError(t, err)
			for _, c := range res.Cookies {
				assert.NotEqual(t, cookieName, c.Name, "the revoked cookie is still in the browser (partition %+v)", c.PartitionKey)
			}
			require.NoError(t, s.room.Sync(context.Background()))
			assert.Zero(t, s.room.Stats().Active, "the slot is free")
		})
	}
}

// busyRoom serves the default waiting page of a room in the given mode,
// with a queue: 10 visitors let in during the last 15 seconds and 120
// waiting, on a clock that stands still.
func busyRoom(t *testing.T, name string, method waitingroom.QueueingMethod) (*waitingroom.Room, *httptest.Server) {
	t.Helper()
	now := time.Date(2026, 3, 14, 12, 0, 30, 0, time.UTC)
	room, err := waitingroom.New(waitingroom.Config{
		Name: name,
		Settings: waitingroom.Settings{
			TotalActiveUsers:  100,
			NewUsersPerMinute: 10,
			QueueingMethod:    method,
		},
		Keys:          [][]byte{testKey},
		RefreshJitter: -1,
		SyncInterval:  -1,
		Now:           func() time.Time { return now },
		Logger:        slog.New(slog.DiscardHandler),
	}, memstore.New())
	require.NoError(t, err)
	t.Cleanup(func() { _ = room.Close() })
	ctx := context.Background()
	require.NoError(t, room.Sync(ctx))
	if method != waitingroom.Reject {
		fill := room.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "app") }))
		for i := range 130 {
			w := httptest.NewRecorder()
			fill.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
			require.Equal(t, i < 10, w.Body.String() == "app", "visitor %d", i)
		}
		now = now.Add(15 * time.Second)
		require.NoError(t, room.Sync(ctx))
	}
	srv := httptest.NewServer(room.Handler(http.NotFoundHandler()))
	t.Cleanup(srv.Close)
	return room, srv
}

func TestScreenshots(t *testing.T) {
	dir := os.Getenv("WAITINGROOM_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	ctx := newBrowser(t, allowThirdParty)

	states := []struct {
		name   string
		method waitingroom.QueueingMethod
	}{
		{name: "fifo", method: waitingroom.FIFO},
		{name: "random", method: waitingroom.Random},
		{name: "closed", method: waitingroom.Reject},
	}
	viewports := []struct {
		name          string
		width, height int64
		scale         float64
		mobile        bool
	}{
		{name: "desktop", width: 1280, height: 800, scale: 1},
		{name: "mobile", width: 360, height: 740, scale: 2, mobile: true},
	}
	for _, st := range states {
		room, srv := busyRoom(t, st.name, st.method)
		want := "This site is closed"
		if st.method != waitingroom.Reject {
			e := room.Stats().Estimate
			require.True(t, e.Known, "the queue has an estimate")
			want = e.Formatted("")
		}
		for _, vp := range viewports {
			for _, scheme := range []string{"light", "dark"} {
				name := fmt.Sprintf("%s-%s-%s.png", st.name, vp.name, scheme)
				t.Run(name, func(t *testing.T) {
					_, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
						Width: vp.width, Height: vp.height, DeviceScaleFactor: vp.scale, Mobile: vp.mobile,
					})
					require.NoError(t, err)
					_, err = chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
						Features: []*emulation.MediaFeature{
							{Name: "prefers-color-scheme", Value: scheme},
							{Name: "prefers-reduced-motion", Value: "reduce"}, // a still progress bar
						},
					})
					require.NoError(t, err)
					// Every shot is a new visitor's first page: a visitor
					// who comes back sees the estimate for their own place.
					_, err = chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{})
					require.NoError(t, err)
					navigate(t, ctx, srv.URL+"/")
					waitPage(t, ctx, want)
					png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
					require.NoError(t, err)
					writeShot(t, dir, name, png)
				})
			}
		}
	}
	t.Logf("screenshots in %s", dir)
}

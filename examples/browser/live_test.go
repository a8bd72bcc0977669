package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
)

// eval runs expr in the tab's page and returns its value.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// waitTrue waits until expr is true in the tab's page.
func waitTrue(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	ok := assert.Eventually(t, func() bool {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		v, err := chromedp.Run(c, chromedp.Evaluate[bool](expr))
		return err == nil && v
	}, patience, 50*time.Millisecond)
	if !ok {
		t.Fatalf("never true: %s", expr)
	}
}

func documents(h hit) bool { return h.dest == "document" || h.dest == "iframe" }
func fetched(h hit) bool   { return h.dest == "empty" }

// With JavaScript, the waiting page stays loaded: it asks the room for its
// JSON when the refresh is due, updates what changed in place, shows the
// time in the visitor's language, and navigates once the visitor is in.
func TestLivePage(t *testing.T) {
	ctx := newBrowser(t, allowThirdParty)
	s := newSiteWith(t, "", waitingroom.Settings{TotalActiveUsers: 2, NewUsersPerMinute: 2})
	// Others hold the slots.
	for range 2 {
		resp, err := http.Get(s.url)
		require.NoError(t, err)
		_ = resp.Body.Close()
	}
	require.Equal(t, 2, s.count(func(h hit) bool { return h.app }))

	// A visitor far from UTC: the page shows their time, not the room's.
	_, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/Los_Angeles"})
	require.NoError(t, err)
	navigate(t, ctx, s.url)
	served := lastUpdated.FindStringSubmatch(waitPage(t, ctx, waitingHeading))
	require.NotNil(t, served, "the time of the last update")
	eval[bool](t, ctx, `window.wrMark = true; document.getElementById("wr-status").firstElementChild.wrMark = true`)
	s.waitHits(t, 3, "the page's JSON, with the cookie", func(h hit) bool { return fetched(h) && waitingWithCookie(h) })
	assert.True(t, eval[bool](t, ctx, `window.wrMark === true`), "no navigation")
	assert.True(t, eval[bool](t, ctx, `document.getElementById("wr-status").firstElementChild.wrMark === true`),
		"a line that did not change stays as it is: the live region announces nothing")
	// Both at once: the page may update between two reads.
	iso, shown, _ := strings.Cut(eval[string](t, ctx, `(() => { const e = document.querySelector("time"); return e.getAttribute("datetime") + "|" + e.textContent })()`), "|")
	want := eval[string](t, ctx, fmt.Sprintf(`new Intl.DateTimeFormat("en", {hour: "numeric", minute: "2-digit", second: "2-digit", timeZoneName: "short"}).format(new Date(%q))`, iso))
	assert.Equal(t, want, shown, "the time in the visitor's language and zone, not %s", iso)
	assert.Regexp(t, `:\d\d (AM|PM) P[SD]T$`, shown, "the zone named")
	assert.NotContains(t, shown, "UTC", "the text the room wrote, %q, is replaced", served[2])
	at, err := time.Parse(time.RFC3339, iso)
	require.NoError(t, err)
	pacific, err := time.LoadLocation("America/Los_Angeles")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(shown, at.In(pacific).Format("3:04")), "%s in Los Angeles is %s", iso, shown)

	// What the room says changes: the page follows, in place.
	ctx2 := context.Background()
	require.NoError(t, s.room.Update(ctx2, func(st *waitingroom.Settings) { st.QueueAll = true }))
	require.NoError(t, s.room.Sync(ctx2))
	waitTrue(t, ctx, `document.getElementById("wr-status").textContent.trim() === "The site is not admitting anyone at the moment."`)
	assert.True(t, eval[bool](t, ctx, `window.wrMark === true`), "no navigation")
	assert.True(t, eval[bool](t, ctx, `document.querySelector("[data-wr-if='!isEventPrequeueing !queueAll']").hidden`), "the intro hidden: %s",
		eval[string](t, ctx, `document.querySelector("main").outerHTML`))
	assert.Equal(t, 1, s.count(func(h hit) bool { return documents(h) && !h.app }), "one page: %+v", s.snapshot())

	// Let in: the page navigates as a reload would.
	require.NoError(t, s.room.Update(ctx2, func(st *waitingroom.Settings) { st.QueueAll, st.TotalActiveUsers, st.NewUsersPerMinute = false, 3, 3 }))
	require.NoError(t, s.room.Sync(ctx2))
	html := waitPage(t, ctx, appHeading)
	assert.Contains(t, html, `<span id="js">on</span>`)
	s.waitHits(t, 1, "the application's page, with the cookie", func(h hit) bool { return documents(h) && appWithCookie(h) })
	assert.Equal(t, 1, s.count(func(h hit) bool { return documents(h) && !h.app }), "one waiting page: %+v", s.snapshot())
}

// embed serves, on a plain-HTTP or HTTPS server reached as host, a page of
// another site that shows src in an iframe, and returns its URL.
func embed(t *testing.T, host, src string, tls bool) string {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>News</title></head>
<body><h1>News</h1><iframe src="%s" width="600" height="500" title="Shop"></iframe></body></html>
`, src)
	})
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(h)
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return strings.Replace(srv.URL, "127.0.0.1", host, 1) + "/"
}

// The proof of work passes inside an iframe on another site over HTTPS:
// its answer's cookie is SameSite=None, Secure and Partitioned like the
// visitor cookie, which a browser that blocks third-party cookies keeps
// too.
func TestChallengeInCrossSiteIframe(t *testing.T) {
	for _, cookies := range []thirdPartyCookies{allowThirdParty, blockThirdParty} {
		t.Run(map[thirdPartyCookies]string{allowThirdParty: "third-party cookies allowed", blockThirdParty: "third-party cookies blocked"}[cookies], func(t *testing.T) {
			ctx := newBrowser(t, cookies)
			s := challengeSite(t, "shop.test")
			navigate(t, ctx, embed(t, "news.test", s.url, true))
			s.waitHits(t, 1, "the application in the iframe, with the cookie",
				func(h hit) bool { return h.dest == "iframe" && appWithCookie(h) })
			k := s.room.Stats().Counters
			assert.Equal(t, uint64(1), k.ChallengesPassed)
			assert.Zero(t, k.ChallengesFailed)
			assert.Equal(t, s.count(func(hit) bool { return true }), s.count(func(h hit) bool { return h.dest != "document" }),
				"every request to the room came from the iframe: %+v", s.snapshot())
		})
	}
}

// Over plain HTTP, the room's SameSite=Lax cookie cannot live inside an
// iframe on another site: the page says so, links to itself in a tab of
// its own, and asks nothing more (each request would be a new place).
func TestFramedWithoutCookie(t *testing.T) {
	ctx := newBrowser(t, allowThirdParty)
	s := newSite(t, "") // http://127.0.0.1:port: another site than news.test
	navigate(t, ctx, embed(t, "news.test", s.url, false))
	// The iframe of another site is a target of its own (site isolation).
	var frame context.Context
	require.Eventually(t, func() bool {
		targets, err := chromedp.Targets(ctx)
		if err != nil {
			return false
		}
		for _, tg := range targets {
			if tg.Type == "iframe" && tg.URL == s.url {
				frame, _ = chromedp.NewContext(ctx, chromedp.WithTargetID(tg.TargetID))
				return true
			}
		}
		return false
	}, patience, 50*time.Millisecond, "no iframe target")
	require.NoError(t, chromedp.Do(frame), "attaching to the iframe") // in frame's own context: a derived one's end would detach it
	waitTrue(t, frame, `document.querySelector("[data-wr-framed]").hidden === false`)
	notice := eval[string](t, frame, `document.querySelector("[data-wr-framed]").outerHTML`)
	assert.Contains(t, notice, `Your browser does not let this waiting room keep your place while it is shown inside another site.`)
	assert.Contains(t, notice, `<a href="`+s.url+`" target="_blank" rel="noopener" data-wr-self="">Open the waiting room in its own tab</a>`)
	assert.True(t, eval[bool](t, frame, `window.top !== window.self`))
	n := s.count(func(hit) bool { return true })
	time.Sleep(2500 * time.Millisecond) // the refresh is 1 s
	assert.Equal(t, n, s.count(func(hit) bool { return true }), "no more requests: %+v", s.snapshot())
	assert.Zero(t, s.count(func(h hit) bool { return h.cookie }), "the cookie never came back: %+v", s.snapshot())
}

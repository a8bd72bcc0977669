package browser

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/sim"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// TestAdminHistory drives the status page's history through Chromium: two
// hours of a simulated launch (a scheduled event with its pre-queue, a
// queue, visitors who give up) kept in the store, charted, reported and
// exported; and a screenshot of it (admin-history-desktop-light.png in
// WAITINGROOM_SCREENSHOTS).
func TestAdminHistory(t *testing.T) {
	ctx := newBrowser(t, allowThirdParty)
	start := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	st := memstore.New()
	t.Cleanup(func() { _ = st.Close() })
	event := waitingroom.Event{Name: "spring-drop", PrequeueStart: start.Add(20 * time.Minute), Start: start.Add(30 * time.Minute),
		End: start.Add(90 * time.Minute), TotalActiveUsers: 1000, NewUsersPerMinute: 150}
	res, err := sim.Run(context.Background(), sim.Options{
		Visitors: 9000, Arrival: sim.Uniform, Arrivals: 80 * time.Minute, Abandon: 0.01,
		NewUsersPerMinute: 100, TotalActiveUsers: 1000, Method: waitingroom.FIFO, Instances: 2,
		Store: st, Start: start, Duration: 120 * time.Minute, FirstEstimateOnly: true,
		Configure: func(c *waitingroom.Config) { c.Events = []waitingroom.Event{event} },
	})
	require.NoError(t, err)
	end := start.Add(120 * time.Minute)
	room, err := waitingroom.New(waitingroom.Config{
		Name: "sim", Settings: waitingroom.Settings{TotalActiveUsers: 1000, NewUsersPerMinute: 100, Events: []waitingroom.Event{event}}, Keys: [][]byte{testKey}, SyncInterval: -1,
		Now: func() time.Time { return end }, Logger: slog.New(slog.DiscardHandler),
	}, st)
	require.NoError(t, err)
	t.Cleanup(func() { _ = room.Close() })
	require.NoError(t, room.Sync(context.Background()))
	// The browser is let in by a cookie, as an SSO proxy's session would.
	auth := admin.Authenticator(func(r *http.Request) bool { c, err := r.Cookie("sso"); return err == nil && c.Value == "ok" })
	h, err := admin.Handler(room, auth)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	_, err = chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1280, Height: 1500, DeviceScaleFactor: 1})
	require.NoError(t, err)
	_, err = chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}},
	})
	require.NoError(t, err)
	navigate(t, ctx, srv.URL+"/admin/nothing")
	_, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie = "sso=ok; path=/"`))
	require.NoError(t, err)
	navigate(t, ctx, srv.URL+"/admin/?range=120")
	js := func(expr string) string {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
		require.NoError(t, err, expr)
		return v
	}
	require.Eventually(t, func() bool {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.getAttribute('data-history') || ''`))
		return err == nil && v == "loaded"
	}, patience, 50*time.Millisecond, "the history loads")

	reports := js(`document.querySelector('#reports tbody').textContent`)
	summary := js(`document.getElementById('hsummary').textContent`)
	lines, err := strconv.Atoi(js(`String(document.querySelectorAll('#hchart polyline').length)`))
	require.NoError(t, err)
	waitLines, err := strconv.Atoi(js(`String(document.querySelectorAll('#wchart polyline').length)`))
	require.NoError(t, err)
	assert.Contains(t, reports, "spring-drop", "a report for the event")
	assert.Contains(t, reports, "/ 150", "the event's limit")
	assert.GreaterOrEqual(t, lines, 4, "active, waiting, admitted and the setting")
	assert.GreaterOrEqual(t, waitLines, 2, "wait p50 and p90")
	assert.Contains(t, summary, "admitted")
	assert.Empty(t, js(`document.getElementById('herror').textContent`))
	t.Logf("history: %s; reports: %s; the run: %d admitted, %d gave up", summary, reports, res.Admitted, res.Abandoned)

	// The export link the page shows answers a CSV of the range, minute by
	// minute, with the browser's credentials.
	csvText := js(`fetch(document.getElementById('csv').href, {credentials: 'same-origin'}).then(r => r.text())`)
	rows := strings.Split(strings.TrimSpace(csvText), "\n")
	assert.True(t, strings.HasPrefix(rows[0], "minute,active,waiting,admitted"), rows[0])
	assert.Len(t, rows, 1+120, "a row a minute over two hours")

	t.Logf("reports: %s", js(`fetch('reports', {credentials: 'same-origin'}).then(r => r.text())`))
	t.Logf("csv: %s", strings.Join(rows[:3], "\n"))

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	dir := os.Getenv("WAITINGROOM_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	writeShot(t, dir, "admin-history-desktop-light.png", shot)
	t.Logf("screenshot in %s", dir)
}

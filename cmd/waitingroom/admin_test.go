package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/metrics"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// roomSeries matches the lines of the room's series in a text exposition:
// samples, HELP and TYPE.
var roomSeries = regexp.MustCompile(`(?m)^(# (HELP|TYPE) )?waitingroom_.*\n`)

// TestMetricsAreTheModules: the proxy's /metrics carries the room's series
// exactly as the metrics module's collector gives them to any program
// embedding a room (same names, help, types, labels and values, nothing
// more), before the first sync, with a FIFO queue and with a random one;
// plus the Go runtime's and the process's own series.
func TestMetricsAreTheModules(t *testing.T) {
	const token = "0123456789abcdef-admin"
	clk := testclock.New(testclock.Start)
	room, err := waitingroom.New(waitingroom.Config{
		Name: "shop",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  10,
			NewUsersPerMinute: 4,
		},
		Keys:         [][]byte{[]byte(strings.Repeat("k", 32))},
		SyncInterval: -1,
		Now:          clk.Now,
		Logger:       slog.New(slog.DiscardHandler),
	}, memstore.New())
	require.NoError(t, err)
	defer room.Close()
	admin, err := adminHandler(token, room, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	module := prometheus.NewRegistry()
	module.MustRegister(metrics.NewCollector(room))

	scrape := func(tok string) (*http.Response, string) {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		w := httptest.NewRecorder()
		admin.ServeHTTP(w, req)
		return w.Result(), w.Body.String()
	}
	// same scrapes the proxy and returns its exposition, having checked
	// that its room series are the module's.
	same := func(step string) string {
		t.Helper()
		resp, body := scrape(token)
		require.Equal(t, http.StatusOK, resp.StatusCode, step)
		assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"), step)
		assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain", step)

		mfs, err := module.Gather()
		require.NoError(t, err)
		var want bytes.Buffer
		enc := expfmt.NewEncoder(&want, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			require.NoError(t, enc.Encode(mf))
		}
		require.NotEmpty(t, want.String())
		assert.Equal(t, want.String(), strings.Join(roomSeries.FindAllString(body, -1), ""), "%s: the room's series are the metrics module's", step)
		for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_open_fds", "process_resident_memory_bytes"} {
			assert.Regexp(t, "(?m)^"+name+" ", body, "%s: %s", step, name)
		}
		return body
	}

	for _, tok := range []string{"", "wrong-token-wrong-token"} {
		resp, body := scrape(tok)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		assert.NotContains(t, body, "waitingroom_")
	}

	body := same("before the first sync")
	assert.NotContains(t, body, "waitingroom_last_sync_timestamp_seconds{", "no sync yet")
	assert.Contains(t, body, "\nwaitingroom_estimate_known{room=\"shop\"} 0\n")
	assert.NotContains(t, body, "waitingroom_estimated_wait_seconds{", "an unknown estimate is absent, never -1")

	ctx := context.Background()
	require.NoError(t, room.Sync(ctx))
	app := room.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "app") }))
	in := 0
	for range 7 {
		w := httptest.NewRecorder()
		app.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://example.com/", nil))
		if w.Body.String() == "app" {
			in++
		}
	}
	require.Equal(t, 4, in, "4 in, 3 wait")
	clk.Add(30 * time.Second)
	require.NoError(t, room.Sync(ctx))
	s := room.Stats()
	require.True(t, s.Estimate.Known)
	require.Positive(t, s.Estimate.Wait)

	body = same("FIFO, a queue")
	assert.Contains(t, body, "\nwaitingroom_last_sync_timestamp_seconds{room=\"shop\"} "+formatFloat(float64(clk.Now().Unix()))+"\n")
	assert.Contains(t, body, "\nwaitingroom_estimate_known{room=\"shop\"} 1\n")
	assert.Contains(t, body, "\nwaitingroom_estimated_wait_seconds{room=\"shop\"} "+formatFloat(s.Estimate.Wait.Seconds())+"\n")
	assert.Contains(t, body, "\nwaitingroom_waiting_visitors{room=\"shop\"} 3\n")
	assert.NotContains(t, body, "waitingroom_estimated_wait_percentile_seconds{")

	require.NoError(t, room.Update(ctx, func(s *waitingroom.Settings) { s.QueueingMethod = waitingroom.Random }))
	require.NoError(t, room.Sync(ctx))
	body = same("random, a queue")
	assert.Contains(t, body, "waitingroom_estimated_wait_percentile_seconds{percentile=\"75\",room=\"shop\"} ")
	assert.Contains(t, body, "\nwaitingroom_queueing_method{method=\"random\",room=\"shop\"} 1\n")
}

// formatFloat formats v as the text exposition does.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// TestAdminSignIn: on the admin address a browser gets the sign-in form
// for the status page, and the token it posts there a session that opens
// the status; /metrics stays behind the bearer token.
func TestAdminSignIn(t *testing.T) {
	const token = "0123456789abcdef-admin"
	room, err := waitingroom.New(waitingroom.Config{
		Name:         "shop",
		Settings:     waitingroom.Settings{TotalActiveUsers: 10, NewUsersPerMinute: 4},
		Keys:         [][]byte{[]byte(strings.Repeat("k", 32))},
		SyncInterval: -1,
		Logger:       slog.New(slog.DiscardHandler),
	}, memstore.New())
	require.NoError(t, err)
	defer room.Close()
	h, err := adminHandler(token, room, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	serve := func(r *http.Request) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Accept", "text/html")
	w := serve(r)
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Contains(t, w.Body.String(), `type="password"`)

	r = httptest.NewRequest(http.MethodPost, "/signin", strings.NewReader("token="+token))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w = serve(r)
	require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
	var session *http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == admin.SessionCookie {
			session = c
		}
	}
	require.NotNil(t, session)
	assert.Equal(t, "/", session.Path)

	for path, code := range map[string]int{"/status": http.StatusOK, "/metrics": http.StatusUnauthorized} {
		r = httptest.NewRequest(http.MethodGet, path, nil)
		r.AddCookie(session)
		assert.Equal(t, code, serve(r).Code, path)
	}
}

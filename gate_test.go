package waitingroom

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Gate decides as Handler does: the same visitors in, the same visitors
// waiting, bypass rules honoured, and a revoke through the response header
// frees the slot; only the request reaches the application as it came,
// without the ticket in its context.
func TestGate(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
		c.Bypass = []Rule{PathPrefix("/static/")}
	})
	var seen *http.Request
	revoke := false
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r
		_, ok := TicketFromContext(r.Context())
		assert.False(t, ok, "no ticket behind Gate")
		assert.False(t, Revoke(r.Context()), "Revoke finds nothing behind Gate")
		if revoke {
			w.Header().Set(CommandHeader, "revoke")
		}
		_, _ = io.WriteString(w, "app")
	})
	tr.app = tr.Gate(app)

	first, second := &visitor{}, &visitor{}
	require.True(t, admitted(tr.get(first, "")))
	require.NotNil(t, seen)
	tr.sync()
	assert.True(t, isWaiting(tr.get(second, "")), "the second visitor waits: one slot")

	// The admitted visitor's request reaches the application unchanged.
	r := first.request(http.MethodGet, "")
	w := httptest.NewRecorder()
	tr.app.ServeHTTP(w, r)
	require.Equal(t, "app", w.Body.String())
	assert.Same(t, r, seen, "the request goes on as it came")

	// Bypassed paths pass whoever asks.
	r = (&visitor{}).request(http.MethodGet, "")
	r.URL.Path = "/static/app.js"
	w = httptest.NewRecorder()
	tr.app.ServeHTTP(w, r)
	assert.Equal(t, "app", w.Body.String())

	// The revoke header ends the session and never reaches the client.
	revoke = true
	w = tr.get(first, "")
	revoke = false
	assert.Empty(t, w.Header().Values(CommandHeader))
	cs := w.Result().Cookies()
	require.Len(t, cs, 1)
	assert.Equal(t, -1, cs[0].MaxAge, "the cookie is cleared")
	tr.sync()
	assert.Zero(t, tr.Stats().Active, "the slot is free at once")
	tr.clk.Add(time.Minute)
	tr.sync()
	assert.True(t, admitted(tr.get(second, "")), "the slot went to the one waiting")
}

// A browser's parallel requests and copies of one cookie through Gate,
// one of them revoking: every request is answered, the session ends once,
// and its slot is free at the next sync (run with -race).
func TestGateParallelRevoke(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1 })
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/logout" {
			w.Header().Set(CommandHeader, "revoke")
		}
		_, _ = io.WriteString(w, "app")
	})
	tr.app = tr.Gate(app)
	v := &visitor{}
	require.True(t, admitted(tr.get(v, "")))
	tr.sync()
	require.Equal(t, 1, tr.Stats().Active)

	gate := tr.Gate(app)
	var wg sync.WaitGroup
	codes := make([]int, 12)
	for i := range codes {
		wg.Go(func() {
			r := v.request(http.MethodGet, "")
			if i == 5 {
				r.URL.Path = "/logout"
			}
			w := httptest.NewRecorder()
			gate.ServeHTTP(w, r)
			codes[i] = w.Code
			assert.Empty(t, w.Header().Values(CommandHeader))
		})
	}
	wg.Wait()
	for i, c := range codes {
		assert.Equal(t, http.StatusOK, c, "request %d", i)
	}
	tr.sync()
	assert.Zero(t, tr.Stats().Active, "the slot is free")
	assert.Equal(t, uint64(1), tr.Counters().Revoked, "revoked once")
	// The revoked cookie, resent, is a new visitor's: not let in past the
	// minute's one admission already spent.
	assert.False(t, admitted(tr.get(v, "")), "a revoked cookie does not pass again")
}

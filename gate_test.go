package waitingroom

import (
	"io"
	"net/http"
	"net/http/httptest"
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

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

// nextFunc is a Next built from a function.
type nextFunc func(http.ResponseWriter, *http.Request) error

func (f nextFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) error { return f(w, r) }

// ServeNext decides as Handler does and tells the server behind the
// ticket in a header it sets itself: the admitted visitor's, "bypassed",
// never the client's; the revoke header is obeyed; next's error comes
// back; the waiting page and a closed room's answer return nil.
func TestServeNext(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
		c.Bypass = []Rule{PathPrefix("/static/")}
	})
	var got *http.Request
	var fail error
	revoke := false
	next := nextFunc(func(w http.ResponseWriter, r *http.Request) error {
		got = r
		if revoke {
			w.Header().Set(CommandHeader, "revoke")
		}
		_, _ = io.WriteString(w, "app")
		return fail
	})
	serve := func(v *visitor, path string) (*httptest.ResponseRecorder, error) {
		r := v.request(http.MethodGet, "")
		r.URL.Path = path
		r.Header.Set(TicketHeader, "id=0000000000000001; bucket=2026-01-01T00:00:00Z; accepted=2026-01-01T00:00:00.000Z")
		w := httptest.NewRecorder()
		got = nil
		err := tr.ServeNext(w, r, next)
		for _, c := range w.Result().Cookies() {
			v.cookie = c.Name + "=" + c.Value
		}
		return w, err
	}

	first, second := &visitor{}, &visitor{}
	w, err := serve(first, "/")
	require.NoError(t, err)
	require.Equal(t, "app", w.Body.String())
	tk, ok := ParseTicket(got.Header.Get(TicketHeader))
	require.True(t, ok, "the admitted visitor's ticket: %q", got.Header.Get(TicketHeader))
	assert.NotEqual(t, uint64(1), tk.ID, "never the client's")
	assert.Len(t, got.Header.Values(TicketHeader), 1)
	tr.sync()

	w, err = serve(second, "/")
	require.NoError(t, err)
	assert.True(t, isWaiting(w), "one slot: the second waits")
	assert.Nil(t, got, "and never reaches next")

	_, err = serve(second, "/static/app.js")
	require.NoError(t, err)
	assert.Equal(t, "bypassed", got.Header.Get(TicketHeader))

	fail = io.ErrUnexpectedEOF
	_, err = serve(first, "/")
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "next's error comes back")
	fail = nil

	revoke = true
	w, err = serve(first, "/")
	revoke = false
	require.NoError(t, err)
	assert.Empty(t, w.Header().Values(CommandHeader))
	tr.sync()
	assert.Zero(t, tr.Stats().Active, "the revoke frees the slot")

	require.NoError(t, tr.Close())
	w, err = serve(first, "/")
	assert.NoError(t, err, "the closed room's answer is written")
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Nil(t, got)
}

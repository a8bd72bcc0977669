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

func TestRevoke(t *testing.T) {
	for _, tc := range []struct {
		name   string
		app    http.HandlerFunc
		revoke bool
	}{
		{"header", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(CommandHeader, "revoke")
			_, _ = io.WriteString(w, "bye")
		}, true},
		{"header, any case, implicit 200", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("waiting-room-command", " Revoke ")
		}, true},
		{"header with WriteHeader", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(CommandHeader, "revoke")
			w.WriteHeader(http.StatusNoContent)
		}, true},
		{"function", func(w http.ResponseWriter, r *http.Request) {
			if !Revoke(w) {
				panic("Revoke refused")
			}
			_, _ = io.WriteString(w, "bye")
		}, true},
		{"too late", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "streaming")
			if Revoke(w) {
				panic("Revoke after the response was written")
			}
		}, false},
		{"unknown command ignored", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(CommandHeader, "reboot")
		}, false},
		{"the product's header", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(productCommandHeader, "revoke")
			_, _ = io.WriteString(w, "bye")
		}, true},
		{"the product's header, any case, with WriteHeader", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("cf-waiting-room-command", "REVOKE")
			w.WriteHeader(http.StatusAccepted)
		}, true},
		{"the product's header, unknown command", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(productCommandHeader, "reboot")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1 })
			v := &visitor{}
			require.True(t, admitted(tr.get(v, "")))
			tr.sync()
			require.Equal(t, 1, tr.Stats().Active)

			tr.app = tr.Handler(tc.app)
			w := tr.get(v, "")
			assert.Empty(t, w.Header().Values(CommandHeader), "the command never reaches the client")
			assert.Empty(t, w.Header().Values(productCommandHeader), "nor the product's")
			tr.sync()
			if !tc.revoke {
				assert.Equal(t, 1, tr.Stats().Active)
				assert.Zero(t, tr.Stats().Counters.Revoked)
				return
			}
			cs := w.Result().Cookies()
			require.Len(t, cs, 1)
			assert.Equal(t, -1, cs[0].MaxAge, "the cookie is cleared")
			assert.Zero(t, tr.Stats().Active, "the slot is free at once")
			assert.Equal(t, uint64(1), tr.Stats().Counters.Revoked)
			// The slot goes to someone else (next minute's budget).
			tr.clk.Add(time.Minute)
			tr.sync()
			tr.app = tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("app")) }))
			assert.True(t, admitted(tr.get(&visitor{}, "")))
		})
	}
}

// A revoke's expired cookie has the attributes the cookie was set with:
// a browser deletes a partitioned cookie (SameSite=None) only with a
// header that says Partitioned, and one of another Path or Domain never.
func TestRevokeClearsTheCookieAsSet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cookie CookieOptions
	}{
		{"defaults", CookieOptions{}},
		{"https: SameSite=None, partitioned", CookieOptions{Secure: true}},
		{"strict, domain, path", CookieOptions{SameSite: http.SameSiteStrictMode, Domain: "example.com", Path: "/"}},
		{"secure, lax", CookieOptions{Secure: true, SameSite: http.SameSiteLaxMode}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) { c.Cookie = tc.cookie })
			w := tr.get(&visitor{}, "")
			require.True(t, admitted(w))
			set := w.Result().Cookies()
			require.Len(t, set, 1)
			tr.app = tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set(CommandHeader, "revoke")
			}))
			cs := tr.get(&visitor{cookie: set[0].Name + "=" + set[0].Value}, "").Result().Cookies()
			require.Len(t, cs, 1)
			got, want := *cs[0], *set[0]
			assert.Equal(t, -1, got.MaxAge, "expired")
			assert.Empty(t, got.Value)
			got.MaxAge, got.Value, got.Raw, want.Value, want.Raw = 0, "", "", "", ""
			assert.Equal(t, want, got, "the attributes it was set with")
		})
	}
}

// Revoke finds nothing to revoke outside Handler, nor behind it for a
// request that was not admitted.
func TestRevokeOutsideHandler(t *testing.T) {
	assert.False(t, Revoke(httptest.NewRecorder()))
	tr := newTestRoom(t, func(c *Config) { c.Bypass = []Rule{PathPrefix("/static/")} })
	var revoked, ticket bool
	h := tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ticket = TicketFrom(w)
		revoked = Revoke(w)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/static/app.js", nil))
	assert.False(t, ticket, "a bypassed request has no ticket")
	assert.False(t, revoked)
	assert.Zero(t, tr.Stats().Counters.Revoked)
}

// A browser's parallel requests and copies of one cookie through Handler,
// one of them revoking: every request is answered, the session ends once,
// and its slot is free at the next sync (run with -race).
func TestParallelRevoke(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1 })
	v := &visitor{}
	require.True(t, admitted(tr.get(v, "")))
	tr.sync()
	require.Equal(t, 1, tr.Stats().Active)

	h := tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/logout" {
			w.Header().Set(CommandHeader, "revoke")
		}
		_, _ = io.WriteString(w, "app")
	}))
	var wg sync.WaitGroup
	codes := make([]int, 12)
	for i := range codes {
		wg.Go(func() {
			r := v.request(http.MethodGet, "")
			if i == 5 {
				r.URL.Path = "/logout"
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
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
	assert.Equal(t, uint64(1), tr.Stats().Counters.Revoked, "revoked once")
	// The revoked cookie, resent, is a new visitor's: not let in past the
	// minute's one admission already spent.
	assert.False(t, admitted(tr.get(v, "")), "a revoked cookie does not pass again")
}

func TestAdmittedWriterPassesThrough(t *testing.T) {
	// Flushing and hijacking (WebSockets through the proxy) reach the real
	// writer.
	tr := newTestRoom(t, nil)
	var flushed, hijackErr error
	tr.app = tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_, _ = io.WriteString(w, "chunk")
		flushed = rc.Flush()
		_, _, hijackErr = rc.Hijack()
	}))
	w := tr.get(&visitor{}, "")
	assert.NoError(t, flushed)
	assert.True(t, w.Flushed)
	assert.ErrorIs(t, hijackErr, http.ErrNotSupported, "the recorder cannot hijack; the call reached it")
}

func TestCounters(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 2, 2 })
	for range 5 {
		tr.get(&visitor{}, "")
	}
	tr.sync()
	c := tr.Stats().Counters
	assert.Equal(t, uint64(2), c.Admitted)
	assert.Equal(t, uint64(3), c.Queued)
	assert.Equal(t, uint64(2), c.Syncs)
	assert.Zero(t, c.SyncErrors)
	assert.Positive(t, c.LastSyncSeconds)
}

// TestRevokedCookieReplayed: a client that keeps its cookie after a revoke
// and sends it again is a new visitor, counted if let in again, never an
// admitted visitor the room no longer counts. The revoked session is
// forgotten once none of its cookies could be presented any more.
func TestRevokedCookieReplayed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		revoke http.HandlerFunc
	}{
		{"header", func(w http.ResponseWriter, r *http.Request) { w.Header().Set(CommandHeader, "revoke") }},
		{"function", func(w http.ResponseWriter, r *http.Request) { Revoke(w) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 2, 2 })
			plain := tr.app
			v := &visitor{}
			require.True(t, admitted(tr.get(v, "")))
			saved := *v
			tr.app = tr.Handler(tc.revoke)
			tr.get(v, "")
			require.Equal(t, uint64(1), tr.Stats().Counters.Revoked)
			tr.sync()
			require.Zero(t, tr.Stats().Active)

			// The replay is a new visitor: let in (the minute's second
			// admission) with a cookie of its own, and counted.
			tr.app = plain
			replay := saved
			require.True(t, admitted(tr.get(&replay, "")))
			assert.NotEqual(t, saved.cookie, replay.cookie, "the replay is given a cookie of its own")
			tr.sync()
			assert.Equal(t, 1, tr.Stats().Active, "let in again, and counted")
			// Sent once more, the kept cookie is the same new visitor
			// as the first time: let in on that visitor's session, and
			// counted once.
			again := saved
			assert.True(t, admitted(tr.get(&again, "")))
			tr.sync()
			assert.Equal(t, 1, tr.Stats().Active, "one visitor, counted once")
			assert.Equal(t, uint64(2), tr.Stats().Counters.Admitted, "one admission for the two copies")

			tr.clk.Add(tr.cfg.SessionDuration + tr.cfg.QueueHold + time.Minute)
			tr.sync()
			assert.Zero(t, tr.revokedN.Load(), "forgotten once no cookie of the session could be presented")
		})
	}
}

package wrcaddy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/servicetest"
)

const hexKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

func TestUnmarshalCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Handler
		err      string
	}{
		{name: "every subdirective", in: `waitingroom {
			name shop
			total_active_users 200
			new_users_per_minute 100
			session_duration 10m
			refresh_interval 20s
			queue_hold 5m
			sync_interval 500ms
			queueing_method random
			queueing_status_code 429
			key ` + hexKey + ` ` + hexKey + `
			store redis://127.0.0.1:6379/0
			store_prefix wr:
			https
			cookie_domain shop.example
			cookie_path /
			language fr
			template page.mustache
			bypass /static/ /favicon.ico
		}`, want: Handler{
			Name: "shop", TotalActiveUsers: 200, NewUsersPerMinute: 100,
			SessionDuration: caddy.Duration(10 * time.Minute), RefreshInterval: caddy.Duration(20 * time.Second),
			QueueHold: caddy.Duration(5 * time.Minute), SyncInterval: caddy.Duration(500 * time.Millisecond),
			QueueingMethod: "random", QueueingStatusCode: 429, Keys: []string{hexKey, hexKey},
			Store: "redis://127.0.0.1:6379/0", StorePrefix: "wr:", HTTPS: true, CookieDomain: "shop.example", CookiePath: "/",
			Language: "fr", Template: "page.mustache", Bypass: []string{"/static/", "/favicon.ico"},
		}},
		{name: "empty", in: "waitingroom", want: Handler{}},
		{name: "argument", in: "waitingroom shop", err: "wrong argument count"},
		{name: "unknown", in: "waitingroom {\n\ttotal 3\n}", err: `unknown subdirective "total"`},
		{name: "not a number", in: "waitingroom {\n\ttotal_active_users many\n}", err: `want a whole number, got "many"`},
		{name: "two values", in: "waitingroom {\n\tname a b\n}", err: "name takes one value, got 2"},
		{name: "bad duration", in: "waitingroom {\n\tsession_duration soon\n}", err: "session_duration"},
		{name: "no key", in: "waitingroom {\n\tkey\n}", err: "at least one key"},
		{name: "https value", in: "waitingroom {\n\thttps yes\n}", err: "https takes no value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.in))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, h)
		})
	}
}

// provision provisions h in a Caddy context of its own, cleaned up at the
// end of the test.
func provision(t *testing.T, h *Handler) {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	require.NoError(t, h.Provision(ctx))
	t.Cleanup(func() { assert.NoError(t, h.Cleanup()) })
}

// app is the rest of Caddy's chain: it answers with the ticket header it
// got.
var app = caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
	_, err := io.WriteString(w, "app "+r.Header.Get(waitingroom.TicketHeader))
	return err
})

// client keeps its cookie.
type client struct{ cookie string }

func (c *client) get(h *Handler, path string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.Header.Set("Accept", "text/html")
	r.Header.Set(waitingroom.TicketHeader, "forged")
	if c.cookie != "" {
		r.Header.Set("Cookie", c.cookie)
	}
	w := httptest.NewRecorder()
	_ = h.ServeHTTP(w, r, app)
	for _, ck := range w.Result().Cookies() {
		c.cookie = ck.Name + "=" + ck.Value
	}
	return w
}

// The handler decides as the library does, in Caddy's process: the
// limits, the page, bypass paths, the ticket for the next handler, and a
// store shared by two handlers (two Caddy instances) for Redis.
func TestHandler(t *testing.T) {
	stores := []struct {
		name  string
		store func(t *testing.T) (url, prefix string)
	}{
		{"memory", func(*testing.T) (string, string) { return "memory", "" }},
		{"redis", func(t *testing.T) (string, string) {
			url := servicetest.Redis.URL()
			opts, err := redis.ParseURL(url)
			require.NoError(t, err)
			c := redis.NewClient(opts)
			defer c.Close()
			if err := c.Ping(context.Background()).Err(); err != nil {
				servicetest.Unavailable(t, servicetest.Redis, err)
			}
			return url, randomPrefix()
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			url, prefix := st.store(t)
			newHandler := func() *Handler {
				h := &Handler{Name: "caddy-" + st.name, TotalActiveUsers: 1, NewUsersPerMinute: 1, Keys: []string{hexKey},
					Store: url, StorePrefix: prefix, SyncInterval: caddy.Duration(50 * time.Millisecond), Bypass: []string{"/static/"}}
				provision(t, h)
				return h
			}
			a, b := newHandler(), newHandler()
			if st.name == "memory" {
				b = a // a memory store is this process's: one instance
			}
			first, second := &client{}, &client{}
			w := first.get(a, "/")
			require.Equal(t, http.StatusOK, w.Code)
			tk, ok := waitingroom.ParseTicket(w.Body.String()[len("app "):])
			require.True(t, ok, "the next handler gets the ticket, not the client's header: %q", w.Body.String())
			assert.NotZero(t, tk.ID)

			require.Eventually(t, func() bool { return b.Room().Stats().Active == 1 }, 5*time.Second, 20*time.Millisecond)
			w = second.get(b, "/")
			assert.Equal(t, http.StatusOK, w.Code, "the waiting page's status is QueueingStatusCode's")
			assert.NotEmpty(t, w.Header().Get("Refresh"))
			assert.Contains(t, w.Body.String(), "<html")
			assert.NotContains(t, w.Body.String(), "app ")

			assert.Contains(t, first.get(b, "/").Body.String(), "app id=", "the admitted visitor passes on either instance")
			assert.Equal(t, "app bypassed", second.get(b, "/static/x.css").Body.String())
		})
	}
}

func randomPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "wrcaddy-test-" + hex.EncodeToString(b[:]) + ":"
}

// The key and the store's address may come from the environment, as
// {env.NAME} placeholders filled at provision.
func TestProvisionFromEnvironment(t *testing.T) {
	t.Setenv("WRCADDY_TEST_KEY", hexKey)
	t.Setenv("WRCADDY_TEST_STORE", "memory")
	h := &Handler{Name: "caddy-env", TotalActiveUsers: 1, NewUsersPerMinute: 1, Keys: []string{"{env.WRCADDY_TEST_KEY}"}, Store: "{env.WRCADDY_TEST_STORE}"}
	provision(t, h)
	var c client
	w := c.get(h, "/")
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), "app id=")
}

func TestProvisionErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    Handler
		err  string
	}{
		{"no key", Handler{TotalActiveUsers: 1, NewUsersPerMinute: 1}, "key"},
		{"bad key", Handler{TotalActiveUsers: 1, NewUsersPerMinute: 1, Keys: []string{"!!"}}, "neither hex nor base64"},
		{"no limits", Handler{Keys: []string{hexKey}}, "TotalActiveUsers"},
		{"bad store", Handler{TotalActiveUsers: 1, NewUsersPerMinute: 1, Keys: []string{hexKey}, Store: "postgres://u:secret@h/db"}, "want memory, redis://"},
		{"bad template", Handler{TotalActiveUsers: 1, NewUsersPerMinute: 1, Keys: []string{hexKey}, Template: "/nonexistent.mustache"}, "template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			err := tc.h.Provision(ctx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			assert.NotContains(t, err.Error(), "secret", "no password in errors")
		})
	}
}

// The next handler ends a session as behind Room.Handler, whichever way it
// asks: the response header (the product's name too), or Revoke with its
// writer, which carries the ticket of the request header. The
// slot is free at once, the cookie cleared, and the header never leaves.
func TestHandlerRevoke(t *testing.T) {
	for _, tc := range []struct {
		name   string
		revoke func(t *testing.T, w http.ResponseWriter, r *http.Request)
	}{
		{"header", func(_ *testing.T, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set(waitingroom.CommandHeader, "revoke")
		}},
		{"product header", func(_ *testing.T, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Cf-Waiting-Room-Command", "revoke")
		}},
		{"Revoke", func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			tk, ok := waitingroom.TicketFrom(w)
			require.True(t, ok)
			assert.Equal(t, tk.String(), r.Header.Get(waitingroom.TicketHeader))
			assert.True(t, waitingroom.Revoke(w))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Handler{Name: "caddy-revoke", TotalActiveUsers: 1, NewUsersPerMinute: 1, Keys: []string{hexKey},
				SyncInterval: caddy.Duration(time.Hour), Bypass: []string{"/static/"}}
			provision(t, h)
			revoke := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
				tc.revoke(t, w, r)
				_, err := io.WriteString(w, "bye")
				return err
			})
			c := &client{}
			require.Equal(t, http.StatusOK, c.get(h, "/").Code)
			r := httptest.NewRequest(http.MethodGet, "/done", nil)
			r.Header.Set("Cookie", c.cookie)
			w := httptest.NewRecorder()
			require.NoError(t, h.ServeHTTP(w, r, revoke))
			assert.Equal(t, "bye", w.Body.String())
			assert.Empty(t, w.Header().Values(waitingroom.CommandHeader))
			assert.Empty(t, w.Header().Values("Cf-Waiting-Room-Command"))
			cleared := w.Result().Cookies()
			require.Len(t, cleared, 1)
			assert.Equal(t, -1, cleared[0].MaxAge, "the cookie is cleared")
			require.NoError(t, h.Room().Sync(context.Background()))
			assert.Zero(t, h.Room().Stats().Active, "the slot is free")
			assert.Equal(t, uint64(1), h.Room().Stats().Counters.Revoked)
		})
	}

	// An error of the next handler goes back to Caddy.
	h := &Handler{Name: "caddy-error", TotalActiveUsers: 1, NewUsersPerMinute: 1, Keys: []string{hexKey},
		SyncInterval: caddy.Duration(time.Hour), Bypass: []string{"/static/"}}
	provision(t, h)
	boom := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return io.ErrUnexpectedEOF })
	assert.ErrorIs(t, h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/static/x", nil), boom), io.ErrUnexpectedEOF)
	assert.ErrorIs(t, h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil), boom), io.ErrUnexpectedEOF, "an admitted request's too")
}

// BenchmarkServeHTTP is an admitted visitor's request through the handler
// (h=room) beside the next handler alone (h=bare).
func BenchmarkServeHTTP(b *testing.B) {
	h := &Handler{Name: "caddy-bench", TotalActiveUsers: 1000, NewUsersPerMinute: 1000, Keys: []string{hexKey}}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	require.NoError(b, h.Provision(ctx))
	defer h.Cleanup()
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error { return nil })
	c := &client{}
	c.get(h, "/")
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Cookie", c.cookie)
	w := httptest.NewRecorder()
	b.Run("h=bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = next.ServeHTTP(w, r)
		}
	})
	b.Run("h=room", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = h.ServeHTTP(w, r, next)
		}
	})
}

package waitingroom

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTicketFromTheWriter: the ticket Handler's writer carries for an
// admitted request is its decision's, for a cookie opened afresh and for
// one the room remembers, and the writer lets the application revoke;
// once revoked, the cookie is a new visitor's.
func TestTicketFromTheWriter(t *testing.T) {
	tr := newTestRoom(t, nil)
	v := &visitor{}
	var (
		inHandler Ticket
		revoked   bool
	)
	tr.app = tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ok bool
		inHandler, ok = TicketFrom(w)
		require.True(t, ok)
		if r.URL.Query().Has("revoke") {
			revoked = Revoke(w)
		}
		_, _ = w.Write([]byte("app"))
	}))
	require.True(t, admitted(tr.get(v, "")))
	first := inHandler
	for range 2 { // opened, then remembered
		d, err := tr.checkRequest(v.request(http.MethodGet, ""))
		require.NoError(t, err)
		require.Equal(t, outcomeAdmitted, d.Outcome)
		assert.Equal(t, first, d.state.ticket())
		require.True(t, admitted(tr.get(v, "")))
		assert.Equal(t, first, inHandler)
	}

	w := tr.get(&visitor{cookie: v.cookie}, "")
	require.True(t, admitted(w))
	r := v.request(http.MethodGet, "")
	r.URL.RawQuery = "revoke"
	tr.app.ServeHTTP(w, r)
	assert.True(t, revoked, "Revoke works on Handler's writer")
	d, err := tr.checkRequest(v.request(http.MethodGet, ""))
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, d.state.id, "the session is over: the cookie is a new visitor's")
}

// TestTicketThroughMiddleware: middleware between Handler and the
// application that wraps the writer hides neither the ticket nor Revoke
// when its writer unwraps (as http.ResponseController asks), however deep;
// behind one that does not, TicketFrom and Revoke find nothing and say so,
// and the revoke command header still ends the session.
func TestTicketThroughMiddleware(t *testing.T) {
	for _, tc := range []struct {
		name  string
		wrap  func(http.ResponseWriter) http.ResponseWriter
		found bool
	}{
		{"as it came", func(w http.ResponseWriter) http.ResponseWriter { return w }, true},
		{"one wrapper that unwraps", func(w http.ResponseWriter) http.ResponseWriter { return unwrapping{w} }, true},
		{"three that unwrap", func(w http.ResponseWriter) http.ResponseWriter { return unwrapping{unwrapping{unwrapping{w}}} }, true},
		{"one that does not", func(w http.ResponseWriter) http.ResponseWriter { return opaque{w} }, false},
		{"one that does not under one that does", func(w http.ResponseWriter) http.ResponseWriter { return unwrapping{opaque{w}} }, false},
		{"a recorder of its own", func(http.ResponseWriter) http.ResponseWriter { return httptest.NewRecorder() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, nil)
			v := &visitor{}
			var (
				ticket       Ticket
				found, ended bool
			)
			tr.app = tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inner := tc.wrap(w)
				ticket, found = TicketFrom(inner)
				if r.URL.Query().Has("revoke") {
					if ended = Revoke(inner); !ended {
						w.Header().Set(CommandHeader, "revoke")
					}
				}
				_, _ = w.Write([]byte("app"))
			}))
			require.True(t, admitted(tr.get(v, "")))
			d, err := tr.checkRequest(v.request(http.MethodGet, ""))
			require.NoError(t, err)
			first := d.state.ticket()
			assert.Equal(t, tc.found, found)
			if tc.found {
				assert.Equal(t, first, ticket)
			} else {
				assert.Zero(t, ticket)
			}
			r := v.request(http.MethodGet, "")
			r.URL.RawQuery = "revoke"
			w := httptest.NewRecorder()
			tr.app.ServeHTTP(w, r)
			assert.Equal(t, tc.found, ended, "Revoke")
			assert.Empty(t, w.Header().Values(CommandHeader), "the command never reaches the client")
			d, err = tr.checkRequest(v.request(http.MethodGet, ""))
			require.NoError(t, err)
			assert.NotEqual(t, first.ID, d.state.id, "the session is over either way")
		})
	}
}

// Rooms in front of rooms: the ticket and Revoke are those of the
// nearest room that admitted the visitor, past a room that lets the
// request through uncounted (suspended), as a value in a context would
// be.
func TestTicketOfTheNearestRoomThatAdmitted(t *testing.T) {
	outer := newTestRoom(t, nil)
	inner := newTestRoom(t, func(c *Config) { c.Name, c.Suspended = "inner", true })
	v := &visitor{}
	var (
		ticket       Ticket
		found, ended bool
	)
	outer.app = outer.Handler(inner.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ticket, found = TicketFrom(w)
		if r.URL.Query().Has("revoke") {
			ended = Revoke(w)
		}
		_, _ = w.Write([]byte("app"))
	})))
	require.True(t, admitted(outer.get(v, "")))
	d, err := outer.checkRequest(v.request(http.MethodGet, ""))
	require.NoError(t, err)
	first := d.state.ticket()
	require.True(t, found, "the outer room's ticket, through the inner room's writer")
	assert.Equal(t, first, ticket)

	r := v.request(http.MethodGet, "")
	r.URL.RawQuery = "revoke"
	outer.app.ServeHTTP(httptest.NewRecorder(), r)
	assert.True(t, ended, "Revoke ends the outer room's session")
	d, err = outer.checkRequest(v.request(http.MethodGet, ""))
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, d.state.id, "the session is over")
}

// unwrapping is middleware's writer that unwraps; opaque, one that does
// not.
type (
	unwrapping struct{ http.ResponseWriter }
	opaque     struct{ http.ResponseWriter }
)

func (w unwrapping) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestSetCookieHeader: the header respond writes to set the cookie is,
// byte for byte, what http.SetCookie writes for the same cookie, whatever
// the cookie's attributes and value.
func TestSetCookieHeader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
	}{
		{"defaults", nil},
		{"https", func(c *Config) { c.Cookie.Secure = true }},
		{"strict, domain, path", func(c *Config) {
			c.Cookie = CookieOptions{SameSite: http.SameSiteStrictMode, Domain: "example.com", Path: "/shop"}
		}},
		{"none, secure", func(c *Config) { c.Cookie.SameSite, c.Cookie.Secure = http.SameSiteNoneMode, true }},
		{"secure, lax", func(c *Config) { c.Cookie.Secure, c.Cookie.SameSite = true, http.SameSiteLaxMode }},
		{"name", func(c *Config) { c.Cookie.Name = "wr!#$%&'*+.^_`|~-" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, tc.mutate)
			for range 50 {
				d, err := tr.checkRequest(httptest.NewRequest(http.MethodGet, "/", nil))
				require.NoError(t, err)
				require.NotEmpty(t, d.cookie)
				got := httptest.NewRecorder()
				tr.respond(got, httptest.NewRequest(http.MethodGet, "/", nil), d)
				want := httptest.NewRecorder()
				http.SetCookie(want, &http.Cookie{
					Name: tr.cookieName, Value: d.cookie, Path: tr.cfg.Cookie.Path, Domain: tr.cfg.Cookie.Domain,
					HttpOnly: true, Secure: tr.cfg.Cookie.Secure, SameSite: tr.cfg.Cookie.SameSite, Partitioned: tr.cfg.Cookie.SameSite == http.SameSiteNoneMode,
				})
				require.Equal(t, want.Header()["Set-Cookie"], got.Header()["Set-Cookie"])
			}
		})
	}
}

package admin_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// browserAccept is the Accept header of a browser's navigation.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// signInFixture is an admin handler with SignIn, mounted under /admin/ as
// the package's example mounts it, on a virtual clock.
type signInFixture struct {
	*adminFixture
	mux *http.ServeMux
}

func newSignInFixture(t *testing.T, mutate func(*waitingroom.Config), token string, auth admin.Authenticator) *signInFixture {
	t.Helper()
	f := newAdminFixture(t, newAdminClock(), memstore.New(), mutate)
	f.sync()
	if auth == nil {
		var err error
		auth, err = admin.BearerToken(token)
		require.NoError(t, err)
	}
	h, err := admin.Handler(f.room, auth, admin.SignIn(token))
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", h))
	return &signInFixture{adminFixture: f, mux: mux}
}

// send sends a request to the mux; header pairs are set as given.
func (f *signInFixture) send(method, target, body string, header ...string) *httptest.ResponseRecorder {
	f.t.Helper()
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	f.mux.ServeHTTP(w, r)
	assert.Equal(f.t, "no-store", w.Header().Get("Cache-Control"), "%s %s", method, target)
	return w
}

// signIn posts token to the sign-in form from the same origin.
func (f *signInFixture) signIn(target, token string, header ...string) *httptest.ResponseRecorder {
	f.t.Helper()
	h := append([]string{"Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "same-origin"}, header...)
	return f.send(http.MethodPost, target, url.Values{"token": {token}}.Encode(), h...)
}

// sessionOf returns the session cookie w sets; it fails the test if none.
func sessionOf(t *testing.T, w *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range w.Result().Cookies() {
		if c.Name == admin.SessionCookie {
			return c
		}
	}
	require.Fail(t, "no session cookie", "%v", w.Header())
	return nil
}

// isForm asserts that w is the sign-in form.
func isForm(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
	body := w.Body.String()
	assert.Contains(t, body, `<input id="token" name="token" type="password"`)
	assert.Contains(t, body, `method="post"`)
	assert.NotContains(t, body, "launch", "the form says nothing of the room")
	csp := w.Header().Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'none'")
	assert.Contains(t, csp, "form-action 'self'")
	assert.Contains(t, csp, "frame-ancestors 'none'")
	assert.NotContains(t, body, "<script")
	return body
}

func TestSignInWithoutCredentials(t *testing.T) {
	f := newSignInFixture(t, nil, adminToken, nil)
	for _, tc := range []struct {
		name, method, target, accept string
		form                         bool
	}{
		{"browser, status page", http.MethodGet, "http://example.com/admin/", browserAccept, true},
		{"browser, HEAD", http.MethodHead, "http://example.com/admin/", browserAccept, true},
		{"API client", http.MethodGet, "http://example.com/admin/", "application/json", false},
		{"curl", http.MethodGet, "http://example.com/admin/", "*/*", false},
		{"no Accept", http.MethodGet, "http://example.com/admin/", "", false},
		{"browser, JSON resource", http.MethodGet, "http://example.com/admin/status", browserAccept, false},
		{"browser, PATCH", http.MethodPatch, "http://example.com/admin/settings", browserAccept, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := f.send(tc.method, tc.target, "", "Accept", tc.accept)
			assert.Equal(t, http.StatusUnauthorized, w.Code)
			assert.True(t, strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer"))
			assert.Empty(t, w.Result().Cookies())
			if tc.form {
				if tc.method == http.MethodGet {
					body := isForm(t, w)
					assert.Contains(t, body, `action="signin"`)
					assert.NotContains(t, body, `id="message"`, "no message before a try")
				}
				return
			}
			assert.NotContains(t, errorMessage(t, w), "launch")
		})
	}

	// Without SignIn, a browser gets the JSON error as before.
	w := f.do(http.MethodGet, "/", "", "Authorization", "", "Accept", browserAccept)
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	errorMessage(t, w)
	w = f.do(http.MethodGet, "/signin", "", "Authorization", "")
	assert.Equal(t, http.StatusUnauthorized, w.Code, "no sign-in without SignIn")
}

func TestSignInWrongToken(t *testing.T) {
	f := newSignInFixture(t, nil, adminToken, nil)
	for _, tc := range []struct{ name, token string }{
		{"empty", ""},
		{"wrong", "wrong-token-0123456789abcdefghij"},
		{"prefix", adminToken[:len(adminToken)-1]},
		{"token and more", adminToken + "x"},
		{"with a space", " " + adminToken},
		{"in upper case", strings.ToUpper(adminToken)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := f.signIn("http://example.com/admin/signin", tc.token, "X-Forwarded-For", "ignored")
			assert.Equal(t, http.StatusUnauthorized, w.Code)
			body := isForm(t, w)
			assert.Contains(t, body, `<p id="message" role="alert">Wrong token.</p>`)
			assert.Empty(t, w.Result().Cookies())
		})
	}
	// A form that is not one.
	w := f.send(http.MethodPost, "http://example.com/admin/signin", strings.Repeat("x", 5000),
		"Content-Type", "application/x-www-form-urlencoded")
	assert.Equal(t, http.StatusBadRequest, w.Code)
	assert.Empty(t, w.Result().Cookies())
}

func TestSignInSetsSessionCookie(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target string
		secure bool // the room's Cookie.Secure
		want   bool // the cookie's Secure
		path   string
	}{
		{"plain HTTP", "http://example.com/admin/signin", false, false, "/admin/"},
		{"HTTPS request", "https://example.com/admin/signin", false, true, "/admin/"},
		{"room served over HTTPS", "http://example.com/admin/signin", true, true, "/admin/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSignInFixture(t, func(c *waitingroom.Config) { c.Cookie.Secure = tc.secure }, adminToken, nil)
			w := f.signIn(tc.target, adminToken)
			require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
			assert.Equal(t, "./", w.Header().Get("Location"), "back to the status page")
			c := sessionOf(t, w)
			assert.True(t, c.HttpOnly)
			assert.Equal(t, http.SameSiteStrictMode, c.SameSite)
			assert.Equal(t, tc.want, c.Secure)
			assert.Equal(t, tc.path, c.Path, "the admin prefix only")
			assert.Equal(t, int(admin.SessionLifetime/time.Second), c.MaxAge)
			assert.Equal(t, 12*time.Hour, admin.SessionLifetime)
			assert.Empty(t, c.Domain)
			assert.NotContains(t, c.Value, adminToken)
		})
	}

	// Mounted at the root, the cookie's path is the root.
	f := newSignInFixture(t, nil, adminToken, nil)
	h, err := admin.Handler(f.room, func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+adminToken }, admin.SignIn(adminToken))
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodPost, "http://example.com/signin", strings.NewReader("token="+adminToken))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusSeeOther, w.Code)
	assert.Equal(t, "/", sessionOf(t, w).Path)
}

func TestSessionCookieGrantsAccess(t *testing.T) {
	f := newSignInFixture(t, nil, adminToken, nil)
	c := sessionOf(t, f.signIn("http://example.com/admin/signin", adminToken))
	cookie := c.Name + "=" + c.Value

	w := f.send(http.MethodGet, "http://example.com/admin/", "", "Cookie", cookie, "Accept", browserAccept)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `<span id="room">launch</span>`)
	assert.Contains(t, w.Body.String(), `<form id="signout" method="post" action="signout">`)
	assert.Contains(t, w.Header().Get("Content-Security-Policy"), "form-action 'self'")

	for _, path := range []string{"/admin/status", "/admin/history", "/admin/settings", "/admin/preview"} {
		w = f.send(http.MethodGet, "http://example.com"+path, "", "Cookie", cookie)
		assert.Equal(t, http.StatusOK, w.Code, path)
	}
	w = f.send(http.MethodPatch, "http://example.com/admin/settings", `{"queueAll":true}`,
		"Cookie", cookie, "Content-Type", "application/json", "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.True(t, f.room.Stats().Settings.QueueAll)

	// A bearer token still works, and its page offers no sign-out.
	w = f.send(http.MethodGet, "http://example.com/admin/", "", "Authorization", "Bearer "+adminToken)
	require.Equal(t, http.StatusOK, w.Code)
	assert.NotContains(t, w.Body.String(), `id="signout"`)

	// The page at the mount point without its slash links to the right
	// place.
	h, err := admin.Handler(f.room, func(*http.Request) bool { return false }, admin.SignIn(adminToken))
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodGet, "http://example.com/admin", nil)
	r.Header.Set("Accept", browserAccept)
	r.URL.Path = "" // as http.StripPrefix("/admin", h) passes it on
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	assert.Contains(t, rec.Body.String(), `action="admin/signin"`)
}

func TestSessionCookieRefused(t *testing.T) {
	f := newSignInFixture(t, nil, adminToken, nil)
	c := sessionOf(t, f.signIn("http://example.com/admin/signin", adminToken))
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	rotated, err := admin.Handler(f.room, mustBearer(t, "a-new-admin-token-fedcba9876543210"), admin.SignIn("a-new-admin-token-fedcba9876543210"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		value   string
		after   time.Duration
		handler http.Handler // nil: the fixture's
		ok      bool
	}{
		{"fresh", c.Value, 0, nil, true},
		{"just before it expires", c.Value, admin.SessionLifetime - time.Second, nil, true},
		{"expired", c.Value, admin.SessionLifetime, nil, false},
		{"first byte changed", flip(c.Value, 0), 0, nil, false},
		{"expiry changed", flip(c.Value, 7), 0, nil, false},
		{"MAC changed", flip(c.Value, len(c.Value)-2), 0, nil, false},
		{"cut short", c.Value[:len(c.Value)-1], 0, nil, false},
		{"longer", c.Value + "A", 0, nil, false},
		{"empty", "", 0, nil, false},
		{"not base64", strings.Repeat("*", len(c.Value)), 0, nil, false},
		{"the token itself", adminToken, 0, nil, false},
		{"a new token", c.Value, 0, http.StripPrefix("/admin", rotated), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := f.clk.Now() // the fixture's clock, moved for this case only
			f.clk.Add(tc.after)
			defer f.clk.Set(start)
			h := tc.handler
			if h == nil {
				h = f.mux
			}
			for _, path := range []string{"/admin/status", "/admin/settings"} {
				r := httptest.NewRequest(http.MethodGet, "http://example.com"+path, nil)
				r.AddCookie(&http.Cookie{Name: admin.SessionCookie, Value: tc.value})
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if tc.ok {
					assert.Equal(t, http.StatusOK, w.Code, path)
				} else {
					assert.Equal(t, http.StatusUnauthorized, w.Code, path)
					errorMessage(t, w)
				}
			}
			// A browser asking for the page is offered the form again.
			r := httptest.NewRequest(http.MethodGet, "http://example.com/admin/", nil)
			r.AddCookie(&http.Cookie{Name: admin.SessionCookie, Value: tc.value})
			r.Header.Set("Accept", browserAccept)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if !tc.ok {
				assert.Equal(t, http.StatusUnauthorized, w.Code)
				isForm(t, w)
			}
		})
	}
}

func mustBearer(t *testing.T, token string) admin.Authenticator {
	t.Helper()
	auth, err := admin.BearerToken(token)
	require.NoError(t, err)
	return auth
}

// TestSessionGrantsWhatTheTokenGrants: the Authenticator answers for a
// session as for its token: one that also checks the client's address
// refuses a session from elsewhere, and one that does not accept the
// token as a bearer token lets nobody sign in with it.
func TestSessionGrantsWhatTheTokenGrants(t *testing.T) {
	bearer := mustBearer(t, adminToken)
	fromInside := func(r *http.Request) bool { return bearer(r) && strings.HasPrefix(r.RemoteAddr, "10.") }
	f := newSignInFixture(t, nil, adminToken, fromInside)

	w := f.signIn("http://example.com/admin/signin", adminToken) // from 192.0.2.1
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Empty(t, w.Result().Cookies())

	r := httptest.NewRequest(http.MethodPost, "http://example.com/admin/signin", strings.NewReader("token="+adminToken))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.RemoteAddr = "10.0.0.7:4321"
	rec := httptest.NewRecorder()
	f.mux.ServeHTTP(rec, r)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	c := sessionOf(t, rec)
	for addr, code := range map[string]int{"10.0.0.7:4321": http.StatusOK, "192.0.2.9:1234": http.StatusUnauthorized} {
		r := httptest.NewRequest(http.MethodGet, "http://example.com/admin/status", nil)
		r.RemoteAddr = addr
		r.AddCookie(c)
		w := httptest.NewRecorder()
		f.mux.ServeHTTP(w, r)
		assert.Equal(t, code, w.Code, addr)
	}

	// SignIn's token differs from the Authenticator's: nobody signs in.
	g := newSignInFixture(t, nil, "another-token-0123456789abcdef", mustBearer(t, adminToken))
	for _, tok := range []string{adminToken, "another-token-0123456789abcdef"} {
		w := g.signIn("http://example.com/admin/signin", tok)
		assert.Equal(t, http.StatusUnauthorized, w.Code)
		assert.Empty(t, w.Result().Cookies())
	}
}

func TestSignInRefusesCrossOrigin(t *testing.T) {
	f := newSignInFixture(t, nil, adminToken, nil)
	c := sessionOf(t, f.signIn("http://example.com/admin/signin", adminToken))
	before := f.room.Stats().Settings
	for _, tc := range []struct {
		name, method, target, body string
		header                     []string
	}{
		{"sign-in, cross-site", http.MethodPost, "/admin/signin", "token=" + adminToken, []string{"Sec-Fetch-Site", "cross-site"}},
		{"sign-in, same-site", http.MethodPost, "/admin/signin", "token=" + adminToken, []string{"Sec-Fetch-Site", "same-site"}},
		{"sign-in, another Origin", http.MethodPost, "/admin/signin", "token=" + adminToken, []string{"Origin", "https://evil.example"}},
		{"sign-out, cross-site", http.MethodPost, "/admin/signout", "", []string{"Sec-Fetch-Site", "cross-site"}},
		{"settings by session, cross-site", http.MethodPatch, "/admin/settings", `{"queueAll":true}`, []string{"Sec-Fetch-Site", "cross-site", "Content-Type", "application/json"}},
		{"preview by session, another Origin", http.MethodPost, "/admin/preview", `{"template":""}`, []string{"Origin", "https://evil.example", "Content-Type", "application/json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := append([]string{"Content-Type", "application/x-www-form-urlencoded", "Cookie", c.Name + "=" + c.Value}, tc.header...)
			w := f.send(tc.method, "http://example.com"+tc.target, tc.body, h...)
			assert.Equal(t, http.StatusForbidden, w.Code, w.Body.String())
			assert.Contains(t, errorMessage(t, w), "cross-origin")
			assert.Empty(t, w.Result().Cookies(), "no cookie set or cleared")
			assert.Equal(t, before, f.room.Stats().Settings)
		})
	}
}

func TestSignOut(t *testing.T) {
	f := newSignInFixture(t, nil, adminToken, nil)
	c := sessionOf(t, f.signIn("http://example.com/admin/signin", adminToken))

	w := f.send(http.MethodPost, "http://example.com/admin/signout", "", "Cookie", c.Name+"="+c.Value, "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusSeeOther, w.Code)
	assert.Equal(t, "signin?out=1", w.Header().Get("Location"))
	gone := sessionOf(t, w)
	assert.Less(t, gone.MaxAge, 0, "deleted")
	assert.Empty(t, gone.Value)
	assert.Equal(t, "/admin/", gone.Path, "the cookie signed in")
	assert.True(t, gone.HttpOnly)

	w = f.send(http.MethodGet, "http://example.com/admin/signin?out=1", "")
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, isForm(t, w), "Signed out.")

	for _, tc := range []struct{ method, target, allow string }{
		{http.MethodGet, "/admin/signout", "POST"},
		{http.MethodPut, "/admin/signin", "GET, HEAD, POST"},
	} {
		w := f.send(tc.method, "http://example.com"+tc.target, "")
		assert.Equal(t, http.StatusMethodNotAllowed, w.Code, tc.target)
		assert.Equal(t, tc.allow, w.Header().Get("Allow"))
	}
}

func TestSignInLimitsFailures(t *testing.T) {
	f := newSignInFixture(t, nil, adminToken, nil)
	try := func(token, addr string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://example.com/admin/signin", strings.NewReader(url.Values{"token": {token}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		f.mux.ServeHTTP(w, r)
		return w
	}
	for i := range 10 {
		assert.Equal(t, http.StatusUnauthorized, try("wrong", "192.0.2.1:1000").Code, i)
	}
	w := try(adminToken, "192.0.2.1:1001")
	assert.Equal(t, http.StatusTooManyRequests, w.Code, "refused unread, the right token too")
	assert.Equal(t, "6", w.Header().Get("Retry-After"))
	assert.Contains(t, isForm(t, w), "Too many failed sign-ins")
	assert.Empty(t, w.Result().Cookies())
	assert.Equal(t, http.StatusSeeOther, try(adminToken, "192.0.2.2:1000").Code, "another address is not held")

	f.clk.Add(6 * time.Second)
	assert.Equal(t, http.StatusUnauthorized, try("wrong", "192.0.2.1:1000").Code, "one more after 6 s")
	assert.Equal(t, http.StatusTooManyRequests, try(adminToken, "192.0.2.1:1000").Code)
	f.clk.Add(6 * time.Second)
	assert.Equal(t, http.StatusSeeOther, try(adminToken, "192.0.2.1:1000").Code)
	for i := range 10 {
		assert.Equal(t, http.StatusUnauthorized, try("wrong", "192.0.2.1:1000").Code, "a success clears the count: %d", i)
	}
}

func TestSignInRefusesWeakToken(t *testing.T) {
	f := newAdminFixture(t, newAdminClock(), memstore.New(), nil)
	for _, tok := range []string{"", "short", "with a space in it, long enough"} {
		h, err := admin.Handler(f.room, mustBearer(t, adminToken), admin.SignIn(tok))
		require.ErrorIs(t, err, waitingroom.ErrInvalidConfig, tok)
		assert.Nil(t, h)
	}
}

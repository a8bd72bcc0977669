package waitingroom

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frontServer replays what a server in front of the application does with
// ForwardAuth, from its documented behaviour (docs/forward-auth.md): the
// auth requests it sends for a visitor's request, and what the visitor
// gets from the answers.
type frontServer struct {
	name string
	// auth is the auth request for the visitor's request (method, uri,
	// Cookie header), sent from the server's address.
	auth func(method, uri, cookie string) *http.Request
	// nginx: a 401 is followed by the page request of error_page.
	nginx bool
	// passCookies are the Set-Cookie values of a passing answer that the
	// server sends the browser.
	passCookies func(h http.Header) []string
}

// The server's address and the visitor's.
const (
	proxyAddr   = "192.0.2.10:41000"
	visitorAddr = "203.0.113.7"
)

func authRequest(method, target string, h map[string]string, cookie string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	r.RemoteAddr = proxyAddr
	for k, v := range h {
		r.Header.Set(k, v)
	}
	r.Header.Set("Accept", "text/html")
	if cookie != "" {
		r.Header.Set("Cookie", cookie)
	}
	return r
}

func allSetCookies(h http.Header) []string { return h.Values("Set-Cookie") }

var frontServers = []frontServer{{
	// nginx: auth_request to an internal location that sets these
	// headers (the subrequest carries the visitor's own), then
	// error_page 401 = @waitingroom with the same headers, mode page and
	// the Set-Cookie of the first answer; add_header Set-Cookie on a pass.
	name: "nginx",
	auth: func(method, uri, cookie string) *http.Request {
		return authRequest(http.MethodGet, "http://127.0.0.1:8081/", map[string]string{
			"X-Forwarded-Method": method, "X-Forwarded-Uri": uri, "X-Forwarded-Host": "shop.example",
			"X-Forwarded-Proto": "https", "X-Forwarded-For": visitorAddr, ForwardAuthHeader: "status",
		}, cookie)
	},
	nginx:       true,
	passCookies: allSetCookies,
}, {
	// Caddy's forward_auth: GET to the configured uri with X-Forwarded-
	// Method and -Uri and reverse_proxy's X-Forwarded-*; a non-2xx answer
	// goes to the visitor as it is; the cookie of a pass through
	// copy_headers and a header directive.
	name: "caddy",
	auth: func(method, uri, cookie string) *http.Request {
		return authRequest(http.MethodGet, "http://127.0.0.1:8081/", map[string]string{
			"X-Forwarded-Method": method, "X-Forwarded-Uri": uri, "X-Forwarded-Host": "shop.example",
			"X-Forwarded-Proto": "https", "X-Forwarded-For": visitorAddr,
		}, cookie)
	},
	passCookies: allSetCookies,
}, {
	// Traefik's ForwardAuth: GET to the address with X-Forwarded-Method,
	// -Proto, -Host, -Uri and -For; a non-2xx answer goes to the visitor;
	// addAuthCookiesToResponse copies the named cookies of a pass.
	name: "traefik",
	auth: func(method, uri, cookie string) *http.Request {
		return authRequest(http.MethodGet, "http://waitingroom:8081/", map[string]string{
			"X-Forwarded-Method": method, "X-Forwarded-Uri": uri, "X-Forwarded-Host": "shop.example",
			"X-Forwarded-Proto": "https", "X-Forwarded-For": visitorAddr,
		}, cookie)
	},
	passCookies: func(h http.Header) []string {
		var out []string
		for _, v := range h.Values("Set-Cookie") {
			if strings.HasPrefix(v, DefaultCookieName+"_launch=") {
				out = append(out, v)
			}
		}
		return out
	},
}, {
	// Envoy's HTTP ext_authz: the original method and path (path_prefix
	// empty) and Host, the allowed headers (cookie, accept,
	// x-forwarded-for, x-forwarded-proto); a denial goes to the visitor
	// with its body; allowed_client_headers_on_success: set-cookie.
	name: "envoy",
	auth: func(method, uri, cookie string) *http.Request {
		r := authRequest(method, "http://shop.example"+uri, map[string]string{
			"X-Forwarded-Proto": "https", "X-Forwarded-For": visitorAddr,
		}, cookie)
		r.RequestURI = uri
		return r
	},
	passCookies: allSetCookies,
}, {
	// ingress-nginx's auth-url: X-Original-URL (scheme, host and URI),
	// X-Original-Method, X-Forwarded-For, X-Sent-From; error_page as
	// nginx's, through auth-snippet and configuration-snippet.
	name: "ingress-nginx",
	auth: func(method, uri, cookie string) *http.Request {
		return authRequest(http.MethodGet, "http://waitingroom.default.svc:8081/", map[string]string{
			"X-Original-Url": "https://shop.example" + uri, "X-Original-Method": method,
			"X-Forwarded-For": visitorAddr, "X-Real-Ip": visitorAddr, "X-Sent-From": "nginx-ingress-controller",
			"X-Auth-Request-Redirect": uri, ForwardAuthHeader: "status",
		}, cookie)
	},
	nginx:       true,
	passCookies: allSetCookies,
}}

// seen is what a visitor gets from a server in front of ForwardAuth.
type seen struct {
	passed bool
	ticket string                     // the header the application gets
	page   *httptest.ResponseRecorder // what the visitor sees when not passed
}

// through sends the visitor's request through fs to h, keeping the cookie
// the browser gets.
func (fs frontServer) through(h http.Handler, v *visitor, method, uri string) seen {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, fs.auth(method, uri, v.cookie))
	keep := func(values []string) {
		for _, c := range (&http.Response{Header: http.Header{"Set-Cookie": values}}).Cookies() {
			if c.MaxAge < 0 {
				v.cookie = ""
			} else {
				v.cookie = c.Name + "=" + c.Value
			}
		}
	}
	if w.Code >= 200 && w.Code < 300 {
		keep(fs.passCookies(w.Header()))
		return seen{passed: true, ticket: w.Header().Get(TicketHeader)}
	}
	if fs.nginx && w.Code == http.StatusUnauthorized {
		r := fs.auth(method, uri, v.cookie)
		r.Header.Set(ForwardAuthHeader, "page")
		if c := w.Header().Get("Set-Cookie"); c != "" {
			r.Header.Set(ForwardCookieHeader, c)
		}
		w = httptest.NewRecorder()
		h.ServeHTTP(w, r)
	}
	keep(w.Header().Values("Set-Cookie"))
	return seen{page: w}
}

// Every server's requests: the first visitor is let in and the
// application learns the ticket, the second waits on the page with 429,
// the first passes again, bypass paths pass, the revoke a server sends
// frees the slot and a refresh brings the waiting visitor in, each taking
// one chance per refresh.
func TestForwardAuthServers(t *testing.T) {
	for _, fs := range frontServers {
		t.Run(fs.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
				c.Bypass = []Rule{PathPrefix("/static/")}
				c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
			})
			h := tr.ForwardAuth()
			first, second := &visitor{}, &visitor{}

			s := fs.through(h, first, http.MethodGet, "/product?id=7")
			require.True(t, s.passed, "the first visitor is let in")
			require.NotEmpty(t, first.cookie, "the cookie of a pass reaches the browser")
			tk, ok := ParseTicket(s.ticket)
			require.True(t, ok, "ticket %q", s.ticket)
			assert.NotZero(t, tk.ID)
			assert.Equal(t, tr.clk.Now().Truncate(time.Millisecond).UTC(), tk.AcceptedAt)
			tr.sync()

			s = fs.through(h, second, http.MethodPost, "/cart")
			require.False(t, s.passed, "one slot: the second visitor waits")
			assert.Equal(t, http.StatusTooManyRequests, s.page.Code)
			assert.True(t, isWaiting(s.page), "the waiting page: %d %q", s.page.Code, s.page.Body.String())
			assert.NotEmpty(t, s.page.Header().Get("Retry-After"))
			require.NotEmpty(t, second.cookie, "the waiting visitor's cookie reaches the browser")
			tr.sync()
			assert.Equal(t, 1, tr.Stats().Waiting, "the waiting visitor counts once, whatever the server asks")

			s = fs.through(h, first, http.MethodGet, "/checkout")
			assert.True(t, s.passed, "the admitted visitor passes again")
			_, ok = ParseTicket(s.ticket)
			assert.True(t, ok)

			s = fs.through(h, second, http.MethodGet, "/static/app.css")
			assert.True(t, s.passed, "bypass paths pass")
			assert.Equal(t, "bypassed", s.ticket)
			for _, uri := range []string{"/static/../cart", "/STATIC/%2e%2e/cart", "static/x"} {
				s = fs.through(h, &visitor{}, http.MethodGet, uri)
				assert.False(t, s.passed, "%s is not a bypass path", uri)
			}

			// The server sends the revoke command on the request that
			// ends the visit: the slot is free and the cookie expired.
			r := fs.auth(http.MethodGet, "/thanks", first.cookie)
			r.Header.Set(CommandHeader, "revoke")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, http.StatusOK, w.Code, "the request that revokes passes")
			assert.Equal(t, "revoked", w.Header().Get(TicketHeader))
			cs := (&http.Response{Header: w.Header()}).Cookies()
			require.Len(t, cs, 1)
			assert.Equal(t, -1, cs[0].MaxAge)
			tr.sync()
			assert.Zero(t, tr.Stats().Active)

			tr.clk.Add(time.Minute)
			tr.sync()
			s = fs.through(h, second, http.MethodGet, "/cart")
			assert.True(t, s.passed, "a refresh brings the waiting visitor in")
		})
	}
}

// A waiting visitor's request costs one chance whatever the server: the
// page nginx asks for after the 401 is that decision's, and takes none
// and counts no one again.
func TestForwardAuthPageTakesNoChance(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	})
	h := tr.ForwardAuth()
	nginx := frontServers[0]
	require.True(t, nginx.through(h, &visitor{}, http.MethodGet, "/").passed)
	tr.sync()

	v := &visitor{}
	r := nginx.auth(http.MethodGet, "/", "")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Zero(t, w.Body.Len(), "nginx shows nothing of the 401")
	setCookie := w.Header().Get("Set-Cookie")
	require.NotEmpty(t, setCookie)

	tr.clk.Add(50 * time.Millisecond)
	before := tr.Counters()
	r = nginx.auth(http.MethodGet, "/", v.cookie)
	r.Header.Set(ForwardAuthHeader, "page")
	r.Header.Set(ForwardCookieHeader, setCookie)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	assert.True(t, isWaiting(w))
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, before, tr.Counters(), "no admission, no new place")
	assert.Equal(t, setCookie, w.Header().Get("Set-Cookie"), "the first answer's cookie reaches the browser")
	tr.sync()
	assert.Equal(t, 1, tr.Stats().Waiting)

	// A Waiting-Room-Cookie that is not the room's is ignored, and page
	// mode never answers a 2xx, which a server would take for a pass.
	for _, c := range []string{"", "other=abc", DefaultCookieName + "_launch=not base64!", "garbage"} {
		r = nginx.auth(http.MethodGet, "/", "")
		r.Header.Set(ForwardAuthHeader, "page")
		r.Header.Set(ForwardCookieHeader, c)
		w = httptest.NewRecorder()
		h.ServeHTTP(w, r)
		assert.False(t, w.Code >= 200 && w.Code < 300, "%q: %d", c, w.Code)
	}
}

// Forwarded headers count only from TrustedProxies: from anyone else the
// auth request is the original, and a client cannot reach a bypass path
// by naming it in a header. Garbage in the headers is ordinary input.
func TestForwardAuthTrust(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
		c.Bypass = []Rule{PathPrefix("/static/"), Methods(http.MethodOptions)}
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	})
	h := tr.ForwardAuth()
	caddy := frontServers[1]
	require.True(t, caddy.through(h, &visitor{}, http.MethodGet, "/").passed)
	tr.sync()

	cases := []struct {
		name   string
		peer   string
		header map[string]string
		target string
		pass   bool
	}{
		{"trusted, static", proxyAddr, map[string]string{"X-Forwarded-Uri": "/static/x.css"}, "/", true},
		{"untrusted, static", "198.51.100.1:5000", map[string]string{"X-Forwarded-Uri": "/static/x.css"}, "/", false},
		{"untrusted, request itself static", "198.51.100.1:5000", nil, "/static/x.css", true},
		{"trusted, OPTIONS", proxyAddr, map[string]string{"X-Forwarded-Method": "OPTIONS", "X-Forwarded-Uri": "/"}, "/", true},
		{"untrusted, OPTIONS", "198.51.100.1:5000", map[string]string{"X-Forwarded-Method": "OPTIONS"}, "/", false},
		{"X-Original-URI", proxyAddr, map[string]string{"X-Original-Uri": "/static/a"}, "/", true},
		{"X-Original-URL", proxyAddr, map[string]string{"X-Original-Url": "http://h/static/a?b"}, "/", true},
		{"relative X-Original-URL", proxyAddr, map[string]string{"X-Original-Url": "/static/a"}, "/", false},
		{"garbage URI", proxyAddr, map[string]string{"X-Forwarded-Uri": "%zz/static/"}, "/static/", false},
		{"absolute URI", proxyAddr, map[string]string{"X-Forwarded-Uri": "http://evil/static/"}, "/static/", false},
		{"encoded dots", proxyAddr, map[string]string{"X-Forwarded-Uri": "/static/%2e%2e/cart"}, "/static/", false},
		{"bad method", proxyAddr, map[string]string{"X-Forwarded-Method": "OPT IONS", "X-Forwarded-Uri": "/"}, "/", false},
		{"control bytes", proxyAddr, map[string]string{"X-Forwarded-Uri": "/static/\x00\x7f", "X-Forwarded-Host": "\x01"}, "/", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, c.target, nil)
			r.RemoteAddr = c.peer
			for k, v := range c.header {
				r.Header[http.CanonicalHeaderKey(k)] = []string{v}
			}
			w := httptest.NewRecorder()
			require.NotPanics(t, func() { h.ServeHTTP(w, r) })
			assert.Equal(t, c.pass, w.Code == http.StatusOK, "status %d", w.Code)
		})
	}
}

// The ticket header reads back as the ticket; anything else is not one.
func TestParseTicket(t *testing.T) {
	tk := Ticket{ID: 0x00ab_cdef_0123_4567, Bucket: time.Unix(1_764_615_600, 0).UTC(), AcceptedAt: time.UnixMilli(1_764_615_723_123).UTC()}
	v := tk.String()
	assert.Equal(t, "id=00abcdef01234567; bucket=2025-12-01T19:00:00Z; accepted=2025-12-01T19:02:03.123Z", v)
	got, ok := ParseTicket(v)
	require.True(t, ok)
	assert.Equal(t, tk, got)
	for _, bad := range []string{"", "bypassed", "revoked", "id=00; bucket=x; accepted=y", "id=00abcdef01234567; bucket=2025-12-01T19:00:00Z",
		"id=zzzzzzzzzzzzzzzz; bucket=2025-12-01T19:00:00Z; accepted=2025-12-01T19:02:03.123Z"} {
		_, ok := ParseTicket(bad)
		assert.False(t, ok, "%q", bad)
	}
}

// Whatever a server or a client puts in the headers, ForwardAuth never
// panics, lets no one into a full room but through a bypass rule, and
// never answers a 2xx in page mode.
func FuzzForwardAuth(f *testing.F) {
	f.Add("GET", "/static/a.css", "", "shop.example", "", "")
	f.Add("OPTIONS", "/static/../cart", "status", "", "", "")
	f.Add("GET", "", "page", "", "https://h/static/x", DefaultCookieName+"_launch=abc")
	f.Add("P\x00ST", "%zz", "page", "\x01", "http://[::1", "garbage")
	tr := newTestRoom(f, func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
		c.Bypass = []Rule{PathPrefix("/static/")}
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	})
	h := tr.ForwardAuth()
	require.True(f, frontServers[1].through(h, &visitor{}, http.MethodGet, "/").passed)
	tr.sync()
	f.Fuzz(func(t *testing.T, method, uri, mode, host, original, cookie string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = proxyAddr
		for k, v := range map[string]string{"X-Forwarded-Method": method, "X-Forwarded-Uri": uri, ForwardAuthHeader: mode,
			"X-Forwarded-Host": host, "X-Original-Url": original, ForwardCookieHeader: cookie} {
			if v != "" {
				r.Header[http.CanonicalHeaderKey(k)] = []string{v}
			}
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 200 && w.Code < 300 {
			require.NotEqual(t, "page", mode, "a 2xx in page mode")
			require.Equal(t, "bypassed", w.Header().Get(TicketHeader), "the room is full: only a bypass rule lets a request through")
		}
	})
}

// ParseTicket never panics, and what it reads, String writes back.
func FuzzParseTicket(f *testing.F) {
	f.Add("id=00abcdef01234567; bucket=2025-12-01T19:00:00Z; accepted=2025-12-01T19:02:03.123Z")
	f.Add("bypassed")
	f.Add("id=; bucket=; accepted=")
	f.Add("id=0000000000000001; bucket=9999-12-31T23:00:00-05:00; accepted=0000-01-01T00:30:00+01:00")
	f.Fuzz(func(t *testing.T, v string) {
		tk, ok := ParseTicket(v)
		inRange := func(x time.Time) bool { y := x.UTC().Year(); return y >= 0 && y <= 9999 }
		if !ok || !inRange(tk.Bucket) || !inRange(tk.AcceptedAt) {
			return // an offset can move a time out of the years RFC 3339 writes
		}
		again, ok := ParseTicket(tk.String())
		require.True(t, ok, "%q", tk.String())
		require.Equal(t, tk.ID, again.ID)
		require.True(t, tk.Bucket.Truncate(time.Second).Equal(again.Bucket), "%v %v", tk.Bucket, again.Bucket)
	})
}

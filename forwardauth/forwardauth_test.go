package forwardauth

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/fronttest"
)

// frontServer replays what a server in front of the application does with
// the forward-auth handler, from its documented behaviour (docs/forward-auth.md and the
// servers' sources): the auth requests it sends for a visitor's request,
// and what the visitor gets from the answers.
type frontServer struct {
	name string
	door FrontDoor
	// auth is the auth request for the visitor's request (method, uri,
	// Cookie header, and the visitor's other headers, which the server
	// passes on but for those it sets itself), sent from the server's
	// address.
	auth func(method, uri, cookie string, client http.Header) *http.Request
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
	return relayed(method, target, nil, h, cookie)
}

// relayed is the auth request a server sends with the visitor's headers
// (client), passed on, and the headers it sets (set), which replace the
// visitor's of the same name; a server that appends to X-Forwarded-For
// says so in set.
func relayed(method, target string, client http.Header, set map[string]string, cookie string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	r.RemoteAddr = proxyAddr
	for k, vs := range client {
		r.Header[k] = slices.Clone(vs)
	}
	for k, v := range set {
		r.Header.Set(k, v)
	}
	r.Header.Set("Accept", "text/html")
	if cookie != "" {
		r.Header.Set("Cookie", cookie)
	}
	return r
}

// appendedFor is X-Forwarded-For as a server that appends the visitor's
// address to what the visitor sent makes it (nginx's
// $proxy_add_x_forwarded_for, Envoy's use_remote_address).
func appendedFor(client http.Header) string {
	return strings.Join(append(slices.Clone(client.Values("X-Forwarded-For")), visitorAddr), ", ")
}

// forgedForwarding is what a visitor adds to get past the room.
var forgedForwarding = fronttest.ForgedForwarding

// forgeryBypass are the bypass rules the forged headers aim at.
func forgeryBypass(t testing.TB) []waitingroom.Rule {
	return []waitingroom.Rule{
		waitingroom.PathPrefix("/static/"),
		waitingroom.Methods(http.MethodOptions),
		mustNetworks(t, "10.0.0.0/8"),
		waitingroom.Match(func(r *http.Request) bool { return r.Host == "static.example" || r.URL.Host == "static.example" }),
	}
}

func allSetCookies(h http.Header) []string { return h.Values("Set-Cookie") }

var frontServers = []frontServer{{
	// nginx, docs/forward-auth/nginx.md: auth_request to an internal
	// location that sets these headers with proxy_set_header (the
	// subrequest carries the visitor's others), then error_page 401 =
	// @waitingroom with the same headers, mode page and the Set-Cookie of
	// the first answer; add_header Set-Cookie on a pass.
	name: "nginx",
	door: Forwarded,
	auth: func(method, uri, cookie string, client http.Header) *http.Request {
		return relayed(http.MethodGet, "http://127.0.0.1:8081/", client, map[string]string{
			"X-Forwarded-Method": method, "X-Forwarded-Uri": uri, "X-Forwarded-Host": "shop.example",
			"X-Forwarded-Proto": "https", "X-Forwarded-For": appendedFor(client), ModeHeader: "status",
		}, cookie)
	},
	nginx:       true,
	passCookies: allSetCookies,
}, {
	// Caddy's forward_auth: GET to the configured uri; header_up sets
	// X-Forwarded-Method and -Uri, reverse_proxy replaces the
	// X-Forwarded-For, -Proto and -Host of a peer outside its
	// trusted_proxies and passes the visitor's other headers on; a non-2xx
	// answer goes to the visitor as it is; the cookie of a pass through
	// copy_headers and a header directive.
	name: "caddy",
	door: Forwarded,
	auth: func(method, uri, cookie string, client http.Header) *http.Request {
		return relayed(http.MethodGet, "http://127.0.0.1:8081/", client, map[string]string{
			"X-Forwarded-Method": method, "X-Forwarded-Uri": uri, "X-Forwarded-Host": "shop.example",
			"X-Forwarded-Proto": "https", "X-Forwarded-For": visitorAddr,
		}, cookie)
	},
	passCookies: allSetCookies,
}, {
	// Traefik's ForwardAuth with trustForwardHeader false: the visitor's
	// X-Forwarded-* dropped, then X-Forwarded-Method, -Proto, -Host, -Uri,
	// -Port and -For set, the visitor's other headers passed on; a
	// non-2xx answer goes to the visitor; addAuthCookiesToResponse copies
	// the named cookies of a pass.
	name: "traefik",
	door: Forwarded,
	auth: func(method, uri, cookie string, client http.Header) *http.Request {
		kept := http.Header{}
		for k, vs := range client {
			if !strings.HasPrefix(k, "X-Forwarded-") {
				kept[k] = vs
			}
		}
		return relayed(http.MethodGet, "http://waitingroom:8081/", kept, map[string]string{
			"X-Forwarded-Method": method, "X-Forwarded-Uri": uri, "X-Forwarded-Host": "shop.example",
			"X-Forwarded-Proto": "https", "X-Forwarded-Port": "443", "X-Forwarded-For": visitorAddr,
		}, cookie)
	},
	passCookies: func(h http.Header) []string {
		var out []string
		for _, v := range h.Values("Set-Cookie") {
			if strings.HasPrefix(v, cookieName+"=") {
				out = append(out, v)
			}
		}
		return out
	},
}, {
	// Envoy's HTTP ext_authz: the original method and path (path_prefix
	// empty) and Host, and the headers allowed_headers lets through
	// (cookie, accept, accept-language, x-forwarded-for with the
	// visitor's address appended by use_remote_address). Here it lets
	// every header through, the worst configuration: the room reads none.
	// A denial goes to the visitor with its body;
	// allowed_client_headers_on_success: set-cookie.
	name: "envoy",
	door: Envoy,
	auth: func(method, uri, cookie string, client http.Header) *http.Request {
		r := relayed(method, "http://shop.example"+uri, client, map[string]string{
			"X-Forwarded-For": appendedFor(client),
		}, cookie)
		r.RequestURI = uri
		return r
	},
	passCookies: allSetCookies,
}, {
	// ingress-nginx's auth-url: the controller's auth location sets
	// X-Original-URL (scheme, host and URI), X-Original-Method, X-Real-IP,
	// X-Forwarded-For ($remote_addr), X-Sent-From,
	// X-Auth-Request-Redirect and Host, clears X-Forwarded-Proto, and
	// passes the visitor's other headers on (proxy_pass_request_headers
	// on); error_page as nginx's, through auth-snippet and
	// configuration-snippet.
	name: "ingress-nginx",
	door: IngressNginx,
	auth: func(method, uri, cookie string, client http.Header) *http.Request {
		r := relayed(http.MethodGet, "http://waitingroom.default.svc:8081/", client, map[string]string{
			"X-Original-Url": "https://shop.example" + uri, "X-Original-Method": method,
			"X-Forwarded-For": visitorAddr, "X-Real-Ip": visitorAddr, "X-Sent-From": "nginx-ingress-controller",
			"X-Auth-Request-Redirect": uri, ModeHeader: "status",
		}, cookie)
		r.Header.Del("X-Forwarded-Proto")
		return r
	},
	nginx:       true,
	passCookies: allSetCookies,
}}

// seen is what a visitor gets from a server in front of the handler.
type seen struct {
	passed bool
	ticket string                     // the header the application gets
	page   *httptest.ResponseRecorder // what the visitor sees when not passed
}

// through sends the visitor's request, with the visitor's own headers
// client, through fs to h, keeping the cookie the browser gets.
func (fs frontServer) through(h http.Handler, v *visitor, method, uri string, client http.Header) seen {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, fs.auth(method, uri, v.cookie, client))
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
		return seen{passed: true, ticket: w.Header().Get(waitingroom.TicketHeader)}
	}
	if fs.nginx && w.Code == http.StatusUnauthorized {
		r := fs.auth(method, uri, v.cookie, client)
		r.Header.Set(ModeHeader, "page")
		if c := w.Header().Get("Set-Cookie"); c != "" {
			r.Header.Set(CookieHeader, c)
		}
		w = httptest.NewRecorder()
		h.ServeHTTP(w, r)
	}
	keep(w.Header().Values("Set-Cookie"))
	return seen{page: w}
}

// Every server's requests: the first visitor is let in and the
// application learns the ticket, the second waits on the page with 429
// though it sends every forwarding header with bypassed values, the first
// passes again, bypass paths pass, the revoke a server sends frees the
// slot and a refresh brings the waiting visitor in, each taking one
// chance per refresh.
func TestForwardAuthServers(t *testing.T) {
	for _, fs := range frontServers {
		t.Run(fs.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
				c.Bypass = forgeryBypass(t)
				c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
			})
			h := tr.handler(fs.door, Pass{})
			first, second := &visitor{}, &visitor{}

			s := fs.through(h, first, http.MethodGet, "/product?id=7", nil)
			require.True(t, s.passed, "the first visitor is let in")
			require.NotEmpty(t, first.cookie, "the cookie of a pass reaches the browser")
			tk, ok := waitingroom.ParseTicket(s.ticket)
			require.True(t, ok, "ticket %q", s.ticket)
			assert.NotZero(t, tk.ID)
			assert.Equal(t, tr.clk.Now().Truncate(time.Millisecond).UTC(), tk.AcceptedAt)
			tr.sync()

			s = fs.through(h, second, http.MethodPost, "/cart", forgedForwarding)
			require.False(t, s.passed, "one slot: the second visitor waits, whatever it forges")
			assert.Equal(t, http.StatusTooManyRequests, s.page.Code)
			assert.True(t, isWaiting(s.page), "the waiting page: %d %q", s.page.Code, s.page.Body.String())
			assert.NotEmpty(t, s.page.Header().Get("Retry-After"))
			require.NotEmpty(t, second.cookie, "the waiting visitor's cookie reaches the browser")
			tr.sync()
			assert.Equal(t, 1, tr.Stats().Waiting, "the waiting visitor counts once, whatever the server asks")

			s = fs.through(h, first, http.MethodGet, "/checkout", nil)
			assert.True(t, s.passed, "the admitted visitor passes again")
			_, ok = waitingroom.ParseTicket(s.ticket)
			assert.True(t, ok)

			s = fs.through(h, second, http.MethodGet, "/static/app.css", forgedForwarding)
			assert.True(t, s.passed, "bypass paths pass")
			assert.Equal(t, "bypassed", s.ticket)
			s = fs.through(h, second, http.MethodOptions, "/cart", nil)
			assert.True(t, s.passed, "bypass methods pass")
			for _, uri := range []string{"/static/../cart", "/STATIC/%2e%2e/cart", "static/x", "/static/..%09/cart", "/static/%C0%AE%C0%AE/cart", "/static/%E2%80%A5/cart"} {
				s = fs.through(h, &visitor{}, http.MethodGet, uri, forgedForwarding)
				assert.False(t, s.passed, "%s is not a bypass path", uri)
			}

			// The server sends the revoke command on the request that
			// ends the visit: the slot is free and the cookie expired.
			r := fs.auth(http.MethodGet, "/thanks", first.cookie, nil)
			r.Header.Set(waitingroom.CommandHeader, "revoke")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, http.StatusOK, w.Code, "the request that revokes passes")
			assert.Equal(t, "revoked", w.Header().Get(waitingroom.TicketHeader))
			cs := (&http.Response{Header: w.Header()}).Cookies()
			require.Len(t, cs, 1)
			assert.Equal(t, -1, cs[0].MaxAge)
			tr.sync()
			assert.Zero(t, tr.Stats().Active)

			tr.clk.Add(time.Minute)
			tr.sync()
			s = fs.through(h, second, http.MethodGet, "/cart", forgedForwarding)
			assert.True(t, s.passed, "a refresh brings the waiting visitor in")
		})
	}
}

// A visitor that adds every forwarding header with bypassed values gains
// nothing through any server: with every visitor queued, 20 cookie-less
// requests for a protected path each get the waiting page, count as
// waiting, and reach no bypass rule; the same requests without the
// forged headers fare the same.
func TestForwardAuthForgedForwarding(t *testing.T) {
	const n = 20
	for _, fs := range frontServers {
		t.Run(fs.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *waitingroom.Config) {
				c.QueueAll = true
				c.Bypass = forgeryBypass(t)
				c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
			})
			h := tr.handler(fs.door, Pass{})
			passed := 0
			for range n {
				for _, m := range []string{http.MethodGet, http.MethodPost} {
					if fs.through(h, &visitor{}, m, "/checkout", forgedForwarding).passed {
						passed++
					}
				}
			}
			assert.Zero(t, passed, "of %d requests with forged headers", 2*n)
			assert.Zero(t, tr.Stats().Counters.Bypassed, "no bypass rule matched")
			tr.sync()
			assert.Equal(t, 2*n, tr.Stats().Waiting, "each is a waiting visitor")
		})
	}
}

// A waiting visitor's request costs one chance whatever the server: the
// page nginx asks for after the 401 is that decision's, and takes none
// and counts no one again.
func TestForwardAuthPageTakesNoChance(t *testing.T) {
	tr := newTestRoom(t, func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	})
	nginx := frontServers[0]
	h := tr.handler(nginx.door, Pass{})
	require.True(t, nginx.through(h, &visitor{}, http.MethodGet, "/", nil).passed)
	tr.sync()

	v := &visitor{}
	r := nginx.auth(http.MethodGet, "/", "", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Zero(t, w.Body.Len(), "nginx shows nothing of the 401")
	setCookie := w.Header().Get("Set-Cookie")
	require.NotEmpty(t, setCookie)

	tr.clk.Add(50 * time.Millisecond)
	before := tr.Stats().Counters
	r = nginx.auth(http.MethodGet, "/", v.cookie, nil)
	r.Header.Set(ModeHeader, "page")
	r.Header.Set(CookieHeader, setCookie)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	assert.True(t, isWaiting(w))
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, before, tr.Stats().Counters, "no admission, no new place")
	assert.Equal(t, setCookie, w.Header().Get("Set-Cookie"), "the first answer's cookie reaches the browser")
	tr.sync()
	assert.Equal(t, 1, tr.Stats().Waiting)

	// A Waiting-Room-Cookie that is not the room's is ignored, and page
	// mode never answers a 2xx, which a server would take for a pass.
	for _, c := range []string{"", "other=abc", cookieName + "=not base64!", "garbage"} {
		r = nginx.auth(http.MethodGet, "/", "", nil)
		r.Header.Set(ModeHeader, "page")
		r.Header.Set(CookieHeader, c)
		w = httptest.NewRecorder()
		h.ServeHTTP(w, r)
		assert.False(t, w.Code >= 200 && w.Code < 300, "%q: %d", c, w.Code)
	}
}

// Each front door is read through its own headers only, and only from
// TrustedProxies: from anyone else the auth request is the original, and
// a client cannot reach a bypass path by naming it in a header of another
// door, twice, or from elsewhere. Garbage in the headers is ordinary
// input; a door that is none of the constants is refused.
func TestForwardAuthTrust(t *testing.T) {
	tr := newTestRoom(t, func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
		c.Bypass = []waitingroom.Rule{waitingroom.PathPrefix("/static/"), waitingroom.Methods(http.MethodOptions)}
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	})
	caddy := frontServers[1]
	require.True(t, caddy.through(tr.handler(caddy.door, Pass{}), &visitor{}, http.MethodGet, "/", nil).passed)
	tr.sync()

	const (
		fwd     = Forwarded
		ingress = IngressNginx
		envoy   = Envoy
		other   = "198.51.100.1:5000"
	)
	cases := []struct {
		name   string
		door   FrontDoor
		peer   string
		header map[string][]string
		target string
		pass   bool
	}{
		{"trusted, static", fwd, proxyAddr, map[string][]string{"X-Forwarded-Uri": {"/static/x.css"}}, "/", true},
		{"untrusted, static", fwd, other, map[string][]string{"X-Forwarded-Uri": {"/static/x.css"}}, "/", false},
		{"untrusted, request itself static", fwd, other, nil, "/static/x.css", true},
		{"trusted, no URI header, request itself static", fwd, proxyAddr, nil, "/static/x.css", false},
		{"trusted, OPTIONS", fwd, proxyAddr, map[string][]string{"X-Forwarded-Method": {"OPTIONS"}, "X-Forwarded-Uri": {"/"}}, "/", true},
		{"untrusted, OPTIONS", fwd, other, map[string][]string{"X-Forwarded-Method": {"OPTIONS"}}, "/", false},
		{"X-Forwarded-Uri twice", fwd, proxyAddr, map[string][]string{"X-Forwarded-Uri": {"/static/a", "/static/a"}}, "/", false},
		{"X-Forwarded-Method twice", fwd, proxyAddr, map[string][]string{"X-Forwarded-Method": {"OPTIONS", "OPTIONS"}, "X-Forwarded-Uri": {"/"}}, "/", false},
		{"X-Original-URI to the forwarded door", fwd, proxyAddr, map[string][]string{"X-Original-Uri": {"/static/a"}}, "/", false},
		{"X-Original-URL to the forwarded door", fwd, proxyAddr, map[string][]string{"X-Original-Url": {"http://h/static/a?b"}}, "/", false},
		{"X-Original-Method to the forwarded door", fwd, proxyAddr, map[string][]string{"X-Original-Method": {"OPTIONS"}, "X-Forwarded-Uri": {"/"}}, "/", false},
		{"garbage URI", fwd, proxyAddr, map[string][]string{"X-Forwarded-Uri": {"%zz/static/"}}, "/static/", false},
		{"absolute URI", fwd, proxyAddr, map[string][]string{"X-Forwarded-Uri": {"http://evil/static/"}}, "/static/", false},
		{"encoded dots", fwd, proxyAddr, map[string][]string{"X-Forwarded-Uri": {"/static/%2e%2e/cart"}}, "/static/", false},
		{"bad method", fwd, proxyAddr, map[string][]string{"X-Forwarded-Method": {"OPT IONS"}, "X-Forwarded-Uri": {"/"}}, "/", false},
		{"control bytes", fwd, proxyAddr, map[string][]string{"X-Forwarded-Uri": {"/static/\x00\x7f"}, "X-Forwarded-Host": {"\x01"}}, "/", false},

		{"X-Original-URL", ingress, proxyAddr, map[string][]string{"X-Original-Url": {"http://h/static/a?b"}}, "/", true},
		{"X-Original-URL, untrusted", ingress, other, map[string][]string{"X-Original-Url": {"http://h/static/a?b"}}, "/", false},
		{"X-Original-URL, a '?' in the host", ingress, proxyAddr, map[string][]string{"X-Original-Url": {"http://h?/static/a"}}, "/", true},
		{"X-Original-URL, a '?' in the host before no path", ingress, proxyAddr, map[string][]string{"X-Original-Url": {"http://h?x=/static/../a"}}, "/", false},
		{"X-Original-URL, no path", ingress, proxyAddr, map[string][]string{"X-Original-Url": {"https://h"}}, "/", false},
		{"X-Original-URL twice", ingress, proxyAddr, map[string][]string{"X-Original-Url": {"http://h/static/a", "http://h/static/a"}}, "/", false},
		{"relative X-Original-URL", ingress, proxyAddr, map[string][]string{"X-Original-Url": {"/static/a"}}, "/", false},
		{"X-Original-Method", ingress, proxyAddr, map[string][]string{"X-Original-Method": {"OPTIONS"}, "X-Original-Url": {"https://h/"}}, "/", true},
		{"X-Forwarded-Uri to the ingress-nginx door", ingress, proxyAddr, map[string][]string{"X-Forwarded-Uri": {"/static/a"}, "X-Original-Url": {"https://h/cart"}}, "/", false},
		{"X-Forwarded-Uri alone to the ingress-nginx door", ingress, proxyAddr, map[string][]string{"X-Forwarded-Uri": {"/static/a"}}, "/static/a", false},
		{"X-Original-URI to the ingress-nginx door", ingress, proxyAddr, map[string][]string{"X-Original-Uri": {"/static/a"}, "X-Original-Url": {"https://h/cart"}}, "/", false},
		{"X-Forwarded-Method to the ingress-nginx door", ingress, proxyAddr, map[string][]string{"X-Forwarded-Method": {"OPTIONS"}, "X-Original-Url": {"https://h/cart"}}, "/", false},

		{"the request itself", envoy, proxyAddr, nil, "/static/a", true},
		{"X-Forwarded-Uri to the envoy door", envoy, proxyAddr, map[string][]string{"X-Forwarded-Uri": {"/static/a"}}, "/cart", false},
		{"X-Original-URL to the envoy door", envoy, proxyAddr, map[string][]string{"X-Original-Url": {"https://h/static/a"}}, "/cart", false},
		{"X-Forwarded-Method to the envoy door", envoy, proxyAddr, map[string][]string{"X-Forwarded-Method": {"OPTIONS"}}, "/cart", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := tr.handler(c.door, Pass{})
			r := httptest.NewRequest(http.MethodGet, c.target, nil)
			r.RemoteAddr = c.peer
			for k, v := range c.header {
				r.Header[http.CanonicalHeaderKey(k)] = v
			}
			w := httptest.NewRecorder()
			require.NotPanics(t, func() { h.ServeHTTP(w, r) })
			assert.Equal(t, c.pass, w.Code == http.StatusOK, "status %d", w.Code)
		})
	}

	// A door that is none of the constants is a mistake in the
	// configuration, never a handler that would let anyone through.
	for _, door := range []FrontDoor{"", "nginx", "Forwarded"} {
		h, err := New(tr.Room, Options{FrontDoor: door})
		assert.ErrorIs(t, err, waitingroom.ErrInvalidConfig, "%q", door)
		assert.Nil(t, h)
	}
}

// Whatever a server or a client puts in the headers, the handler never
// panics, lets no one into a full room but through a bypass rule, and
// never answers a 2xx in page mode.
func FuzzForwardAuth(f *testing.F) {
	f.Add(uint8(0), "GET", "/static/a.css", "", "shop.example", "", "")
	f.Add(uint8(0), "OPTIONS", "/static/../cart", "status", "", "", "")
	f.Add(uint8(1), "GET", "", "page", "", "https://h/static/x", cookieName+"=abc")
	f.Add(uint8(1), "P\x00ST", "%zz", "page", "\x01", "http://[::1", "garbage")
	f.Add(uint8(2), "OPTIONS", "/static/a", "", "", "https://h/static/x", "")
	tr := newTestRoom(f, func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
		c.Bypass = []waitingroom.Rule{waitingroom.PathPrefix("/static/")}
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	})
	doors := []FrontDoor{Forwarded, IngressNginx, Envoy}
	hs := make([]http.Handler, len(doors))
	for i, d := range doors {
		hs[i] = tr.handler(d, Pass{})
	}
	require.True(f, frontServers[1].through(hs[0], &visitor{}, http.MethodGet, "/", nil).passed)
	tr.sync()
	f.Fuzz(func(t *testing.T, door uint8, method, uri, mode, host, original, cookie string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = proxyAddr
		for k, v := range map[string]string{"X-Forwarded-Method": method, "X-Forwarded-Uri": uri, ModeHeader: mode,
			"X-Forwarded-Host": host, "X-Original-Url": original, "X-Original-Method": method, CookieHeader: cookie} {
			if v != "" {
				r.Header[http.CanonicalHeaderKey(k)] = []string{v}
			}
		}
		w := httptest.NewRecorder()
		hs[int(door)%len(hs)].ServeHTTP(w, r)
		if w.Code >= 200 && w.Code < 300 {
			require.NotEqual(t, "page", mode, "a 2xx in page mode")
			require.Equal(t, "bypassed", w.Header().Get(waitingroom.TicketHeader), "the room is full: only a bypass rule lets a request through")
		}
	})
}

package waitingroom

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustNetworks(t testing.TB, cidrs ...string) Rule {
	r, err := ClientNetworks(cidrs...)
	require.NoError(t, err)
	return r
}

func TestBypassRules(t *testing.T) {
	type req struct {
		method, target, remote string
		header                 map[string]string
	}
	get := func(target string) req { return req{method: http.MethodGet, target: target} }
	for _, tc := range []struct {
		name string
		rule Rule
		req  req
		want bool
	}{
		{"prefix", PathPrefix("/static/"), get("/static/app.css"), true},
		{"prefix ignores case", PathPrefix("/static/"), get("/STATIC/app.css"), true},
		{"prefix, other path", PathPrefix("/static/"), get("/checkout"), false},
		{"prefix is not a substring", PathPrefix("/static/"), get("/staticky"), false},
		{"dot segments cannot smuggle", PathPrefix("/static/"), get("/static/../checkout"), false},
		{"encoded dot segments cannot smuggle", PathPrefix("/static/"), get("/static/%2e%2e/checkout"), false},
		{"double slash is not canonical", PathPrefix("/static/"), get("/static//x"), false},
		{"root", PathPrefix("/"), get("/"), true},
		{"case-sensitive", PathPrefixCaseSensitive("/Static/"), get("/static/x"), false},
		{"case-sensitive match", PathPrefixCaseSensitive("/Static/"), get("/Static/x"), true},
		{"method", Methods(http.MethodOptions), req{method: http.MethodOptions, target: "/"}, true},
		{"method, other", Methods(http.MethodOptions), get("/"), false},
		{"header any value", Header("x-monitor", nil), req{method: "GET", target: "/", header: map[string]string{"X-Monitor": "1"}}, true},
		{"header predicate", Header("X-Monitor", func(v string) bool { return v == "s3cret" }), req{method: "GET", target: "/", header: map[string]string{"X-Monitor": "guess"}}, false},
		{"header absent", Header("X-Monitor", nil), get("/"), false},
		{"cookie", Cookie("staff", func(v string) bool { return v == "yes" }), req{method: "GET", target: "/", header: map[string]string{"Cookie": "a=1; staff=yes"}}, true},
		{"cookie absent", Cookie("staff", nil), req{method: "GET", target: "/", header: map[string]string{"Cookie": "a=1"}}, false},
		{"network", mustNetworks(t, "10.0.0.0/8"), req{method: "GET", target: "/", remote: "10.1.2.3:5555"}, true},
		{"network ipv6", mustNetworks(t, "2001:db8::/32"), req{method: "GET", target: "/", remote: "[2001:db8::1]:5555"}, true},
		{"network, outside", mustNetworks(t, "10.0.0.0/8"), req{method: "GET", target: "/", remote: "192.0.2.1:5555"}, false},
		{"network ignores X-Forwarded-For by default", mustNetworks(t, "10.0.0.0/8"), req{method: "GET", target: "/", remote: "192.0.2.1:5555", header: map[string]string{"X-Forwarded-For": "10.0.0.1"}}, false},
		{"match", Match(func(r *http.Request) bool { return r.URL.Query().Get("k") == "v" }), get("/?k=v"), true},
		{"all", All(PathPrefix("/api/"), Methods(http.MethodGet)), req{method: http.MethodPost, target: "/api/x"}, false},
		{"all match", All(PathPrefix("/api/"), Methods(http.MethodGet)), get("/api/x"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) { c.QueueAll = true; c.Bypass = []Rule{tc.rule} })
			r := httptest.NewRequest(tc.req.method, tc.req.target, nil)
			if tc.req.remote != "" {
				r.RemoteAddr = tc.req.remote
			}
			for k, v := range tc.req.header {
				r.Header.Set(k, v)
			}
			d, err := tr.checkRequest(r)
			require.NoError(t, err)
			assert.Equal(t, tc.want, d.Outcome == outcomeBypassed, "outcome %v", d.Outcome)
		})
	}
}

func TestBypassedAreNotCounted(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
		c.Bypass = []Rule{PathPrefix("/healthz")}
	})
	for range 20 {
		w := httptest.NewRecorder()
		tr.app.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		require.Equal(t, "app", w.Body.String())
		assert.Empty(t, w.Result().Cookies(), "no cookie for bypassed requests")
	}
	assert.True(t, admitted(tr.get(&visitor{}, "")), "the bypassed requests took no slot")
	assert.Equal(t, uint64(20), tr.Stats().Counters.Bypassed)
}

func TestBypassValidation(t *testing.T) {
	_, err := ClientNetworks("10.0.0.0/33")
	assert.Error(t, err)
	_, err = New(Config{Name: "x", Settings: Settings{TotalActiveUsers: 1, NewUsersPerMinute: 1}, Keys: [][]byte{testKey}, Bypass: []Rule{{}}}, newMemStore())
	assert.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(Config{Name: "x", Settings: Settings{TotalActiveUsers: 1, NewUsersPerMinute: 1}, Keys: [][]byte{testKey}, TrustedProxies: []netip.Prefix{{}}}, newMemStore())
	assert.ErrorIs(t, err, ErrInvalidConfig)
	assert.Contains(t, All(PathPrefix("/a"), Methods("GET")).String(), "path prefix")
}

// TestPathPrefixRefusesPathsServersNormalise: paths that some server
// behind the room resolves to another path (Tomcat and Jetty read "..;" as
// "..", IIS reads "\" as "/", Windows drops trailing dots and spaces from
// a segment) are not canonical, so no path rule matches them and they go
// through the room.
func TestPathPrefixRefusesPathsServersNormalise(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target string
		// path, if set, replaces the parsed URL's Path and clears its
		// RawPath, as a handler in front of the room that rewrites the
		// URL may leave it.
		path string
		want bool
	}{
		{"plain", "/static/app.css", "", true},
		{"dot dot semicolon", "/static/..;/admin", "", false},
		{"dot dot semicolon with a parameter", "/static/..;jsessionid=x/admin", "", false},
		{"dot semicolon", "/static/.;/app.css", "", false},
		{"path parameter", "/static/app.css;jsessionid=x", "", false},
		{"parameter on the prefix", "/static;x=1/app.css", "", false},
		{"encoded semicolon", "/static/..%3b/admin", "", false},
		{"encoded dots and semicolon", "/static/%2e%2e;/admin", "", false},
		{"encoded dots", "/static/.%2E/admin", "", false},
		{"backslashes", `/static\..\admin`, "", false},
		{"encoded backslashes", "/static/..%5cadmin", "", false},
		{"backslash in a rewritten path", "/", `/static\..\admin`, false},
		{"semicolon in a rewritten path", "/", "/static/..;/admin", false},
		{"three dots", "/static/.../admin", "", false},
		{"dot dot and a space", "/static/..%20/admin", "", false},
		{"dot dot, a space and a dot", "/static/..%20./admin", "", false},
		{"dots inside a name", "/static/app..min.css", "", true},
		{"a dot file", "/static/.well-known", "", true},
	} {
		for kind, rule := range map[string]Rule{
			"PathPrefix":              PathPrefix("/static"),
			"PathPrefixCaseSensitive": PathPrefixCaseSensitive("/static"),
		} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				tr := newTestRoom(t, func(c *Config) { c.QueueAll = true; c.Bypass = []Rule{rule} })
				r := httptest.NewRequest(http.MethodGet, tc.target, nil)
				if tc.path != "" {
					r.URL.Path, r.URL.RawPath = tc.path, ""
				}
				d, err := tr.checkRequest(r)
				require.NoError(t, err)
				assert.Equal(t, tc.want, d.Outcome == outcomeBypassed, "outcome %v", d.Outcome)
			})
		}
	}
}

// TestPathPrefixNeedsPrintableASCII: what follows a path prefix must be
// printable ASCII once decoded. A control character beside dots
// ("..%09", which an application that trims whitespace reads as ".."),
// the bytes of an overlong encoding ("%C0%AE", a '.' to lax UTF-8
// decoders) and characters that normalise to dots ("%E2%80%A5", U+2025,
// is ".." under NFKC; "%EF%BC%8E" is a fullwidth '.') take the path
// through the room, as does any other non-ASCII byte, unless the prefix
// itself holds it. ASCII case alone is ignored: the Kelvin sign is no 'k'.
func TestPathPrefixNeedsPrintableASCII(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix string
		target string
		want   bool
	}{
		{"tab beside dots", "/static/", "/static/..%09/checkout", false},
		{"tab alone", "/static/", "/static/%09", false},
		{"newline", "/static/", "/static/..%0A/checkout", false},
		{"NUL", "/static/", "/static/%00/x", false},
		{"DEL", "/static/", "/static/..%7F/checkout", false},
		{"overlong dots", "/static/", "/static/%C0%AE%C0%AE/checkout", false},
		{"overlong slash", "/static/", "/static/..%C0%AFcheckout", false},
		{"two dot leader", "/static/", "/static/%E2%80%A5/checkout", false},
		{"fullwidth dots", "/static/", "/static/%EF%BC%8E%EF%BC%8E/checkout", false},
		{"one dot leader and a dot", "/static/", "/static/%E2%80%A4./checkout", false},
		{"non-ASCII name", "/static/", "/static/caf%C3%A9.css", false},
		{"raw invalid UTF-8", "/static/", "/static/\xc0\xae\xc0\xae/checkout", false},
		{"space inside a name", "/static/", "/static/a%20b.css", true},
		{"printable punctuation", "/static/", "/static/a-b_c~d+e@f,g=h:i.css", true},
		{"the prefix alone", "/healthz", "/healthz", true},
		{"a non-ASCII prefix asks for it", "/café/", "/caf%C3%A9/menu.css", true},
		{"a non-ASCII prefix, ASCII case ignored", "/café/", "/CAF%C3%A9/menu.css", true},
		{"a non-ASCII prefix, other case of é", "/café/", "/caf%C3%89/menu.css", false},
		{"a non-ASCII prefix, more non-ASCII after it", "/café/", "/caf%C3%A9/%C3%A9", false},
		{"Kelvin sign is no k", "/kit/", "/%E2%84%AAit/checkout", false},
		{"long s is no s", "/static/", "/%C5%BFtatic/x", false},
	} {
		for kind, rule := range map[string]Rule{
			"PathPrefix":              PathPrefix(tc.prefix),
			"PathPrefixCaseSensitive": PathPrefixCaseSensitive(tc.prefix),
		} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				want := tc.want
				if kind == "PathPrefixCaseSensitive" && tc.name == "a non-ASCII prefix, ASCII case ignored" {
					want = false
				}
				tr := newTestRoom(t, func(c *Config) { c.QueueAll = true; c.Bypass = []Rule{rule} })
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				u, err := url.ParseRequestURI(tc.target)
				require.NoError(t, err)
				r.URL, r.RequestURI = u, tc.target
				d, err := tr.checkRequest(r)
				require.NoError(t, err)
				assert.Equal(t, want, d.Outcome == outcomeBypassed, "outcome %v", d.Outcome)
			})
		}
	}
}

package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

const adminToken = "test-admin-token-0123456789abcdef"

// adminClock is a virtual clock: tests move it, nothing sleeps.
type adminClock = testclock.Clock

func newAdminClock() *adminClock { return testclock.New(testclock.Start) }

// adminFixture is a room on a virtual clock that syncs only when told, its
// admin handler and its middleware in front of a trivial application.
type adminFixture struct {
	t     testing.TB
	clk   *adminClock
	room  *waitingroom.Room
	admin http.Handler
	app   http.Handler
}

func newAdminFixture(t testing.TB, clk *adminClock, st store.Store, mutate func(*waitingroom.Config)) *adminFixture {
	t.Helper()
	cfg := waitingroom.Config{
		Name: "launch",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  10,
			NewUsersPerMinute: 10,
		},
		Keys:         [][]byte{[]byte("0123456789abcdef0123456789abcdef")},
		SyncInterval: -1,
		Now:          clk.Now,
		Logger:       slog.New(slog.DiscardHandler),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	rm, err := waitingroom.New(cfg, st)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	auth, err := admin.BearerToken(adminToken)
	require.NoError(t, err)
	h, err := admin.Handler(rm, auth)
	require.NoError(t, err)
	f := &adminFixture{t: t, clk: clk, room: rm, admin: h}
	f.app = rm.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "app")
	}))
	return f
}

func (f *adminFixture) sync() {
	f.t.Helper()
	require.NoError(f.t, f.room.Sync(context.Background()))
}

// visit sends one visitor's request through the room and reports whether
// it reached the application; cookie is the visitor's cookie jar.
func (f *adminFixture) visit(cookie *string) bool {
	return f.get(cookie).Body.String() == "app"
}

// get sends one visitor's request through the room and returns the
// response; cookie is the visitor's cookie jar.
func (f *adminFixture) get(cookie *string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	if *cookie != "" {
		r.Header.Set("Cookie", *cookie)
	}
	w := httptest.NewRecorder()
	f.app.ServeHTTP(w, r)
	for _, c := range w.Result().Cookies() {
		*cookie = c.Name + "=" + c.Value
	}
	return w
}

// do sends an authenticated admin request; header pairs are added as given.
func (f *adminFixture) do(method, path, body string, header ...string) *httptest.ResponseRecorder {
	f.t.Helper()
	r := httptest.NewRequest(method, "http://example.com"+path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+adminToken)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			r.Header.Del(header[i])
		} else {
			r.Header.Set(header[i], header[i+1])
		}
	}
	w := httptest.NewRecorder()
	f.admin.ServeHTTP(w, r)
	assert.Equal(f.t, "no-store", w.Header().Get("Cache-Control"), "%s %s", method, path)
	return w
}

// getJSON fetches path and decodes its JSON body into a generic map.
func (f *adminFixture) getJSON(path string) map[string]any {
	f.t.Helper()
	w := f.do(http.MethodGet, path, "")
	require.Equal(f.t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(f.t, "application/json", w.Header().Get("Content-Type"))
	var m map[string]any
	require.NoError(f.t, json.Unmarshal(w.Body.Bytes(), &m))
	return m
}

func (f *adminFixture) settings() waitingroom.Settings {
	f.t.Helper()
	w := f.do(http.MethodGet, "/settings", "")
	require.Equal(f.t, http.StatusOK, w.Code, w.Body.String())
	var s waitingroom.Settings
	require.NoError(f.t, json.Unmarshal(w.Body.Bytes(), &s))
	return s
}

func errorMessage(t testing.TB, w *httptest.ResponseRecorder) string {
	t.Helper()
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	var e struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e), w.Body.String())
	assert.True(t, strings.HasPrefix(e.Error, "waitingroom: "), "error %q", e.Error)
	return e.Error
}

func TestAdminHandlerRefusesNilAuthenticator(t *testing.T) {
	f := newAdminFixture(t, newAdminClock(), memstore.New(), nil)
	h, err := admin.Handler(f.room, nil)
	require.ErrorIs(t, err, waitingroom.ErrInvalidConfig)
	assert.Nil(t, h)
	assert.Contains(t, err.Error(), "Authenticator")
}

func TestAdminBearerTokenRefusesWeakTokens(t *testing.T) {
	for _, tc := range []struct {
		name, token string
		ok          bool
	}{
		{"empty", "", false},
		{"15 bytes", strings.Repeat("x", 15), false},
		{"16 bytes", strings.Repeat("x", 16), true},
		{"space", "abcdefgh ijklmnopq", false},
		{"control", "abcdefgh\x01ijklmnopq", false},
		{"non-ASCII", "abcdefghijklmnopé", false},
		{"base64", "dGhpcyBpcyBhIHRva2Vu+/==", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth, err := admin.BearerToken(tc.token)
			if tc.ok {
				require.NoError(t, err)
				require.NotNil(t, auth)
				return
			}
			require.ErrorIs(t, err, waitingroom.ErrInvalidConfig)
			assert.True(t, strings.HasPrefix(err.Error(), "waitingroom: "), err.Error())
			assert.Nil(t, auth)
		})
	}
}

func TestAdminAuthentication(t *testing.T) {
	f := newAdminFixture(t, newAdminClock(), memstore.New(), nil)
	f.sync()
	before := f.room.Stats().Settings

	for _, tc := range []struct {
		name   string
		header []string // Authorization values
		ok     bool
	}{
		{"no header", nil, false},
		{"empty", []string{""}, false},
		{"wrong token", []string{"Bearer wrong-token-0123456789abcdef"}, false},
		{"token prefix", []string{"Bearer " + adminToken[:len(adminToken)-1]}, false},
		{"token and more", []string{"Bearer " + adminToken + "x"}, false},
		{"wrong scheme", []string{"Basic " + adminToken}, false},
		{"no scheme", []string{adminToken}, false},
		{"scheme only", []string{"Bearer"}, false},
		{"two headers", []string{"Bearer " + adminToken, "Bearer " + adminToken}, false},
		{"right", []string{"Bearer " + adminToken}, true},
		{"scheme in lower case", []string{"bearer " + adminToken}, true},
	} {
		for _, req := range []struct{ method, path, body string }{
			{http.MethodGet, "/", ""},
			{http.MethodGet, "/status", ""},
			{http.MethodGet, "/history", ""},
			{http.MethodGet, "/settings", ""},
			{http.MethodPatch, "/settings", `{"queueAll":true,"totalActiveUsers":17}`},
			{http.MethodGet, "/no-such-page", ""},
		} {
			t.Run(tc.name+" "+req.method+" "+req.path, func(t *testing.T) {
				r := httptest.NewRequest(req.method, "http://example.com"+req.path, strings.NewReader(req.body))
				r.Header.Set("Content-Type", "application/json")
				for _, v := range tc.header {
					r.Header.Add("Authorization", v)
				}
				w := httptest.NewRecorder()
				f.admin.ServeHTTP(w, r)
				assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
				if tc.ok {
					assert.NotEqual(t, http.StatusUnauthorized, w.Code)
					if req.method == http.MethodPatch {
						require.Equal(t, http.StatusOK, w.Code, w.Body.String())
						// Put it back for the next case.
						require.NoError(t, f.room.Update(context.Background(), func(s *waitingroom.Settings) { *s = before }))
					}
					return
				}
				assert.Equal(t, http.StatusUnauthorized, w.Code)
				assert.True(t, strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer"), w.Header().Get("WWW-Authenticate"))
				errorMessage(t, w)
				assert.NotContains(t, w.Body.String(), "launch", "a refused request learns nothing about the room")
				assert.Equal(t, before, f.room.Stats().Settings)
			})
		}
	}
}

func TestAdminStatus(t *testing.T) {
	clk := newAdminClock()
	f := newAdminFixture(t, clk, memstore.New(), func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 3, 3
	})

	// Before the first sync: nothing known yet.
	m := f.getJSON("/status")
	assert.Nil(t, m["lastSync"])
	assert.Equal(t, "launch", m["room"])

	f.sync()
	cookies := make([]string, 5)
	admitted := 0
	for i := range cookies {
		if f.visit(&cookies[i]) {
			admitted++
		}
	}
	require.Equal(t, 3, admitted)
	clk.Add(20 * time.Second)
	f.sync()
	stats := f.room.Stats()

	m = f.getJSON("/status")
	assert.Equal(t, "launch", m["room"])
	assert.Equal(t, "queueing", m["status"])
	assert.EqualValues(t, 3, m["active"])
	assert.EqualValues(t, 2, m["waiting"])
	assert.EqualValues(t, 3, m["admittedThisMinute"])
	assert.InDelta(t, stats.OutflowPerMinute, m["outflowPerMinute"], 0.005)
	assert.Greater(t, m["outflowPerMinute"], 0.0)
	assert.EqualValues(t, 1, m["instances"])
	assert.Equal(t, clk.Now().Format(time.RFC3339Nano), m["lastSync"])
	assert.Contains(t, m, "nextEvent")
	assert.Nil(t, m["nextEvent"])
	assert.Equal(t, map[string]any{
		"queueingMethod": "fifo", "totalActiveUsers": 3.0, "newUsersPerMinute": 3.0,
		"queueAll": false, "suspended": false,
	}, m["settings"])
	assert.Equal(t, []any{map[string]any{"minute": "2026-05-27T15:54:00Z", "waiting": 2.0}}, m["queue"])

	require.True(t, stats.Estimate.Known)
	assert.Equal(t, map[string]any{
		"known":       true,
		"full":        false,
		"waitSeconds": stats.Estimate.Wait.Seconds(),
		"p25Seconds":  nil,
		"p50Seconds":  nil,
		"p75Seconds":  nil,
		"formatted":   stats.Estimate.Formatted(""),
	}, m["estimatedWait"])

	counters, ok := m["counters"].(map[string]any)
	require.True(t, ok, "counters: %v", m["counters"])
	assert.EqualValues(t, 3, counters["admitted"])
	assert.EqualValues(t, 2, counters["queued"])
	assert.EqualValues(t, 2, counters["syncs"])
	assert.EqualValues(t, 0, counters["syncErrors"])

	// Random: the percentiles.
	w := f.do(http.MethodPatch, "/settings", `{"queueingMethod":"random"}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	stats = f.room.Stats()
	require.True(t, stats.Estimate.Known)
	m = f.getJSON("/status")
	assert.Equal(t, map[string]any{
		"known":       true,
		"full":        false,
		"waitSeconds": stats.Estimate.P50.Seconds(),
		"p25Seconds":  stats.Estimate.P25.Seconds(),
		"p50Seconds":  stats.Estimate.P50.Seconds(),
		"p75Seconds":  stats.Estimate.P75.Seconds(),
		"formatted":   stats.Estimate.Formatted(""),
	}, m["estimatedWait"])

	// Suspended.
	w = f.do(http.MethodPatch, "/settings", `{"suspended":true}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, "suspended", f.getJSON("/status")["status"])
}

func TestAdminPatchSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		ct   string
		want func(*waitingroom.Settings)
	}{
		{"queueing method", `{"queueingMethod":"random"}`, "", func(s *waitingroom.Settings) { s.QueueingMethod = waitingroom.Random }},
		{"limits", `{"totalActiveUsers":50,"newUsersPerMinute":20}`, "", func(s *waitingroom.Settings) {
			s.TotalActiveUsers, s.NewUsersPerMinute = 50, 20
		}},
		{"queue all", `{"queueAll":true}`, "", func(s *waitingroom.Settings) { s.QueueAll = true }},
		{"suspended", `{"suspended":true}`, "", func(s *waitingroom.Settings) { s.Suspended = true }},
		{"everything", `{"queueingMethod":"reject","totalActiveUsers":4,"newUsersPerMinute":4,"queueAll":true,"suspended":true}`, "",
			func(s *waitingroom.Settings) {
				*s = waitingroom.Settings{QueueingMethod: waitingroom.Reject, TotalActiveUsers: 4, NewUsersPerMinute: 4, QueueAll: true, Suspended: true}
			}},
		{"nothing", `{}`, "", func(*waitingroom.Settings) {}},
		{"white space", " \n{ \"queueAll\" : true }\n ", "", func(s *waitingroom.Settings) { s.QueueAll = true }},
		{"charset", `{"queueAll":true}`, "application/json; charset=utf-8", func(s *waitingroom.Settings) { s.QueueAll = true }},
		{"merge patch", `{"queueAll":true}`, "application/merge-patch+json", func(s *waitingroom.Settings) { s.QueueAll = true }},
		{"session duration", `{"sessionDuration":"10m"}`, "", func(s *waitingroom.Settings) { s.SessionDuration = 10 * time.Minute }},
		{"session duration in nanoseconds", `{"sessionDuration":120000000000}`, "", func(s *waitingroom.Settings) { s.SessionDuration = 2 * time.Minute }},
		{"session renewal", `{"disableSessionRenewal":true}`, "", func(s *waitingroom.Settings) { s.DisableSessionRenewal = true }},
		{"status code", `{"queueingStatusCode":429}`, "", func(s *waitingroom.Settings) { s.QueueingStatusCode = 429 }},
		{"template", `{"template":"<p>{{waitTime}}</p>"}`, "", func(s *waitingroom.Settings) { s.Template = "<p>{{waitTime}}</p>" }},
		{"challenge", `{"challenge":{"kind":"pow","onFail":"infinite","difficulty":18}}`, "", func(s *waitingroom.Settings) {
			s.Challenge = &challenge.Policy{Kind: challenge.PoW, OnFail: challenge.Infinite, Difficulty: 18}
		}},
		{"challenge off", `{"challenge":{}}`, "", func(s *waitingroom.Settings) { s.Challenge = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAdminFixture(t, newAdminClock(), memstore.New(), nil)
			f.sync()
			want := f.room.Stats().Settings
			tc.want(&want)
			var header []string
			if tc.ct != "" {
				header = []string{"Content-Type", tc.ct}
			}
			w := f.do(http.MethodPatch, "/settings", tc.body, header...)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			var got waitingroom.Settings
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got))
			assert.Equal(t, want, got)
			assert.Equal(t, want, f.room.Stats().Settings)
			f.sync()
			assert.Equal(t, want, f.settings(), "the change is in the shared state")
		})
	}
}

func TestAdminPatchSettingsRefusesBadInput(t *testing.T) {
	big := `{"queueAll":true}` + strings.Repeat(" ", 1<<20)
	for _, tc := range []struct {
		name    string
		body    string
		header  []string
		chunked bool // no Content-Length
		code    int
		msg     string
	}{
		{"empty", "", nil, false, http.StatusBadRequest, "empty"},
		{"not JSON", `queueAll=true`, nil, false, http.StatusBadRequest, "malformed JSON"},
		{"truncated", `{"queueAll":true`, nil, false, http.StatusBadRequest, "malformed JSON"},
		{"array", `[{"queueAll":true}]`, nil, false, http.StatusBadRequest, "JSON object"},
		{"string", `"queueAll"`, nil, false, http.StatusBadRequest, "JSON object"},
		{"unknown field", `{"queueAll":true,"maxUsers":3}`, nil, false, http.StatusBadRequest, `unknown setting "maxUsers"`},
		{"wrong case", `{"QueueAll":true}`, nil, false, http.StatusBadRequest, `unknown setting "QueueAll"`},
		{"Go field name", `{"TotalActiveUsers":20}`, nil, false, http.StatusBadRequest, `unknown setting "TotalActiveUsers"`},
		{"bool as string", `{"queueAll":"true"}`, nil, false, http.StatusBadRequest, `"queueAll" must be true or false`},
		{"bool as number", `{"suspended":1}`, nil, false, http.StatusBadRequest, `"suspended" must be true or false`},
		{"number as string", `{"totalActiveUsers":"20"}`, nil, false, http.StatusBadRequest, `"totalActiveUsers" must be an integer`},
		{"fraction", `{"newUsersPerMinute":2.5}`, nil, false, http.StatusBadRequest, `"newUsersPerMinute" must be an integer`},
		{"too big for int", `{"totalActiveUsers":1e40}`, nil, false, http.StatusBadRequest, `"totalActiveUsers" must be an integer`},
		{"method as number", `{"queueingMethod":1}`, nil, false, http.StatusBadRequest, `"queueingMethod" must be a string`},
		{"null", `{"queueAll":null}`, nil, false, http.StatusBadRequest, `"queueAll" must not be null`},
		{"twice", `{"queueAll":true,"queueAll":false}`, nil, false, http.StatusBadRequest, `"queueAll" appears twice`},
		{"trailing object", `{"queueAll":true}{"suspended":true}`, nil, false, http.StatusBadRequest, "nothing after it"},
		{"trailing garbage", `{"queueAll":true} x`, nil, false, http.StatusBadRequest, "malformed JSON"},
		{"unknown method", `{"queueingMethod":"lifo"}`, nil, false, http.StatusUnprocessableEntity, `"queueingMethod" must be "fifo", "random", "passthrough" or "reject", got "lifo"`},
		{"method in capitals", `{"queueingMethod":"FIFO"}`, nil, false, http.StatusUnprocessableEntity, `got "FIFO"`},
		{"empty method", `{"queueingMethod":""}`, nil, false, http.StatusUnprocessableEntity, `got ""`},
		{"zero", `{"totalActiveUsers":0}`, nil, false, http.StatusUnprocessableEntity, `"totalActiveUsers" must be > 0, got 0`},
		{"negative", `{"newUsersPerMinute":-5}`, nil, false, http.StatusUnprocessableEntity, `"newUsersPerMinute" must be > 0, got -5`},
		{"rate above total", `{"newUsersPerMinute":11}`, nil, false, http.StatusUnprocessableEntity, "must not exceed TotalActiveUsers"},
		{"total below rate", `{"totalActiveUsers":9}`, nil, false, http.StatusUnprocessableEntity, "must not exceed TotalActiveUsers"},
		{"good and bad", `{"queueAll":true,"suspended":true,"totalActiveUsers":-1}`, nil, false, http.StatusUnprocessableEntity, "must be > 0"},
		{"good then unknown", `{"queueAll":true,"x":1}`, nil, false, http.StatusBadRequest, `unknown setting "x"`},
		{"no content type", `{"queueAll":true}`, []string{"Content-Type", ""}, false, http.StatusUnsupportedMediaType, "application/json"},
		{"form", `queueAll=true`, []string{"Content-Type", "application/x-www-form-urlencoded"}, false, http.StatusUnsupportedMediaType, "application/json"},
		{"text", `{"queueAll":true}`, []string{"Content-Type", "text/plain"}, false, http.StatusUnsupportedMediaType, "application/json"},
		{"too large", big, nil, false, http.StatusRequestEntityTooLarge, "larger than 1048576 bytes"},
		{"too large, chunked", big, nil, true, http.StatusRequestEntityTooLarge, "larger than 1048576 bytes"},
		{"session as text", `{"sessionDuration":"ten minutes"}`, nil, false, http.StatusBadRequest, `"sessionDuration" must be a duration`},
		{"session too long", `{"sessionDuration":"2h"}`, nil, false, http.StatusUnprocessableEntity, "SessionDuration must be between"},
		{"status code", `{"queueingStatusCode":503}`, nil, false, http.StatusUnprocessableEntity, "QueueingStatusCode must be 200, 202 or 429"},
		{"status code as string", `{"queueingStatusCode":"429"}`, nil, false, http.StatusBadRequest, `"queueingStatusCode" must be an integer`},
		{"renewal as string", `{"disableSessionRenewal":"yes"}`, nil, false, http.StatusBadRequest, `"disableSessionRenewal" must be true or false`},
		{"template as number", `{"template":1}`, nil, false, http.StatusBadRequest, `"template" must be a string`},
		{"template does not parse", `{"template":"{{#open}}"}`, nil, false, http.StatusUnprocessableEntity, "Template"},
		{"template with a partial", `{"template":"{{> header}}"}`, nil, false, http.StatusUnprocessableEntity, "partials"},
		{"challenge as string", `{"challenge":"pow"}`, nil, false, http.StatusBadRequest, `"challenge" must be a challenge object`},
		{"challenge unknown field", `{"challenge":{"kind":"pow","level":3}}`, nil, false, http.StatusBadRequest, `"challenge" must be a challenge object`},
		{"challenge unknown kind", `{"challenge":{"kind":"captcha"}}`, nil, false, http.StatusUnprocessableEntity, "challenge.Policy.Kind"},
		{"challenge too hard", `{"challenge":{"kind":"pow","difficulty":40}}`, nil, false, http.StatusUnprocessableEntity, "challenge.Policy.Difficulty"},
		{"cross-site browser request", `{"queueAll":true}`, []string{"Sec-Fetch-Site", "cross-site"}, false, http.StatusForbidden, "cross-origin"},
		{"other origin", `{"queueAll":true}`, []string{"Origin", "https://attacker.test"}, false, http.StatusForbidden, "cross-origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAdminFixture(t, newAdminClock(), memstore.New(), nil)
			f.sync()
			before := f.room.Stats().Settings

			r := httptest.NewRequest(http.MethodPatch, "http://example.com/settings", strings.NewReader(tc.body))
			r.Header.Set("Authorization", "Bearer "+adminToken)
			r.Header.Set("Content-Type", "application/json")
			for i := 0; i+1 < len(tc.header); i += 2 {
				if tc.header[i+1] == "" {
					r.Header.Del(tc.header[i])
				} else {
					r.Header.Set(tc.header[i], tc.header[i+1])
				}
			}
			if tc.chunked {
				r.ContentLength = -1
				r.Body = io.NopCloser(strings.NewReader(tc.body))
			}
			w := httptest.NewRecorder()
			f.admin.ServeHTTP(w, r)

			assert.Equal(t, tc.code, w.Code, w.Body.String())
			assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
			assert.Contains(t, errorMessage(t, w), tc.msg)
			assert.Equal(t, before, f.room.Stats().Settings, "nothing changed on this instance")
			f.sync()
			assert.Equal(t, before, f.room.Stats().Settings, "nothing changed in the shared state")
		})
	}
}

func TestAdminMethodsAndPaths(t *testing.T) {
	f := newAdminFixture(t, newAdminClock(), memstore.New(), nil)
	f.sync()
	for _, tc := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{http.MethodGet, "/", http.StatusOK, ""},
		{http.MethodHead, "/", http.StatusOK, ""},
		{http.MethodGet, "", http.StatusOK, ""}, // mounted without a trailing slash
		{http.MethodPost, "/", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodGet, "/status", http.StatusOK, ""},
		{http.MethodHead, "/status", http.StatusOK, ""},
		{http.MethodPost, "/status", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodDelete, "/status", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodGet, "/history", http.StatusOK, ""},
		{http.MethodPut, "/history", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodGet, "/settings", http.StatusOK, ""},
		{http.MethodPost, "/settings", http.StatusMethodNotAllowed, "GET, HEAD, PATCH"},
		{http.MethodPut, "/settings", http.StatusMethodNotAllowed, "GET, HEAD, PATCH"},
		{http.MethodOptions, "/settings", http.StatusMethodNotAllowed, "GET, HEAD, PATCH"},
		{http.MethodGet, "/status/", http.StatusNotFound, ""},
		{http.MethodGet, "/index.html", http.StatusNotFound, ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "http://example.com/", nil)
			r.URL.Path = tc.path
			r.Header.Set("Authorization", "Bearer "+adminToken)
			w := httptest.NewRecorder()
			f.admin.ServeHTTP(w, r)
			assert.Equal(t, tc.code, w.Code, w.Body.String())
			assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
			assert.Equal(t, tc.allow, w.Header().Get("Allow"))
			if tc.code != http.StatusOK {
				errorMessage(t, w)
			}
		})
	}
}

func TestAdminMountedUnderPrefix(t *testing.T) {
	f := newAdminFixture(t, newAdminClock(), memstore.New(), nil)
	f.sync()
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", f.admin))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, path := range []string{"/admin/", "/admin/status", "/admin/history", "/admin/settings"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
}

func TestAdminHistory(t *testing.T) {
	clk := newAdminClock()
	f := newAdminFixture(t, clk, memstore.New(), func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 2, 2
	})

	h := f.getJSON("/history")
	assert.Equal(t, []any{}, h["samples"], "no sync, no sample")
	assert.Equal(t, []any{}, h["admittedPerMinute"])
	assert.EqualValues(t, 10, h["intervalSeconds"])
	assert.EqualValues(t, 3600, h["windowSeconds"])

	f.sync() // 15:54:00
	cookies := make([]string, 5)
	for i := range cookies {
		f.visit(&cookies[i]) // 2 admitted, 3 waiting
	}
	clk.Add(3 * time.Second)
	f.sync() // 15:54:03
	f.getJSON("/status")
	clk.Add(4 * time.Second)
	f.sync() // 15:54:07: the same 10 s interval, replaces the sample
	f.getJSON("/status")
	clk.Add(5 * time.Second)
	f.sync() // 15:54:12
	h = f.getJSON("/history")
	assert.Equal(t, "2026-05-27T15:54:12Z", h["now"])
	assert.Equal(t, []any{
		map[string]any{"t": "2026-05-27T15:54:07Z", "active": 2.0, "waiting": 3.0, "admittedThisMinute": 2.0, "outflowPerMinute": 2.0},
		map[string]any{"t": "2026-05-27T15:54:12Z", "active": 2.0, "waiting": 3.0, "admittedThisMinute": 2.0, "outflowPerMinute": 2.0},
	}, h["samples"])
	assert.Equal(t, []any{map[string]any{"minute": "2026-05-27T15:54:00Z", "admitted": 2.0}}, h["admittedPerMinute"])

	// An hour and a half later, one sync and one look every 10 s: the
	// history keeps one sample per 10 s over the last hour.
	for range 540 {
		clk.Add(10 * time.Second)
		f.sync()
		f.getJSON("/status")
	}
	h = f.getJSON("/history")
	samples := h["samples"].([]any)
	assert.Len(t, samples, 361)
	now := clk.Now()
	first, err := time.Parse(time.RFC3339, samples[0].(map[string]any)["t"].(string))
	require.NoError(t, err)
	last, err := time.Parse(time.RFC3339, samples[len(samples)-1].(map[string]any)["t"].(string))
	require.NoError(t, err)
	assert.Equal(t, now.Add(-time.Hour), first)
	assert.Equal(t, now, last)
	for _, m := range h["admittedPerMinute"].([]any) {
		minute, err := time.Parse(time.RFC3339, m.(map[string]any)["minute"].(string))
		require.NoError(t, err)
		assert.False(t, minute.Before(now.Add(-time.Hour).Truncate(time.Minute)), minute)
	}
}

var externalRef = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]|<(link|iframe|img|object|embed)\b|\bsrc\s*=|@import|url\(`)

func TestAdminStatusPage(t *testing.T) {
	clk := newAdminClock()
	f := newAdminFixture(t, clk, memstore.New(), func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 7, 3
	})
	f.sync()
	cookies := make([]string, 5)
	for i := range cookies {
		f.visit(&cookies[i]) // 3 admitted, 2 waiting
	}
	clk.Add(30 * time.Second)
	f.sync()
	stats := f.room.Stats()
	require.Equal(t, 3, stats.Active)
	require.Equal(t, 2, stats.Waiting)

	w := f.do(http.MethodGet, "/", "")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
	body := w.Body.String()

	for _, want := range []string{
		"<!DOCTYPE html>",
		`<span id="room">launch</span>`,
		`id="status" class="badge queueing">queueing<`,
		`id="queueingMethod">fifo<`,
		`<span id="active">3</span>`,
		`<span id="totalActiveUsers">7</span>`,
		`<dd id="waiting">2</dd>`,
		`<span id="admittedThisMinute">3</span>`,
		`<span id="newUsersPerMinute">3</span>`,
		`<dd id="outflowPerMinute">3.0</dd>`, // the limit, not 3 in 30 s read as 6 a minute
		`<dd id="estimatedWait">` + stats.Estimate.Formatted("") + `</dd>`,
		`<dd id="instances">1</dd>`,
		`<span id="challengesIssued">0</span>`,
		`<span id="challengesParked">0</span>`,
		`<span id="lastSync">2026-05-27T15:54:30Z</span>`,
		`id="chart"`,
		`get('history')`,
	} {
		assert.Contains(t, body, want)
	}

	// Self-contained: no external URL, no fetched asset.
	assert.NotContains(t, body, "http://")
	assert.NotContains(t, body, "https://")
	assert.Empty(t, externalRef.FindAllString(body, -1))

	// The inline script and style run under a per-response nonce, and
	// nothing else does.
	csp := w.Header().Get("Content-Security-Policy")
	nonce := regexp.MustCompile(`script-src 'nonce-([A-Za-z0-9+/]+)'`).FindStringSubmatch(csp)
	require.Len(t, nonce, 2, csp)
	assert.Contains(t, csp, "default-src 'none'")
	assert.Contains(t, csp, "connect-src 'self'")
	assert.Contains(t, csp, "frame-ancestors 'none'")
	assert.Equal(t, 1, strings.Count(body, `<script nonce="`+nonce[1]+`">`))
	assert.Equal(t, 1, strings.Count(body, "<script"))
	assert.Equal(t, 1, strings.Count(body, `<style nonce="`+nonce[1]+`">`))
	again := f.do(http.MethodGet, "/", "")
	assert.NotEqual(t, csp, again.Header().Get("Content-Security-Policy"), "a fresh nonce per response")
}

func TestAdminStatusPageUnknownWait(t *testing.T) {
	f := newAdminFixture(t, newAdminClock(), memstore.New(), nil)
	w := f.do(http.MethodGet, "/", "")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `<dd id="estimatedWait">unknown</dd>`)
	assert.Contains(t, w.Body.String(), `<span id="lastSync">never</span>`)
	assert.Contains(t, w.Body.String(), `class="badge not_queueing">not_queueing<`)
}

// TestAdminChangeReachesOtherInstances changes the settings through one
// instance's admin API and sees another instance, on the same store, follow
// at its next sync. The integration module runs it on every real store.
func TestAdminChangeReachesOtherInstances(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) store.Store
	}{
		{"memstore", func(*testing.T) store.Store { return memstore.New() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.store(t)
			clk := newAdminClock()
			a := newAdminFixture(t, clk, st, nil)
			b := newAdminFixture(t, clk, st, nil)
			// Two rounds, so that each instance holds a share of the slots.
			a.sync()
			b.sync()
			a.sync()
			b.sync()
			before := b.settings()
			require.Equal(t, waitingroom.Settings{QueueingMethod: waitingroom.FIFO, TotalActiveUsers: 10, NewUsersPerMinute: 10}, before)
			assert.EqualValues(t, 2, a.getJSON("/status")["instances"])

			w := a.do(http.MethodPatch, "/settings", `{"queueingMethod":"random","totalActiveUsers":40,"newUsersPerMinute":25,"queueAll":true}`)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			want := waitingroom.Settings{QueueingMethod: waitingroom.Random, TotalActiveUsers: 40, NewUsersPerMinute: 25, QueueAll: true}
			assert.Equal(t, want, a.settings(), "the instance that made the change follows at once")
			assert.Equal(t, before, b.settings(), "the other one at its next sync")
			var c string
			assert.True(t, b.visit(&c), "b does not queue everyone yet")

			clk.Add(time.Second)
			b.sync()
			assert.Equal(t, want, b.settings())
			m := b.getJSON("/status")
			assert.Equal(t, "queueing", m["status"])
			assert.Equal(t, map[string]any{
				"queueingMethod": "random", "totalActiveUsers": 40.0, "newUsersPerMinute": 25.0,
				"queueAll": true, "suspended": false,
			}, m["settings"])
			c = ""
			assert.False(t, b.visit(&c), "b queues everyone now")

			// And back, through b.
			w = b.do(http.MethodPatch, "/settings", `{"queueAll":false,"suspended":true}`)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			clk.Add(time.Second)
			a.sync()
			assert.Equal(t, "suspended", a.getJSON("/status")["status"])
		})
	}
}

// The settings the previous admin API could not change (PATCH answered
// 400) change through it now, on every instance.
func TestAdminPatchVisitorSettingsAcrossInstances(t *testing.T) {
	clk, st := newAdminClock(), memstore.New()
	a := newAdminFixture(t, clk, st, func(c *waitingroom.Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1 })
	b := newAdminFixture(t, clk, st, func(c *waitingroom.Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1 })
	syncBoth := func() {
		for range 2 {
			a.sync()
			b.sync()
		}
	}
	syncBoth()
	var in string
	require.True(t, a.visit(&in) || b.visit(&in), "one visitor in")
	w := a.do(http.MethodPatch, "/settings",
		`{"sessionDuration":"1m","disableSessionRenewal":true,"queueingStatusCode":202,"template":"<p>wait {{refreshIntervalSeconds}}</p>"}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	clk.Add(time.Second)
	syncBoth()
	want := waitingroom.Settings{QueueingMethod: waitingroom.FIFO, TotalActiveUsers: 1, NewUsersPerMinute: 1,
		SessionDuration: time.Minute, DisableSessionRenewal: true, QueueingStatusCode: 202, Template: "<p>wait {{refreshIntervalSeconds}}</p>"}
	for _, f := range []*adminFixture{a, b} {
		assert.Equal(t, want, f.settings())
		r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
		rec := httptest.NewRecorder()
		f.app.ServeHTTP(rec, r)
		assert.Equal(t, http.StatusAccepted, rec.Code, "the room is full: the new visitor waits, with the new status")
		assert.Regexp(t, `^<p>wait \d+</p>$`, rec.Body.String(), "on the new page")
	}
	// The session is capped at a minute from admission, however active the
	// visitor is: then they are a new visitor, counted as a new admission.
	admissions := func() uint64 { return a.room.Stats().Counters.Admitted + b.room.Stats().Counters.Admitted }
	before := admissions()
	clk.Add(30 * time.Second)
	syncBoth()
	require.True(t, a.visit(&in))
	assert.Equal(t, before, admissions(), "within the minute")
	clk.Add(30 * time.Second)
	syncBoth()
	a.visit(&in)
	assert.Equal(t, before+1, admissions(), "the capped session is over")
}

func TestAdminScheduledEvent(t *testing.T) {
	clk := newAdminClock() // 15:54
	f := newAdminFixture(t, clk, memstore.New(), nil)
	at := func(hm string) time.Time {
		tm, err := time.Parse("2006-01-02 15:04", "2026-05-27 "+hm)
		require.NoError(t, err)
		return tm
	}
	require.NoError(t, f.room.Update(context.Background(), func(s *waitingroom.Settings) {
		s.Events = []waitingroom.Event{{
			Name:              "drop",
			Description:       "Spring drop",
			PrequeueStart:     at("16:00"),
			Start:             at("16:10"),
			End:               at("17:00"),
			TotalActiveUsers:  20,
			NewUsersPerMinute: 5,
		}}
	}))
	f.sync()
	event := func(inProgress, prequeueing bool) map[string]any {
		return map[string]any{
			"name": "drop", "description": "Spring drop", "prequeueStart": "2026-05-27T16:00:00Z", "start": "2026-05-27T16:10:00Z", "end": "2026-05-27T17:00:00Z",
			"inProgress": inProgress, "prequeueing": prequeueing, "shuffleAtStart": false,
			"totalActiveUsers": 20.0, "newUsersPerMinute": 5.0,
		}
	}

	m := f.getJSON("/status")
	assert.Equal(t, "not_queueing", m["status"])
	assert.Equal(t, event(false, false), m["nextEvent"])

	// A change through the admin API leaves the events alone.
	w := f.do(http.MethodPatch, "/settings", `{"totalActiveUsers":12}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Len(t, f.room.Stats().Settings.Events, 1)

	for _, step := range []struct {
		at     time.Duration // since 15:54
		status string
		event  any
	}{
		{6*time.Minute + 30*time.Second, "event_prequeueing", event(true, true)},
		{16*time.Minute + 30*time.Second, "not_queueing", event(true, false)},
		{66*time.Minute + 30*time.Second, "not_queueing", nil},
	} {
		clk.Add(at("15:54").Add(step.at).Sub(clk.Now()))
		f.sync()
		m := f.getJSON("/status")
		assert.Equal(t, step.status, m["status"], clk.Now())
		assert.Equal(t, step.event, m["nextEvent"], clk.Now())
	}
}

// Events posted through the admin API carry a description, which the
// status page shows, and may be suspended: the room passes over them, on
// every instance, until they are resumed.
func TestAdminEventDescriptionAndSuspended(t *testing.T) {
	clk := newAdminClock() // 15:54
	st := memstore.New()
	a := newAdminFixture(t, clk, st, nil)
	b := newAdminFixture(t, clk, st, nil)
	events := func(suspended bool) string {
		return `{"events":[{"name":"maintenance","description":"Database <upgrade>","start":"2026-05-27T15:00:00Z",` +
			`"end":"2026-05-27T17:00:00Z","queueingMethod":"reject","suspended":` + strconv.FormatBool(suspended) + `},` +
			`{"name":"drop","description":"Spring drop","start":"2026-05-27T18:00:00Z","end":"2026-05-27T19:00:00Z"}]}`
	}
	syncBoth := func() {
		for range 2 { // the second round shares the grant between the two
			a.sync()
			b.sync()
		}
	}
	w := a.do(http.MethodPatch, "/settings", events(true))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	syncBoth()
	for _, f := range []*adminFixture{a, b} {
		s := f.settings()
		require.Len(t, s.Events, 2)
		assert.True(t, s.Events[0].Suspended)
		assert.Equal(t, "Database <upgrade>", s.Events[0].Description)
		m := f.getJSON("/status")
		assert.Equal(t, "not_queueing", m["status"], "the suspended event does not apply")
		next, _ := m["nextEvent"].(map[string]any)
		assert.Equal(t, "drop", next["name"], "the next event that applies")
		var c string
		assert.True(t, f.visit(&c), "the suspended event rejects nobody")
		page := f.do(http.MethodGet, "/", "").Body.String()
		assert.Contains(t, page, "Next event\n  <b id=\"eventName\">drop</b> · <span id=\"eventDescription\">Spring drop</span>")
	}

	w = b.do(http.MethodPatch, "/settings", events(false))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	syncBoth()
	for _, f := range []*adminFixture{a, b} {
		m := f.getJSON("/status")
		next, _ := m["nextEvent"].(map[string]any)
		assert.Equal(t, "maintenance", next["name"])
		assert.Equal(t, true, next["inProgress"])
		var c string
		assert.False(t, f.visit(&c), "resumed, the event closes the site")
		assert.Contains(t, f.do(http.MethodGet, "/", "").Body.String(), "Database &lt;upgrade&gt;", "escaped")
	}

	// A description one byte longer than Event.Description allows.
	w = a.do(http.MethodPatch, "/settings", `{"events":[{"name":"x","description":"`+strings.Repeat("y", 1025)+
		`","start":"2026-05-27T18:00:00Z","end":"2026-05-27T19:00:00Z"}]}`)
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code, w.Body.String())
}

func TestAdminPatchEvents(t *testing.T) {
	f := newAdminFixture(t, newAdminClock(), memstore.New(), nil)
	ev := `{"name":"drop","start":"2026-05-27T17:00:00Z","end":"2026-05-27T18:00:00Z","prequeueStart":"2026-05-27T16:50:00Z","shuffleAtStart":true,"totalActiveUsers":50,"newUsersPerMinute":10}`
	w := f.do(http.MethodPatch, "/settings", `{"events":[`+ev+`]}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	evs := f.room.Stats().Settings.Events
	require.Len(t, evs, 1)
	assert.Equal(t, "drop", evs[0].Name)
	assert.True(t, evs[0].ShuffleAtStart)
	assert.Equal(t, 10, evs[0].NewUsersPerMinute)

	for name, body := range map[string]string{
		"not a list":       `{"events":{"name":"x"}}`,
		"unknown field":    `{"events":[{"name":"x","colour":"red"}]}`,
		"overlap":          `{"events":[` + ev + `,{"name":"b","start":"2026-05-27T17:30:00Z","end":"2026-05-27T19:00:00Z"}]}`,
		"not whole minute": `{"events":[{"name":"x","start":"2026-05-27T17:00:30Z","end":"2026-05-27T18:00:00Z"}]}`,
	} {
		w := f.do(http.MethodPatch, "/settings", body)
		assert.GreaterOrEqual(t, w.Code, 400, name)
		assert.Less(t, w.Code, 500, name)
		assert.Contains(t, w.Body.String(), "error", name)
		assert.Len(t, f.room.Stats().Settings.Events, 1, "%s: nothing changed", name)
	}
	w = f.do(http.MethodPatch, "/settings", `{"events":[]}`)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Empty(t, f.room.Stats().Settings.Events, "an empty list removes the events")
}

// The preview renders the live template, or one posted, in every state a
// visitor can see, behind the admin API's authentication, and changes
// nothing.
func TestAdminPreview(t *testing.T) {
	clk := newAdminClock()
	f := newAdminFixture(t, clk, memstore.New(), func(c *waitingroom.Config) {
		c.Template = "<p>{{#queueAll}}all {{/queueAll}}{{#isRejectQueue}}closed {{/isRejectQueue}}{{waitTimeFormatted}}</p>"
	})
	f.sync()
	before := f.settings()
	states := func(w *httptest.ResponseRecorder) map[string]map[string]any {
		t.Helper()
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		require.Equal(t, "application/json", w.Header().Get("Content-Type"))
		var body struct {
			Template string           `json:"template"`
			States   []map[string]any `json:"states"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
		out := map[string]map[string]any{}
		for _, s := range body.States {
			out[s["state"].(string)] = s
		}
		require.Len(t, out, len(admin.PreviewStates()))
		return out
	}

	live := states(f.do(http.MethodGet, "/preview", ""))
	assert.Equal(t, "<p>12 minutes</p>", live["queueing"]["html"])
	assert.Equal(t, "<p>all unavailable</p>", live["queueAll"]["html"])
	assert.Equal(t, "<p>closed unavailable</p>", live["reject"]["html"])
	assert.Equal(t, 200.0, live["queueing"]["status"])
	data := live["eventPrequeue"]["data"].(map[string]any)
	assert.Equal(t, true, data["isEventPrequeueing"])
	assert.Equal(t, 15.0, data["timeUntilEventStart"])

	posted := states(f.do(http.MethodPost, "/preview", `{"template":"<i>{{queueingMethod}}</i>"}`))
	assert.Equal(t, "<i>fifo</i>", posted["unknownWait"]["html"])
	assert.Equal(t, "<i>reject</i>", posted["reject"]["html"])
	def := states(f.do(http.MethodPost, "/preview?lang=fr", `{"template":""}`))
	assert.Contains(t, def["queueing"]["html"], `<html lang="fr"`, "\"\" is the default page")
	assert.Contains(t, def["queueing"]["html"], "12 minutes")

	// One state's page as HTML, sandboxed.
	w := f.do(http.MethodGet, "/preview?state=queueAll", "")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
	assert.Equal(t, "sandbox allow-scripts", w.Header().Get("Content-Security-Policy"))
	assert.Equal(t, "<p>all unavailable</p>", w.Body.String())
	w = f.do(http.MethodPost, "/preview?state=reject", `{"template":"<b>{{isRejectQueue}}</b>"}`)
	assert.Equal(t, "<b>true</b>", w.Body.String())

	for _, tc := range []struct {
		method, path, body string
		code               int
		msg                string
	}{
		{http.MethodGet, "/preview?state=full", "", http.StatusNotFound, "queueing, queueAll, eventPrequeue, reject, unknownWait"},
		{http.MethodGet, "/preview?lang=tlh", "", http.StatusBadRequest, "language"},
		{http.MethodPost, "/preview", `{"template":"{{#open}}"}`, http.StatusUnprocessableEntity, "Template"},
		{http.MethodPost, "/preview", `{"template":"{{> partial}}"}`, http.StatusUnprocessableEntity, "partials"},
		{http.MethodPost, "/preview", `{}`, http.StatusBadRequest, "the template to preview"},
		{http.MethodPost, "/preview", `{"tmpl":"x"}`, http.StatusBadRequest, "unknown field"},
		{http.MethodPost, "/preview", `[]`, http.StatusBadRequest, "JSON object"},
		{http.MethodPatch, "/preview", `{}`, http.StatusMethodNotAllowed, "GET, HEAD, POST"},
	} {
		w := f.do(tc.method, tc.path, tc.body)
		assert.Equal(t, tc.code, w.Code, "%s %s %s", tc.method, tc.path, tc.body)
		assert.Contains(t, w.Body.String(), tc.msg, "%s %s %s", tc.method, tc.path, tc.body)
	}

	// Same authentication as the rest of the admin API.
	r := httptest.NewRequest(http.MethodGet, "http://example.com/preview?state=queueing", nil)
	w = httptest.NewRecorder()
	f.admin.ServeHTTP(w, r)
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	r = httptest.NewRequest(http.MethodPost, "http://example.com/preview", strings.NewReader(`{"template":"x"}`))
	r.Header.Set("Authorization", "Bearer "+adminToken)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	w = httptest.NewRecorder()
	f.admin.ServeHTTP(w, r)
	assert.Equal(t, http.StatusForbidden, w.Code, "a cross-site POST is refused")

	assert.Equal(t, before, f.settings(), "nothing changed")
	var c string
	assert.True(t, f.visit(&c), "the room lets visitors in as before")

	// The status page links to each state.
	page := f.do(http.MethodGet, "/", "").Body.String()
	for _, s := range admin.PreviewStates() {
		assert.Contains(t, page, `data-state="`+string(s)+`" href="preview?state=`+string(s)+`"`)
	}
}

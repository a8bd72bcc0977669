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
	return decodeSettings(f.t, w.Body.Bytes())
}

// decodeSettings reads Settings as the admin API writes them: session
// durations as durations ("10m0s").
func decodeSettings(t testing.TB, b []byte) waitingroom.Settings {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m), string(b))
	nanos := func(m map[string]json.RawMessage) {
		if raw, ok := m["sessionDuration"]; ok {
			var str string
			require.NoError(t, json.Unmarshal(raw, &str), "sessionDuration is a duration: %s", raw)
			d, err := time.ParseDuration(str)
			require.NoError(t, err)
			m["sessionDuration"], _ = json.Marshal(int64(d))
		}
	}
	nanos(m)
	if raw, ok := m["events"]; ok {
		var evs []map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &evs))
		for _, ev := range evs {
			nanos(ev)
		}
		m["events"], _ = json.Marshal(evs)
	}
	b, _ = json.Marshal(m)
	var s waitingroom.Settings
	require.NoError(t, json.Unmarshal(b, &s))
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

var externalRef = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]|<(link|iframe|img|object|embed)\b|\bsrc\s*=|@import|url\(`)

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
		assert.Contains(t, page, "Next event\n  <b id=\"eventName\">drop</b> · <span id=\"eventDescription\">Spring drop</span> · <span id=\"eventTimes\">")
		assert.Regexp(t, `<span id="eventTimes">(pre-queue from \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, )?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ–\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ</span>`, page, "the event's times, in UTC")
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
		{http.MethodPost, "/preview", `{"template":"<p>{{waitTimeMinutes}}</p>"}`, http.StatusUnprocessableEntity, "unknown variable: {{waitTimeMinutes}} on line 1 (did you mean waitTime?)"},
		{http.MethodPost, "/preview", `{"template":"{{#isFifoQueue}}x{{/isFifoQueue}}"}`, http.StatusUnprocessableEntity, "{{#isFifoQueue}} on line 1 (did you mean isFIFOQueue?)"},
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

	// The status page links to the preview page and to each state.
	page := f.do(http.MethodGet, "/", "").Body.String()
	assert.Contains(t, page, `<a id="previewAll" href="preview"`)
	for _, s := range admin.PreviewStates() {
		assert.Contains(t, page, `data-state="`+string(s)+`" href="preview?state=`+string(s)+`"`)
	}
}

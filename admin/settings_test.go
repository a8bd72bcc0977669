package admin_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

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
			assert.Equal(t, want, decodeSettings(t, w.Body.Bytes()))
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
		{"template with a mistyped variable", `{"template":"{{waitTimeMinutes}}"}`, nil, false, http.StatusUnprocessableEntity, "{{waitTimeMinutes}} on line 1 (did you mean waitTime?)"},
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

	// A session given as the top-level setting is: a duration.
	w = f.do(http.MethodPatch, "/settings", `{"events":[`+strings.Replace(ev, `"name":"drop"`, `"name":"drop","sessionDuration":"10m"`, 1)+`]}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, 10*time.Minute, f.room.Stats().Settings.Events[0].SessionDuration)

	for name, tc := range map[string]struct{ body, msg string }{
		"a time without a zone": {`{"events":[{"name":"x","start":"2026-05-27 17:00","end":"2026-05-27T18:00:00Z"}]}`, `event 1: start must be a time in RFC 3339, such as`},
		"a time in seconds":     {`{"events":[{"name":"x","start":"2026-05-27T17:00:00Z","end":1779904800}]}`, `event 1: end must be a time in RFC 3339`},
		"a session not a duration": {`{"events":[{"name":"x","start":"2026-05-27T17:00:00Z","end":"2026-05-27T18:00:00Z","sessionDuration":"long"}]}`,
			`event 1: sessionDuration must be a duration such as "10m"`},
	} {
		w := f.do(http.MethodPatch, "/settings", tc.body)
		assert.Equal(t, http.StatusBadRequest, w.Code, name)
		assert.Contains(t, errorMessage(t, w), tc.msg, name)
	}
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

// TestAdminSettingsReadAsWritten holds that GET /settings writes session
// durations as PATCH takes them, and that its answer, sent back as a
// PATCH, changes nothing.
func TestAdminSettingsReadAsWritten(t *testing.T) {
	f := newAdminFixture(t, newAdminClock(), memstore.New(), nil)
	ev := `{"name":"drop","start":"2026-05-27T17:00:00Z","end":"2026-05-27T18:00:00Z","prequeueStart":"2026-05-27T16:50:00Z","shuffleAtStart":true,"totalActiveUsers":50,"newUsersPerMinute":10,"sessionDuration":"5m"}`
	w := f.do(http.MethodPatch, "/settings", `{"sessionDuration":"10m","queueingMethod":"random","challenge":{"kind":"pow","onFail":"infinite"},"events":[`+ev+`]}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	for _, body := range []string{w.Body.String(), f.do(http.MethodGet, "/settings", "").Body.String()} {
		assert.Contains(t, body, `"sessionDuration":"10m0s"`)
		assert.Contains(t, body, `"sessionDuration":"5m0s"`)
		assert.NotContains(t, body, "000000000", "no duration in nanoseconds")
	}
	before := f.room.Stats().Settings
	assert.Equal(t, before, f.settings())

	got := f.do(http.MethodGet, "/settings", "").Body.String()
	w = f.do(http.MethodPatch, "/settings", got)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, before, f.room.Stats().Settings)
	assert.JSONEq(t, got, w.Body.String())

	// Without a session duration of its own, none is written.
	w = f.do(http.MethodPatch, "/settings", `{"sessionDuration":0,"events":[]}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.NotContains(t, w.Body.String(), "sessionDuration")
}

package waitingroom

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPageLanguage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		language  string
		negotiate bool
		accept    string
		wantLang  string
		wantVary  bool
	}{
		{"default", "", false, "de-DE,de;q=0.9", "en", false},
		{"configured", "fr", false, "de-DE,de;q=0.9", "fr", false},
		{"negotiated", "en", true, "de-DE,de;q=0.9,en;q=0.5", "de", true},
		{"negotiated, unsupported falls back", "fr", true, "tlh", "fr", true},
		{"negotiated, none", "es", true, "", "es", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) { c.QueueAll = true; c.Language = tc.language; c.NegotiateLanguage = tc.negotiate })
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("Accept-Language", tc.accept)
			w := httptest.NewRecorder()
			tr.app.ServeHTTP(w, r)
			assert.Contains(t, w.Body.String(), `lang="`+tc.wantLang+`"`)
			assert.Equal(t, tc.wantVary, contains(w.Header().Values("Vary"), "Accept-Language"))
		})
	}
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

func TestLocalizedWait(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 10, 10
		c.Language = "de"
	})
	for range 10 {
		require.True(t, admitted(tr.get(&visitor{}, "")))
	}
	for range 30 {
		tr.get(&visitor{}, "")
	}
	tr.clk.Add(45 * time.Second)
	tr.sync()
	got := jsonBody(t, tr.get(&visitor{}, "application/json"))
	assert.Equal(t, "20 Minuten", got["waitTimeFormatted"])
}

func jsonBody(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var body map[string]map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), w.Body.String())
	return body["waitingRoom"]
}

func TestEventPageVariables(t *testing.T) {
	clk := newClock()
	start := clk.Now().Add(10 * time.Minute)
	tr := newTestRoomOn(t, clk, newMemStore(), func(c *Config) {
		c.Events = []Event{{Name: "drop", PrequeueStart: start.Add(-5 * time.Minute), Start: start, End: start.Add(time.Hour), ShuffleAtStart: true}}
	})
	clk.Add(7*time.Minute + 30*time.Second)
	tr.sync()
	got := jsonBody(t, tr.get(&visitor{}, "application/json"))
	assert.Equal(t, true, got["isEventPrequeueing"])
	assert.Equal(t, false, got["isEventActive"])
	assert.Equal(t, true, got["shuffleAtEventStart"])
	assert.Equal(t, float64(3), got["timeUntilEventStart"], "2.5 minutes, shown rounded up")
	assert.Equal(t, "3 minutes", got["timeUntilEventStartFormatted"])
	assert.Equal(t, false, got["waitTimeKnown"])

	html := tr.get(&visitor{}, "")
	assert.Contains(t, html.Body.String(), "3 minutes")
}

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
			tr := newTestRoom(t, func(c *Config) {
				c.QueueAll = true
				c.Page.Language = tc.language
				c.Page.NegotiateLanguage = tc.negotiate
			})
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
		c.Page.Language = "de"
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
	clk.Add(5*time.Minute - time.Second)
	tr.sync()
	tr.Update(t.Context(), func(s *Settings) { s.QueueAll = true })
	early := &visitor{}
	got := jsonBody(t, tr.get(early, "application/json"))
	assert.Equal(t, false, got["isEventActive"], "before the pre-queue")
	tr.Update(t.Context(), func(s *Settings) { s.QueueAll = false })
	clk.Add(2*time.Minute + 31*time.Second)
	tr.sync()
	got = jsonBody(t, tr.get(&visitor{}, "application/json"))
	assert.Equal(t, true, got["isEventPrequeueing"])
	assert.Equal(t, true, got["isEventActive"], "the product counts the pre-queue as part of the event")
	assert.Equal(t, true, got["shuffleAtEventStart"])
	assert.NotEmpty(t, got["lotteryIdentity"])
	got = jsonBody(t, tr.get(early, "application/json"))
	assert.Equal(t, true, got["isEventPrequeueing"])
	assert.Equal(t, false, got["shuffleAtEventStart"], "queued before the pre-queue opened: first, not shuffled")
	assert.Nil(t, got["lotteryIdentity"], "nor shown a draw")
	assert.NotContains(t, tr.get(early, "").Body.String(), "<p>When the event starts")
	assert.Contains(t, tr.get(&visitor{}, "").Body.String(), "<p>When the event starts")
	assert.Equal(t, float64(3), got["timeUntilEventStart"], "2.5 minutes, shown rounded up")
	assert.Equal(t, "3 minutes", got["timeUntilEventStartFormatted"])
	assert.Equal(t, false, got["waitTimeKnown"])

	html := tr.get(&visitor{}, "")
	assert.Contains(t, html.Body.String(), "3 minutes")
	assert.NotContains(t, html.Body.String(), "63 minutes", "the default page says when the event ends only once it runs")

	for _, tc := range []struct {
		at                 time.Time
		active, prequeuing bool
	}{
		{start, true, false},
		{start.Add(time.Hour - time.Second), true, false},
		{start.Add(time.Hour), false, false},
	} {
		clk.Set(tc.at)
		tr.sync()
		tr.Update(t.Context(), func(s *Settings) { s.QueueAll = true }) // a waiting page at every moment
		got := jsonBody(t, tr.get(&visitor{}, "application/json"))
		assert.Equal(t, tc.active, got["isEventActive"], "at %v", tc.at.Sub(start))
		assert.Equal(t, tc.prequeuing, got["isEventPrequeueing"], "at %v", tc.at.Sub(start))
	}
}

// lastUpdated is the visitor's latest attempt and refreshIntervalSeconds
// counts from it: a refresh before the next chance changes neither (it
// is no attempt), while the Refresh header says how long is left.
func TestLastUpdatedIsTheLatestAttempt(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.QueueAll = true
		c.RefreshJitter = -1 // 20 s exactly
	})
	tr.clk.Add(300 * time.Millisecond) // not on a whole second
	tr.sync()
	v := &visitor{}
	first := tr.clk.Now()
	got := jsonBody(t, tr.get(v, "application/json"))
	stamp := first.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05.000Z")
	assert.Equal(t, stamp, got["lastUpdated"])
	assert.Equal(t, float64(20), got["refreshIntervalSeconds"])

	tr.clk.Add(12 * time.Second)
	tr.sync() // a sync in between changes nothing the visitor sees
	w := tr.get(v, "application/json")
	got = jsonBody(t, w)
	assert.Equal(t, stamp, got["lastUpdated"], "an early refresh is no attempt")
	assert.Equal(t, float64(20), got["refreshIntervalSeconds"], "an early refresh does not shrink the interval")
	assert.Equal(t, "8", w.Header().Get("Refresh"), "the browser comes back when the chance is due")

	tr.clk.Add(8 * time.Second)
	w = tr.get(v, "application/json")
	got = jsonBody(t, w)
	assert.Equal(t, tr.clk.Now().UTC().Truncate(time.Second).Format("2006-01-02T15:04:05.000Z"), got["lastUpdated"], "a chance taken is an attempt")
	assert.Equal(t, float64(20), got["refreshIntervalSeconds"])
	assert.Equal(t, "20", w.Header().Get("Refresh"))
}

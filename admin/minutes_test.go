package admin_test

import (
	"context"
	"encoding/csv"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// historyFixture runs a room from 15:54 to 16:05 with a scheduled event
// (pre-queue 15:56, start 15:58, end 16:00, 5 a minute where the room lets
// in 2): a new visitor every 10 s, each coming back every 20 s until let
// in, a sync every second.
func historyFixture(t *testing.T) *adminFixture {
	clk := newAdminClock()
	f := newAdminFixture(t, clk, memstore.New(), func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 100, 2
		c.RefreshJitter = -1
	})
	at := func(hm string) time.Time {
		tm, err := time.Parse("2006-01-02 15:04", "2026-05-27 "+hm)
		require.NoError(t, err)
		return tm
	}
	require.NoError(t, f.room.Update(context.Background(), func(s *waitingroom.Settings) {
		s.Events = []waitingroom.Event{{Name: "drop", PrequeueStart: at("15:56"), Start: at("15:58"), End: at("16:00"), TotalActiveUsers: 100, NewUsersPerMinute: 5}}
	}))
	f.sync()
	type waiter struct {
		cookie string
		next   time.Time
	}
	var waiting []*waiter
	for clk.Now().Before(at("16:05")) {
		now := clk.Now()
		if now.Second()%10 == 0 {
			waiting = append(waiting, &waiter{next: now})
		}
		kept := waiting[:0]
		for _, w := range waiting {
			if !now.Before(w.next) {
				if f.visit(&w.cookie) {
					continue
				}
				w.next = now.Add(20 * time.Second)
			}
			kept = append(kept, w)
		}
		waiting = kept
		clk.Add(time.Second)
		f.sync()
	}
	return f
}

func TestAdminMinutes(t *testing.T) {
	f := historyFixture(t)
	m := f.getJSON("/minutes?from=2026-05-27T15:54:00Z&to=2026-05-27T16:03:00Z")
	assert.Equal(t, "launch", m["room"])
	assert.EqualValues(t, 60, m["stepSeconds"])
	ms := m["minutes"].([]any)
	require.Len(t, ms, 9)
	first := ms[0].(map[string]any)
	assert.Equal(t, "2026-05-27T15:54:00Z", first["minute"])
	assert.EqualValues(t, 2, first["admitted"])
	assert.EqualValues(t, 2, first["newUsersPerMinute"])
	assert.EqualValues(t, 100, first["totalActiveUsers"])
	assert.Equal(t, "", first["event"])
	assert.Equal(t, false, first["partial"])
	w := first["wait"].(map[string]any)
	assert.EqualValues(t, 2, w["count"])
	for _, k := range []string{"p50Seconds", "p90Seconds", "maxSeconds"} {
		assert.Contains(t, w, k)
	}
	byMinute := map[string]map[string]any{}
	for _, x := range ms {
		byMinute[x.(map[string]any)["minute"].(string)] = x.(map[string]any)
	}
	pre, during, after := byMinute["2026-05-27T15:56:00Z"], byMinute["2026-05-27T15:58:00Z"], byMinute["2026-05-27T16:00:00Z"]
	assert.Equal(t, "drop", pre["event"], "the pre-queue is the event's")
	assert.EqualValues(t, 0, pre["admitted"], "nobody in during the pre-queue")
	assert.Equal(t, "drop", during["event"])
	assert.EqualValues(t, 5, during["newUsersPerMinute"])
	assert.EqualValues(t, 5, during["admitted"], "the event's limit, with a queue")
	assert.Greater(t, during["wait"].(map[string]any)["p50Seconds"], 60.0, "they waited through the pre-queue")
	assert.Equal(t, "", after["event"])

	// Coarser: five minutes a point, admissions summed.
	m = f.getJSON("/minutes?from=2026-05-27T15:50:00Z&to=2026-05-27T16:00:00Z&step=300")
	assert.EqualValues(t, 300, m["stepSeconds"])
	ms = m["minutes"].([]any)
	require.Len(t, ms, 2)
	assert.Equal(t, "2026-05-27T15:50:00Z", ms[0].(map[string]any)["minute"])
	assert.EqualValues(t, 2, ms[0].(map[string]any)["admitted"], "15:54 (the room's first minute)")
	assert.EqualValues(t, 2+0+0+5+5, ms[1].(map[string]any)["admitted"], "15:55 to 15:59")
	assert.EqualValues(t, 5, ms[1].(map[string]any)["newUsersPerMinute"], "the most of its minutes")

	// A range given in another zone: the same minutes, the answer's times
	// all in UTC.
	m = f.getJSON("/minutes?from=2026-05-27T10:50:00-05:00&to=2026-05-27T11:00:00-05:00&step=300")
	assert.Equal(t, "2026-05-27T15:50:00Z", m["from"])
	assert.Equal(t, "2026-05-27T16:00:00Z", m["to"])
	require.Len(t, m["minutes"].([]any), 2)

	// The default: the last 24 hours, at most 1,440 points.
	m = f.getJSON("/minutes")
	assert.EqualValues(t, 60, m["stepSeconds"])
	assert.Len(t, m["minutes"].([]any), 11, "15:54 to 16:04 (the last partial): the range ends at 16:05:00")
}

func TestAdminMinutesCSV(t *testing.T) {
	f := historyFixture(t)
	w := f.do(http.MethodGet, "/minutes?from=2026-05-27T15:54:00Z&to=2026-05-27T16:00:00Z&format=csv", "")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, "text/csv; charset=utf-8", w.Header().Get("Content-Type"))
	assert.Equal(t, `attachment; filename="launch-minutes.csv"`, w.Header().Get("Content-Disposition"))
	rows, err := csv.NewReader(strings.NewReader(w.Body.String())).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 1+6)
	assert.Equal(t, []string{"minute", "active", "waiting", "admitted", "abandoned", "total_active_users", "new_users_per_minute", "event",
		"waits", "wait_p50_seconds", "wait_p90_seconds", "wait_max_seconds",
		"sessions", "session_p50_seconds", "session_p90_seconds", "session_max_seconds", "partial"}, rows[0])
	assert.Equal(t, "2026-05-27T15:54:00Z", rows[1][0])
	assert.Equal(t, "2", rows[1][3])
	assert.Equal(t, "drop", rows[5][7])

	w = f.do(http.MethodGet, "/reports?format=csv", "")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	rows, err = csv.NewReader(strings.NewReader(w.Body.String())).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 2)
	assert.Equal(t, []string{"drop", "2026-05-27T15:56:00Z", "2026-05-27T16:00:00Z", "4"}, rows[1][:4])
}

func TestAdminReports(t *testing.T) {
	f := historyFixture(t)
	m := f.getJSON("/reports")
	rs := m["reports"].([]any)
	require.Len(t, rs, 1)
	r := rs[0].(map[string]any)
	assert.Equal(t, "drop", r["event"])
	assert.Equal(t, "2026-05-27T15:56:00Z", r["from"], "from its pre-queue")
	assert.Equal(t, "2026-05-27T16:00:00Z", r["to"], "to its end")
	assert.EqualValues(t, 4, r["minutes"])
	assert.EqualValues(t, 10, r["admitted"])
	assert.EqualValues(t, 5, r["peakAdmitted"])
	assert.EqualValues(t, 5, r["newUsersPerMinute"])
	assert.EqualValues(t, 10, r["wait"].(map[string]any)["count"])
	m = f.getJSON("/reports?from=2026-05-27T16:01:00Z&to=2026-05-27T16:05:00Z")
	assert.Equal(t, []any{}, m["reports"])
}

func TestAdminMinutesBadInput(t *testing.T) {
	f := newAdminFixture(t, newAdminClock(), memstore.New(), nil)
	f.sync()
	for _, q := range []string{
		"from=yesterday",
		"to=2026-05-27",
		"from=2026-05-27T16:00:00Z&to=2026-05-27T15:00:00Z",
		"from=2026-04-01T00:00:00Z&to=2026-05-27T00:00:00Z",
		"step=59", "step=90", "step=-60", "step=1e3", "step=172800",
		"format=xml",
	} {
		for _, path := range []string{"/minutes", "/reports"} {
			if path == "/reports" && strings.HasPrefix(q, "step") {
				continue
			}
			w := f.do(http.MethodGet, path+"?"+q, "")
			assert.Equal(t, http.StatusBadRequest, w.Code, "%s?%s: %s", path, q, w.Body.String())
			assert.NotEmpty(t, errorMessage(t, w))
		}
	}
	w := f.do(http.MethodPost, "/minutes", "")
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)
	assert.Equal(t, "GET, HEAD", w.Header().Get("Allow"))

	// The same authentication as the rest of the API.
	r := httptest.NewRequest(http.MethodGet, "http://example.com/minutes", nil)
	rec := httptest.NewRecorder()
	f.admin.ServeHTTP(rec, r)
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
}

// plainStore hides the history of the store it wraps.
type plainStore struct{ store.Store }

func TestAdminMinutesWithoutHistory(t *testing.T) {
	f := newAdminFixture(t, newAdminClock(), plainStore{memstore.New()}, nil)
	f.sync()
	for _, path := range []string{"/minutes", "/reports"} {
		w := f.do(http.MethodGet, path, "")
		assert.Equal(t, http.StatusNotFound, w.Code, path)
		assert.Contains(t, errorMessage(t, w), "keeps no history")
	}
	_, err := admin.Minutes(t.Context(), f.room, time.Time{}, f.clk.Now())
	assert.ErrorIs(t, err, admin.ErrNoHistory)
}

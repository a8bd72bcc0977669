package admin_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

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
	assert.Equal(t, map[string]any{"queueingMethod": "fifo", "totalActiveUsers": 3.0, "newUsersPerMinute": 3.0}, m["inForce"])
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

// While an event overrides them, the status gives the limits and method
// in force beside the room's own settings, as the page and metrics do.
func TestAdminStatusInForce(t *testing.T) {
	clk := newAdminClock()
	f := newAdminFixture(t, clk, memstore.New(), func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 15, 15
	})
	start := clk.Now().Truncate(time.Minute).Add(time.Minute)
	require.NoError(t, f.room.Update(t.Context(), func(s *waitingroom.Settings) {
		s.Events = []waitingroom.Event{{Name: "drop", Start: start, End: start.Add(time.Hour), TotalActiveUsers: 50, NewUsersPerMinute: 20, QueueingMethod: waitingroom.Random}}
	}))
	clk.Set(start.Add(time.Second))
	f.sync()
	m := f.getJSON("/status")
	assert.Equal(t, map[string]any{"queueingMethod": "random", "totalActiveUsers": 50.0, "newUsersPerMinute": 20.0}, m["inForce"])
	assert.EqualValues(t, 15, m["settings"].(map[string]any)["totalActiveUsers"], "the room's own")
}

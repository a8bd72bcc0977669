package waitingroom

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every setting a visitor's experience depends on changes live: set
// through one instance, it governs the other at its next sync.
func TestLiveSettingsAcrossInstances(t *testing.T) {
	newPair := func(t *testing.T, mutate func(*Config)) *livePair {
		clk, st := newClock(), newMemStore()
		p := &livePair{clk: clk, a: newTestRoomOn(t, clk, st, mutate), b: newTestRoomOn(t, clk, st, mutate)}
		p.syncBoth()
		return p
	}
	// admissions counts the admissions both instances made.
	admissions := func(p *livePair) uint64 { return p.a.Stats().Counters.Admitted + p.b.Stats().Counters.Admitted }

	t.Run("SessionDuration shortened", func(t *testing.T) {
		p := newPair(t, nil) // 5 minutes
		v := &visitor{}
		require.True(t, admitted(p.a.get(v, "")))
		require.NoError(t, p.a.Update(t.Context(), func(s *Settings) { s.SessionDuration = time.Minute }))
		p.clk.Add(90 * time.Second)
		p.syncBoth()
		before := admissions(p)
		p.b.get(v, "")
		assert.Equal(t, before+1, admissions(p), "90 s idle is past the new 1-minute session: a new visitor")
		assert.Equal(t, time.Minute, p.b.Stats().Settings.SessionDuration)
	})
	t.Run("SessionDuration lengthened", func(t *testing.T) {
		p := newPair(t, func(c *Config) { c.SessionDuration = time.Minute })
		v := &visitor{}
		require.True(t, admitted(p.a.get(v, "")))
		require.NoError(t, p.a.Update(t.Context(), func(s *Settings) { s.SessionDuration = 10 * time.Minute }))
		for range 180 { // idle for 3 minutes, syncing all along
			p.clk.Add(time.Second)
			p.syncBoth()
		}
		before := admissions(p)
		require.True(t, admitted(p.b.get(v, "")))
		assert.Equal(t, before, admissions(p), "3 minutes idle is within the new 10-minute session")
		assert.Equal(t, 1, p.b.Stats().Active, "and the visitor is still counted, once")
	})
	t.Run("DisableSessionRenewal", func(t *testing.T) {
		p := newPair(t, func(c *Config) { c.SessionDuration = 2 * time.Minute })
		v := &visitor{}
		require.True(t, admitted(p.a.get(v, "")))
		require.NoError(t, p.a.Update(t.Context(), func(s *Settings) { s.DisableSessionRenewal = true }))
		p.syncBoth()
		before := admissions(p)
		for range 3 { // active every 30 s: within the cap
			p.clk.Add(30 * time.Second)
			p.syncBoth()
			require.True(t, admitted(p.b.get(v, "")))
		}
		assert.Equal(t, before, admissions(p))
		p.clk.Add(31 * time.Second) // 2 minutes and a second after admission
		p.syncBoth()
		p.b.get(v, "")
		assert.Equal(t, before+1, admissions(p), "capped at 2 minutes from admission, however active")
	})
	t.Run("QueueingStatusCode", func(t *testing.T) {
		p := newPair(t, func(c *Config) { c.QueueAll = true })
		assert.Equal(t, http.StatusOK, p.b.get(&visitor{}, "").Code)
		require.NoError(t, p.a.Update(t.Context(), func(s *Settings) { s.QueueingStatusCode = http.StatusTooManyRequests }))
		p.syncBoth()
		for _, tr := range []*testRoom{p.a, p.b} {
			w := tr.get(&visitor{}, "")
			assert.Equal(t, http.StatusTooManyRequests, w.Code)
			assert.Equal(t, w.Header().Get("Refresh"), w.Header().Get("Retry-After"))
		}
		require.NoError(t, p.b.Update(t.Context(), func(s *Settings) { s.QueueingStatusCode = 0 }))
		p.syncBoth()
		assert.Equal(t, http.StatusOK, p.a.get(&visitor{}, "").Code, "0 is the default again")
	})
	t.Run("Template", func(t *testing.T) {
		p := newPair(t, func(c *Config) { c.QueueAll = true })
		assert.Contains(t, p.b.get(&visitor{}, "").Body.String(), "<!DOCTYPE html>")
		require.NoError(t, p.a.Update(t.Context(), func(s *Settings) { s.Template = "<p>live {{queueingMethod}}</p>" }))
		p.syncBoth()
		for _, tr := range []*testRoom{p.a, p.b} {
			assert.Equal(t, "<p>live fifo</p>", tr.get(&visitor{}, "").Body.String())
		}
		err := p.b.Update(t.Context(), func(s *Settings) { s.Template = "{{#open}}" })
		require.ErrorIs(t, err, ErrInvalidConfig, "a template that does not parse is refused")
		require.NoError(t, p.b.Update(t.Context(), func(s *Settings) { s.Template = "" }))
		p.syncBoth()
		assert.Contains(t, p.a.get(&visitor{}, "").Body.String(), "<!DOCTYPE html>", "back to the default page")
	})
	t.Run("invalid values are refused", func(t *testing.T) {
		p := newPair(t, nil)
		for name, bad := range map[string]func(*Settings){
			"session too short": func(s *Settings) { s.SessionDuration = time.Second },
			"session too long":  func(s *Settings) { s.SessionDuration = time.Hour },
			"status":            func(s *Settings) { s.QueueingStatusCode = http.StatusServiceUnavailable },
		} {
			assert.ErrorIs(t, p.a.Update(t.Context(), bad), ErrInvalidConfig, name)
		}
		assert.Equal(t, Settings{QueueingMethod: FIFO, TotalActiveUsers: 10, NewUsersPerMinute: 10}, p.a.Stats().Settings)
	})
}

// livePair is two instances of a room sharing a store and a clock.
type livePair struct {
	clk  *clock
	a, b *testRoom
}

// syncBoth syncs both instances twice: the second round shares the grant
// between them.
func (p *livePair) syncBoth() {
	for range 2 {
		p.a.sync()
		p.b.sync()
	}
}

// Stats.InForce shows the event's overrides of the settings it overrides.
func TestInForceShowsEventOverrides(t *testing.T) {
	clk := newClock()
	start := clk.Now().Truncate(time.Minute).Add(time.Minute)
	no := false
	tr := newTestRoomOn(t, clk, newMemStore(), func(c *Config) {
		c.DisableSessionRenewal = true
		c.Events = []Event{{Name: "e", Start: start, End: start.Add(time.Hour), SessionDuration: 10 * time.Minute,
			DisableSessionRenewal: &no, Template: "<p>event</p>"}}
	})
	s := tr.Stats().InForce
	assert.Equal(t, Settings{QueueingMethod: FIFO, TotalActiveUsers: 10, NewUsersPerMinute: 10, DisableSessionRenewal: true}, Settings{
		QueueingMethod: s.QueueingMethod, TotalActiveUsers: s.TotalActiveUsers, NewUsersPerMinute: s.NewUsersPerMinute,
		SessionDuration: s.SessionDuration, DisableSessionRenewal: s.DisableSessionRenewal, Template: s.Template})
	clk.Set(start)
	tr.sync()
	s = tr.Stats().InForce
	assert.Equal(t, 10*time.Minute, s.SessionDuration)
	assert.False(t, s.DisableSessionRenewal)
	assert.Equal(t, "<p>event</p>", s.Template)
}

// An event's phases are logged once each, however many syncs run
// through them.
func TestEventPhasesLoggedOnce(t *testing.T) {
	var logs logBuffer
	clk := newClock()
	start := clk.Now().Truncate(time.Minute).Add(2 * time.Minute)
	tr := newTestRoomOn(t, clk, newMemStore(), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.Events = []Event{{Name: "drop", PrequeueStart: start.Add(-time.Minute), Start: start, End: start.Add(time.Minute)}}
	})
	for range 4 * 60 {
		clk.Add(time.Second)
		tr.sync()
	}
	for _, line := range []string{"event pre-queue opened", "event started", "event ended"} {
		assert.Equal(t, 1, logs.count(line), "%s:\n%s", line, logs.String())
	}
}

// A live template is logged by its size, not written out.
func TestTemplateNotLogged(t *testing.T) {
	var logs strings.Builder
	tr := newTestRoom(t, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	tmpl := "<p>" + strings.Repeat("x", 5000) + "</p>"
	require.NoError(t, tr.Update(t.Context(), func(s *Settings) { s.Template = tmpl }))
	assert.Contains(t, logs.String(), "settings updated")
	assert.Contains(t, logs.String(), "(5007 bytes)")
	assert.NotContains(t, logs.String(), "xxxx")
	assert.Equal(t, tmpl, tr.Stats().Settings.Template, "the settings keep it")
}

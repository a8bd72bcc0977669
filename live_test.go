package waitingroom_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// Every setting a visitor's experience depends on changes live: set
// through one instance, it governs the other at its next sync.
func TestLiveSettingsAcrossInstances(t *testing.T) {
	newPair := func(t *testing.T, mutate func(*waitingroom.Config)) *livePair {
		clk, st := newClock(), memstore.New()
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
		require.NoError(t, p.a.Update(t.Context(), func(s *waitingroom.Settings) { s.SessionDuration = time.Minute }))
		for range 90 { // idle for 90 s, syncing all along
			p.clk.Add(time.Second)
			p.syncBoth()
		}
		before := admissions(p)
		p.b.get(v, "")
		assert.Equal(t, before+1, admissions(p), "90 s idle is past the new 1-minute session: a new visitor")
		assert.Equal(t, time.Minute, p.b.Stats().Settings.SessionDuration)
	})
	t.Run("SessionDuration lengthened", func(t *testing.T) {
		p := newPair(t, func(c *waitingroom.Config) { c.SessionDuration = time.Minute })
		v := &visitor{}
		require.True(t, admitted(p.a.get(v, "")))
		require.NoError(t, p.a.Update(t.Context(), func(s *waitingroom.Settings) { s.SessionDuration = 10 * time.Minute }))
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
		p := newPair(t, func(c *waitingroom.Config) { c.SessionDuration = 2 * time.Minute })
		v := &visitor{}
		require.True(t, admitted(p.a.get(v, "")))
		require.NoError(t, p.a.Update(t.Context(), func(s *waitingroom.Settings) { s.DisableSessionRenewal = true }))
		p.syncBoth()
		before := admissions(p)
		for range 3 { // active every 30 s: within the cap
			for range 30 {
				p.clk.Add(time.Second)
				p.syncBoth()
			}
			require.True(t, admitted(p.b.get(v, "")))
		}
		assert.Equal(t, before, admissions(p))
		for range 31 { // 2 minutes and a second after admission
			p.clk.Add(time.Second)
			p.syncBoth()
		}
		p.b.get(v, "")
		assert.Equal(t, before+1, admissions(p), "capped at 2 minutes from admission, however active")
	})
	t.Run("QueueingStatusCode", func(t *testing.T) {
		p := newPair(t, func(c *waitingroom.Config) { c.QueueAll = true })
		assert.Equal(t, http.StatusOK, p.b.get(&visitor{}, "").Code)
		require.NoError(t, p.a.Update(t.Context(), func(s *waitingroom.Settings) { s.QueueingStatusCode = http.StatusTooManyRequests }))
		p.syncBoth()
		for _, tr := range []*testRoom{p.a, p.b} {
			w := tr.get(&visitor{}, "")
			assert.Equal(t, http.StatusTooManyRequests, w.Code)
			assert.Equal(t, w.Header().Get("Refresh"), w.Header().Get("Retry-After"))
		}
		require.NoError(t, p.b.Update(t.Context(), func(s *waitingroom.Settings) { s.QueueingStatusCode = 0 }))
		p.syncBoth()
		assert.Equal(t, http.StatusOK, p.a.get(&visitor{}, "").Code, "0 is the default again")
	})
	t.Run("Template", func(t *testing.T) {
		p := newPair(t, func(c *waitingroom.Config) { c.QueueAll = true })
		assert.Contains(t, p.b.get(&visitor{}, "").Body.String(), "<!DOCTYPE html>")
		require.NoError(t, p.a.Update(t.Context(), func(s *waitingroom.Settings) { s.Template = "<p>live {{queueingMethod}}</p>" }))
		p.syncBoth()
		for _, tr := range []*testRoom{p.a, p.b} {
			assert.Equal(t, "<p>live fifo</p>", tr.get(&visitor{}, "").Body.String())
		}
		err := p.b.Update(t.Context(), func(s *waitingroom.Settings) { s.Template = "{{#open}}" })
		require.ErrorIs(t, err, waitingroom.ErrInvalidConfig, "a template that does not parse is refused")
		require.NoError(t, p.b.Update(t.Context(), func(s *waitingroom.Settings) { s.Template = "" }))
		p.syncBoth()
		assert.Contains(t, p.a.get(&visitor{}, "").Body.String(), "<!DOCTYPE html>", "back to the default page")
	})
	t.Run("invalid values are refused", func(t *testing.T) {
		p := newPair(t, nil)
		for name, bad := range map[string]func(*waitingroom.Settings){
			"session too short": func(s *waitingroom.Settings) { s.SessionDuration = time.Second },
			"session too long":  func(s *waitingroom.Settings) { s.SessionDuration = time.Hour },
			"status":            func(s *waitingroom.Settings) { s.QueueingStatusCode = http.StatusServiceUnavailable },
		} {
			assert.ErrorIs(t, p.a.Update(t.Context(), bad), waitingroom.ErrInvalidConfig, name)
		}
		assert.Equal(t, waitingroom.Settings{QueueingMethod: waitingroom.FIFO, TotalActiveUsers: 10, NewUsersPerMinute: 10}, p.a.Stats().Settings)
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

package waitingroom

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestStatsStatus: a room's status follows the settings in force, the
// pre-queue and the counts.
func TestStatsStatus(t *testing.T) {
	room := Settings{QueueingMethod: FIFO, TotalActiveUsers: 10, NewUsersPerMinute: 5}
	event := room
	event.TotalActiveUsers, event.NewUsersPerMinute = 100, 50
	with := func(s Settings, f func(*Settings)) Settings { f(&s); return s }
	for _, tc := range []struct {
		name     string
		inForce  Settings
		prequeue bool
		active   int
		waiting  int
		want     RoomStatus
	}{
		{"open", room, false, 0, 0, StatusNotQueueing},
		{"minute used up", room, false, 0, 0, StatusQueueing},
		{"full", room, false, 10, 0, StatusQueueing},
		{"someone waits", room, false, 0, 1, StatusQueueing},
		{"random, someone waits", with(room, func(s *Settings) { s.QueueingMethod = Random }), false, 0, 3, StatusQueueing},
		{"pre-queue", room, true, 0, 0, StatusEventPrequeueing},
		{"pre-queue, passthrough", with(room, func(s *Settings) { s.QueueingMethod = Passthrough }), true, 0, 0, StatusEventPrequeueing},
		{"pre-queue, reject", with(room, func(s *Settings) { s.QueueingMethod = Reject }), true, 0, 0, StatusQueueing},
		{"during, the event's limits", event, false, 10, 0, StatusNotQueueing},
		{"during, full", event, false, 100, 0, StatusQueueing},
		{"queue all", with(room, func(s *Settings) { s.QueueAll = true }), false, 0, 0, StatusQueueing},
		{"passthrough", with(room, func(s *Settings) { s.QueueingMethod = Passthrough }), false, 50, 0, StatusNotQueueing},
		{"suspended", with(room, func(s *Settings) { s.Suspended = true }), true, 50, 0, StatusSuspended},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Stats{Settings: room, InForce: tc.inForce, Prequeueing: tc.prequeue, Active: tc.active, Waiting: tc.waiting}
			if tc.name == "minute used up" {
				s.AdmittedThisMinute = 5
			}
			assert.Equal(t, tc.want, status(&s))
		})
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

// A room with room for a visitor arriving now tells them no wait: the
// estimate of one arriving is zero while the status is not queueing,
// and unknown before the first sync.
func TestStatsEstimateWithRoom(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) { c.Settings.TotalActiveUsers, c.Settings.NewUsersPerMinute = 15, 15 })
	for range 5 {
		assert.True(t, admitted(tr.get(&visitor{}, "")))
	}
	tr.clk.Add(20 * time.Second)
	tr.sync()
	s := tr.Stats()
	assert.Equal(t, StatusNotQueueing, s.Status)
	assert.Equal(t, Estimate{Known: true}, s.Estimate)
	assert.True(t, admitted(tr.get(&visitor{}, "")), "and is let in")
}

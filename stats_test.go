package waitingroom

import (
	"testing"

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

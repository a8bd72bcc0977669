package waitingroom

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/store"
)

// Without renewal a session ends its length after its admission, rounded
// up to the second; with renewal, never by itself.
func TestSessionEnd(t *testing.T) {
	p := &policy{session: 300_000}
	assert.Equal(t, int64(1300), sessionEnd(p, 1_000_000))
	assert.Equal(t, int64(1301), sessionEnd(p, 1_000_001))
	assert.Equal(t, int64(1301), sessionEnd(p, 1_000_999))
	p.renew = true
	assert.Zero(t, sessionEnd(p, 1_000_000))
}

// A record is alive while seen within the session (to the second), not
// revoked, not past its end, and, without renewal, within its length of
// the admission.
func TestRecordAlive(t *testing.T) {
	const at = int64(1_000_000) // s
	renew := &policy{session: 60_000, renew: true}
	capped := &policy{session: 60_000}
	for _, tc := range []struct {
		name string
		x    store.Session
		p    *policy
		now  int64
		want bool
	}{
		{"seen now", store.Session{Admitted: at, Seen: at}, renew, at * 1000, true},
		{"the session's last ms", store.Session{Admitted: at, Seen: at}, renew, (at+1)*1000 + 60_000 - 1, true},
		{"past it", store.Session{Admitted: at, Seen: at}, renew, (at+1)*1000 + 60_000, false},
		{"renewed long after the admission", store.Session{Admitted: at, Seen: at + 600}, renew, (at + 600) * 1000, true},
		{"not renewed: its length after the admission", store.Session{Admitted: at, Seen: at + 59}, capped, at*1000 + 60_000, false},
		{"not renewed: before", store.Session{Admitted: at, Seen: at + 59}, capped, at*1000 + 59_999, true},
		{"revoked", store.Session{Admitted: at, Seen: at, Revoked: true}, renew, at * 1000, false},
		{"at its end", store.Session{Admitted: at, Seen: at, End: at + 10}, renew, (at + 10) * 1000, false},
		{"before its end", store.Session{Admitted: at, Seen: at, End: at + 10}, renew, (at+10)*1000 - 1, true},
		{"seen in the second of the floor", store.Session{Admitted: at, Seen: at}, &policy{session: 60_000, renew: true, floors: share.Floors{Seen: at*1000 + 999}}, at * 1000, true},
		{"seen before the floor", store.Session{Admitted: at, Seen: at}, &policy{session: 60_000, renew: true, floors: share.Floors{Seen: (at + 1) * 1000}}, at * 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, recordAlive(&tc.x, tc.p, tc.now))
		})
	}
}

// Sessions made longer, by an Update or an event that opens, do not bring
// back those that ended under the shorter length, whose slots others took:
// Total Active Users holds. Sessions alive when they are made longer get
// the longer length.
func TestLongerSessionsLeaveEndedOnesEnded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lengthen func(t *testing.T, tr *testRoom)
	}{
		{"an update", func(t *testing.T, tr *testRoom) {
			require.NoError(t, tr.Update(context.Background(), func(s *Settings) { s.SessionDuration = 5 * time.Minute }))
		}},
		{"an event's opening", func(t *testing.T, tr *testRoom) {
			start := tr.clk.Now().Truncate(time.Minute).Add(time.Minute)
			require.NoError(t, tr.Update(context.Background(), func(s *Settings) {
				s.Events = []Event{{Name: "long", Start: start, End: start.Add(time.Hour), SessionDuration: 5 * time.Minute}}
			}))
			tr.clk.Set(start.Add(time.Second))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) { c.Settings.SessionDuration = time.Minute })
			early := make([]visitor, 10)
			for i := range early {
				require.True(t, admitted(tr.get(&early[i], "")))
			}
			tr.sync()
			tr.clk.Add(90 * time.Second) // their sessions ended, idle
			tr.sync()
			tr.clk.Add(time.Minute) // a new minute's admissions
			tr.sync()
			late := make([]visitor, 10)
			for i := range late {
				require.True(t, admitted(tr.get(&late[i], "")), "a slot freed by the first ten")
			}
			tr.sync()
			tc.lengthen(t, tr)
			tr.sync()
			for i := range early {
				assert.False(t, admitted(tr.get(&early[i], "")), "ended under the shorter length: %d", i)
			}
			tr.sync()
			assert.LessOrEqual(t, tr.Stats().Active, 10)
			tr.clk.Add(3 * time.Minute) // idle within the longer length
			for i := range late {
				assert.True(t, admitted(tr.get(&late[i], "")), "alive when made longer: %d", i)
			}
		})
	}
}

// Renewal turned on does not bring back sessions it capped, whose slots
// others took, though their visitors came by within the session length.
func TestRenewalLeavesCappedSessionsEnded(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) { c.Settings.SessionDuration, c.Settings.DisableSessionRenewal = time.Minute, true })
	tr.clk.Set(tr.clk.Now().Truncate(time.Minute).Add(time.Minute))
	early := make([]visitor, 10)
	for i := range early {
		require.True(t, admitted(tr.get(&early[i], "")))
	}
	for range 4 { // browsing until just before their cap
		tr.clk.Add(14 * time.Second)
		for i := range early {
			require.True(t, admitted(tr.get(&early[i], "")))
		}
		tr.sync()
	}
	tr.clk.Add(10 * time.Second) // capped, and a new minute's admissions
	tr.sync()
	late := make([]visitor, 10)
	for i := range late {
		require.True(t, admitted(tr.get(&late[i], "")), "a slot freed by the first ten")
	}
	tr.sync()
	require.NoError(t, tr.Update(context.Background(), func(s *Settings) { s.DisableSessionRenewal = false }))
	for i := range early {
		assert.False(t, admitted(tr.get(&early[i], "")), "capped before renewal: %d", i)
	}
	for i := range late {
		assert.True(t, admitted(tr.get(&late[i], "")), "renewed from now: %d", i)
	}
	tr.sync()
	assert.LessOrEqual(t, tr.Stats().Active, 10)
}

// The floors an event's opening or end set outlive what the event
// becomes: removed once over, or its room's length changed while it runs,
// the sessions it ended stay ended.
func TestFloorsOutliveTheirEvents(t *testing.T) {
	for _, tc := range []struct {
		name          string
		room, event   time.Duration // session lengths
		early, change time.Duration // after the event's start: the first ten let in, the change
		change_       func(s *Settings)
	}{
		{"an event of short sessions removed after its end", 5 * time.Minute, time.Minute, time.Second, 3*time.Minute + 10*time.Second,
			func(s *Settings) { s.Events = nil }},
		{"the room's length raised during an event of long sessions", time.Minute, 5 * time.Minute, -2 * time.Minute, 70 * time.Second,
			func(s *Settings) { s.SessionDuration = 5 * time.Minute }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) { c.Settings.SessionDuration = tc.room })
			start := tr.clk.Now().Truncate(time.Minute).Add(5 * time.Minute)
			require.NoError(t, tr.Update(context.Background(), func(s *Settings) {
				s.Events = []Event{{Name: "e", Start: start, End: start.Add(3 * time.Minute), SessionDuration: tc.event}}
			}))
			tr.clk.Set(start.Add(tc.early))
			tr.sync()
			early := make([]visitor, 10)
			for i := range early {
				require.True(t, admitted(tr.get(&early[i], "")))
			}
			tr.sync()
			tr.clk.Set(start.Add(tc.change - 10*time.Second)) // the first ten idle since: over
			tr.sync()
			late := make([]visitor, 10)
			for i := range late {
				require.True(t, admitted(tr.get(&late[i], "")), "a slot freed by the first ten: %d", i)
			}
			tr.sync()
			tr.clk.Set(start.Add(tc.change))
			require.NoError(t, tr.Update(context.Background(), tc.change_))
			tr.sync()
			for i := range early {
				assert.False(t, admitted(tr.get(&early[i], "")), "ended: %d", i)
			}
			for i := range late {
				assert.True(t, admitted(tr.get(&late[i], "")), "alive: %d", i)
			}
			tr.sync()
			assert.LessOrEqual(t, tr.Stats().Active, 10)
		})
	}
}

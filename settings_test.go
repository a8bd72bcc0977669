package waitingroom

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/internal/share"
)

func TestSettingsValidate(t *testing.T) {
	ok := func() Settings { return Settings{TotalActiveUsers: 10, NewUsersPerMinute: 10} }
	for _, tc := range []struct {
		name   string
		mutate func(*Settings)
		want   string // "" for valid
	}{
		{"the least", func(*Settings) {}, ""},
		{"every method", func(s *Settings) { s.QueueingMethod = Reject }, ""},
		{"no method", func(s *Settings) { s.QueueingMethod = "" }, "QueueingMethod"},
		{"limits at the most", func(s *Settings) { s.TotalActiveUsers, s.NewUsersPerMinute = maxLimit, maxLimit }, ""},
		{"total above the most", func(s *Settings) { s.TotalActiveUsers = maxLimit + 1 }, "TotalActiveUsers must be at most"},
		{"negative total", func(s *Settings) { s.TotalActiveUsers = -1 }, "TotalActiveUsers must be > 0"},
		{"per minute above total", func(s *Settings) { s.NewUsersPerMinute = 11 }, "must not exceed"},
		{"session at its bounds", func(s *Settings) { s.SessionDuration = minSessionDuration }, ""},
		{"session at its other bound", func(s *Settings) { s.SessionDuration = maxSessionDuration }, ""},
		{"session too short", func(s *Settings) { s.SessionDuration = minSessionDuration - time.Second }, "SessionDuration"},
		{"status 202", func(s *Settings) { s.QueueingStatusCode = http.StatusAccepted }, ""},
		{"status 429", func(s *Settings) { s.QueueingStatusCode = http.StatusTooManyRequests }, ""},
		{"status 503", func(s *Settings) { s.QueueingStatusCode = http.StatusServiceUnavailable }, "QueueingStatusCode"},
		{"a template", func(s *Settings) { s.Template = "<p>{{waitTime}}</p>" }, ""},
		{"a broken template", func(s *Settings) { s.Template = "{{#open}}" }, "Template"},
		{"an event's limit above the most", func(s *Settings) {
			s.Events = []Event{{Name: "e", Start: time.Unix(1e9, 0), End: time.Unix(1e9+3600, 0), TotalActiveUsers: maxLimit + 1}}
		}, `event "e": TotalActiveUsers`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok()
			s.QueueingMethod = FIFO
			tc.mutate(&s)
			err := s.Validate()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidConfig)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The hash tells settings apart, is the same for the same settings, and
// is never 0 (never set).
func TestSettingsHash(t *testing.T) {
	a := Settings{QueueingMethod: FIFO, TotalActiveUsers: 10, NewUsersPerMinute: 5}
	b := a
	assert.Equal(t, a.hash(), b.hash())
	assert.NotZero(t, a.hash())
	assert.NotZero(t, (&Settings{}).hash())
	b.NewUsersPerMinute = 6
	assert.NotEqual(t, a.hash(), b.hash())
	c := a
	c.Template = "<p></p>"
	assert.NotEqual(t, a.hash(), c.hash())
}

// The zero session length and status code mean their defaults.
func TestSettingsDefaults(t *testing.T) {
	s := Settings{}
	assert.Equal(t, defaultSessionDuration.Milliseconds(), s.sessionDuration())
	assert.Equal(t, http.StatusOK, s.queueingStatusCode())
	s = Settings{SessionDuration: 2 * time.Minute, QueueingStatusCode: http.StatusTooManyRequests}
	assert.Equal(t, int64(120_000), s.sessionDuration())
	assert.Equal(t, http.StatusTooManyRequests, s.queueingStatusCode())
}

// Cloned events and challenges share nothing their owner can change.
func TestCloneEvents(t *testing.T) {
	yes := true
	events := []Event{{Name: "e", DisableSessionRenewal: &yes, Challenge: &challenge.Policy{}}}
	c := cloneEvents(events)
	require.Len(t, c, 1)
	assert.Equal(t, events[0].Name, c[0].Name)
	*c[0].DisableSessionRenewal = false
	c[0].Name = "x"
	assert.True(t, *events[0].DisableSessionRenewal)
	assert.Equal(t, "e", events[0].Name)
	assert.NotSame(t, events[0].Challenge, c[0].Challenge)
	assert.Nil(t, cloneEvents(nil))
	assert.Nil(t, cloneChallenge(nil))
}

// The floors of sessions: the latest moment sessions were made longer,
// by an Update (Settings.floors) or an event opening or ending, less the
// length before it, for those last seen before (a longer length) or
// admitted before (renewal turned on); none for a change yet to come, a
// shorter length, renewal turned off or a suspended event.
func TestSessionFloors(t *testing.T) {
	t0 := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	ms := func(t time.Time) int64 { return t.UnixMilli() }
	event := func(start time.Duration, session time.Duration) Event {
		return Event{Name: "e", Start: t0.Add(start), End: t0.Add(start + time.Hour), SessionDuration: session}
	}
	yes, no := true, false
	renewal := func(e Event, off *bool) Event { e.DisableSessionRenewal = off; return e }
	for _, tc := range []struct {
		name string
		s    Settings
		now  time.Time
		want share.Floors
	}{
		{"nothing lengthened", Settings{SessionDuration: time.Minute}, t0, share.Floors{}},
		{"an update", Settings{SessionDuration: time.Minute, floors: share.Floors{Seen: 42, Admitted: 7}}, t0, share.Floors{Seen: 42, Admitted: 7}},
		{"an event opened, longer", Settings{SessionDuration: time.Minute, Events: []Event{event(0, 5*time.Minute)}}, t0, share.Floors{Seen: ms(t0) - 60_000}},
		{"before it opens", Settings{SessionDuration: time.Minute, Events: []Event{event(0, 5*time.Minute)}}, t0.Add(-time.Millisecond), share.Floors{}},
		{"an event opened, shorter", Settings{SessionDuration: 5 * time.Minute, Events: []Event{event(0, time.Minute)}}, t0, share.Floors{}},
		{"its end, longer after", Settings{SessionDuration: 5 * time.Minute, Events: []Event{event(0, time.Minute)}}, t0.Add(time.Hour), share.Floors{Seen: ms(t0.Add(time.Hour)) - 60_000}},
		{"the latest of an update and an event", Settings{SessionDuration: time.Minute, floors: share.Floors{Seen: ms(t0)}, Events: []Event{event(-time.Hour, 5*time.Minute)}}, t0.Add(time.Minute), share.Floors{Seen: ms(t0)}},
		{"a suspended event", Settings{SessionDuration: time.Minute, Events: []Event{func() Event { e := event(0, 5*time.Minute); e.Suspended = true; return e }()}}, t0, share.Floors{}},
		{"an event that renews", Settings{SessionDuration: time.Minute, DisableSessionRenewal: true, Events: []Event{renewal(event(0, 0), &no)}}, t0, share.Floors{Admitted: ms(t0) - 60_000}},
		{"an event that caps", Settings{SessionDuration: time.Minute, Events: []Event{renewal(event(0, 0), &yes)}}, t0, share.Floors{}},
		{"the end of an event that capped", Settings{SessionDuration: time.Minute, Events: []Event{renewal(event(0, 0), &yes)}}, t0.Add(time.Hour), share.Floors{Admitted: ms(t0.Add(time.Hour)) - 60_000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.s.sessionFloors(ms(tc.now)))
		})
	}

	// An Update that lengthens sessions or renews them sets a floor; one
	// that does neither keeps them.
	s := Settings{SessionDuration: 5 * time.Minute, floors: share.Floors{Seen: 7}}
	s.follow(time.Minute.Milliseconds(), true, s.flow(), ms(t0))
	assert.Equal(t, share.Floors{Seen: ms(t0) - 60_000}, s.floors)
	s.follow(10*time.Minute.Milliseconds(), true, s.flow(), ms(t0.Add(time.Hour)))
	assert.Equal(t, share.Floors{Seen: ms(t0) - 60_000}, s.floors)
	s.follow(5*time.Minute.Milliseconds(), false, s.flow(), ms(t0.Add(2*time.Hour)))
	assert.Equal(t, share.Floors{Seen: ms(t0) - 60_000, Admitted: ms(t0.Add(2*time.Hour)) - 300_000}, s.floors)
}

package waitingroom

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUpdate(t *testing.T) {
	tr := newTestRoom(t, nil)
	require.NoError(t, tr.Update(context.Background(), func(s *Settings) {
		s.TotalActiveUsers, s.NewUsersPerMinute = 50, 20
		s.QueueingMethod = Random
	}))
	assert.Equal(t, Settings{QueueingMethod: Random, TotalActiveUsers: 50, NewUsersPerMinute: 20}, tr.Stats().Settings)
	tr.sync()
	assert.Equal(t, Random, tr.Stats().Settings.QueueingMethod, "the change survives the next sync")

	for name, bad := range map[string]func(*Settings){
		"limits": func(s *Settings) { s.NewUsersPerMinute = 100 },
		"zero":   func(s *Settings) { s.TotalActiveUsers = 0 },
		"method": func(s *Settings) { s.QueueingMethod = "lottery" },
	} {
		err := tr.Update(context.Background(), bad)
		assert.ErrorIs(t, err, ErrInvalidConfig, name)
	}
	assert.Equal(t, 20, tr.Stats().Settings.NewUsersPerMinute, "a rejected change changes nothing")
	tr.sync()
	assert.Equal(t, 20, tr.Stats().Settings.NewUsersPerMinute)
}

func TestBackgroundSync(t *testing.T) {
	cfg := baseConfig(newClock())
	cfg.Now = time.Now
	cfg.SyncInterval = 5 * time.Millisecond
	rm, err := New(cfg, newMemStore())
	require.NoError(t, err)
	defer rm.Close()
	assert.Eventually(t, func() bool { return !rm.Stats().Synced.IsZero() }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, rm.Close())
}

// A log line gives templates by their size, and leaves the settings it
// was given alone.
func TestLoggable(t *testing.T) {
	s := Settings{TotalActiveUsers: 5, Template: "<p>hello</p>", Events: []Event{{Name: "e", Template: "<b>x</b>"}, {Name: "f"}}}
	l := loggable(s)
	assert.Equal(t, "(12 bytes)", l.Template)
	assert.Equal(t, "(8 bytes)", l.Events[0].Template)
	assert.Empty(t, l.Events[1].Template, "none stays none")
	assert.Equal(t, 5, l.TotalActiveUsers)
	assert.Equal(t, "<p>hello</p>", s.Template)
	assert.Equal(t, "<b>x</b>", s.Events[0].Template, "the caller's events untouched")
}

// writeSettings writes the settings as the next version of the state's.
func TestWriteSettings(t *testing.T) {
	st := &store.State{SettingsVersion: 3}
	s := Settings{QueueingMethod: Random, TotalActiveUsers: 9, NewUsersPerMinute: 4}
	writeSettings(st, s)
	assert.Equal(t, uint64(4), st.SettingsVersion)
	var back Settings
	require.NoError(t, json.Unmarshal(st.Settings, &back))
	assert.Equal(t, s, back)
}

func TestPolicyEffect(t *testing.T) {
	assert.Contains(t, policyEffect(FailOpen), "fail-open")
	assert.Contains(t, policyEffect(FailClosed), "fail-closed")
}

// Events are the same by name and start, not by pointer or other fields.
func TestSameEvent(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	a := &Event{Name: "launch", Start: start, TotalActiveUsers: 5}
	for _, tc := range []struct {
		name string
		a, b *Event
		want bool
	}{
		{"both none", nil, nil, true},
		{"one none", a, nil, false},
		{"the other none", nil, a, false},
		{"a copy changed elsewhere", a, &Event{Name: "launch", Start: start.In(time.FixedZone("x", 3600)), TotalActiveUsers: 9}, true},
		{"another name", a, &Event{Name: "other", Start: start}, false},
		{"another start", a, &Event{Name: "launch", Start: start.Add(time.Second)}, false},
	} {
		assert.Equal(t, tc.want, sameEvent(tc.a, tc.b), tc.name)
	}
}

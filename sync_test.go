package waitingroom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-waitingroom/waitingroom/challenge"
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

// A log line gives the settings by the names of their JSON (an object in
// JSON logs; no Go structs or pointers), templates by their size, and
// leaves the settings it was given alone.
func TestLoggable(t *testing.T) {
	s := Settings{TotalActiveUsers: 5, Template: "<p>hello</p>", Challenge: &challenge.Policy{Who: challenge.Everyone},
		Events: []Event{{Name: "e", Template: "<b>x</b>"}, {Name: "f"}}}
	var got Settings
	b, err := json.Marshal(loggable(s))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, "(12 bytes)", got.Template)
	assert.Equal(t, "(8 bytes)", got.Events[0].Template)
	assert.Empty(t, got.Events[1].Template, "none stays none")
	assert.Equal(t, 5, got.TotalActiveUsers)
	assert.Equal(t, challenge.Everyone, got.Challenge.Who)
	assert.Equal(t, "<p>hello</p>", s.Template)
	assert.Equal(t, "<b>x</b>", s.Events[0].Template, "the caller's events untouched")

	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("m", "settings", loggable(s))
	slog.New(slog.NewJSONHandler(&js, nil)).Info("m", "settings", loggable(s))
	assert.Contains(t, text.String(), "challenge:map[who:everyone]")
	assert.Contains(t, text.String(), "totalActiveUsers:5")
	assert.NotContains(t, text.String(), "0xc")
	var line struct{ Settings Settings }
	require.NoError(t, json.Unmarshal(js.Bytes(), &line), js.String())
	assert.Equal(t, got, line.Settings, "an object")
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

// The queue's start and end are logged with the room's active sessions
// and limit: a queue that empties while the room is full (here, its last
// visitor let in under a limit raised to take them) does not read as
// queueing stopped.
func TestQueueLoggedWithTheLimit(t *testing.T) {
	var logs logBuffer
	tr := newTestRoom(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.Settings.TotalActiveUsers, c.Settings.NewUsersPerMinute = 2, 2
	})
	vs := make([]visitor, 3)
	for i := range vs {
		tr.get(&vs[i], "")
		tr.sync()
	}
	assert.Contains(t, logs.String(), `waiting=1 active=2 limit=2`)
	require.NoError(t, tr.Update(t.Context(), func(s *Settings) { s.TotalActiveUsers, s.NewUsersPerMinute = 3, 3 }))
	tr.sync()
	tr.clk.Add(time.Minute)
	require.True(t, admitted(tr.get(&vs[2], "")), "let in under the higher limit")
	tr.sync()
	assert.Contains(t, logs.String(), `msg="waitingroom: nobody waiting" room=launch active=3 limit=3`)
	assert.NotContains(t, logs.String(), "queueing stopped")
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

// An Update made while a sync is in flight (the sync read the state
// before the Update wrote it) holds from the Update on: the sync's view
// does not bring the settings it read back, and the grant it carved
// under the higher limits lets nobody in beyond the lower ones.
func TestUpdateDuringASync(t *testing.T) {
	ps := &pausedStore{Store: newMemStore(), written: make(chan struct{}), release: make(chan struct{})}
	tr := newTestRoomOn(t, newClock(), ps, func(c *Config) { c.Settings.TotalActiveUsers, c.Settings.NewUsersPerMinute = 500, 500 })
	var warm visitor
	require.True(t, admitted(tr.get(&warm, "")), "a grant carved under the higher limits")
	ps.armed.Store(true)
	synced := make(chan error)
	go func() { synced <- tr.Sync(context.Background()) }()
	<-ps.written
	require.NoError(t, tr.Update(context.Background(), func(s *Settings) { s.TotalActiveUsers, s.NewUsersPerMinute = 2, 2 }))
	close(ps.release)
	require.NoError(t, <-synced)
	assert.Equal(t, 2, tr.Stats().Settings.TotalActiveUsers, "the update, not the settings the sync read")
	in := 1
	for range 60 {
		if admitted(tr.get(&visitor{}, "")) {
			in++
		}
	}
	tr.sync()
	assert.LessOrEqual(t, in, 2, "let in, the first visitor included")
	assert.Equal(t, 2, tr.Stats().Settings.TotalActiveUsers)
}

// pausedStore holds the first Update after armed is set once it is
// written, until release is closed: a sync in flight between its write
// and its install.
type pausedStore struct {
	store.Store
	armed            atomic.Bool
	written, release chan struct{}
}

func (s *pausedStore) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	err := s.Store.Update(ctx, room, fn)
	if s.armed.CompareAndSwap(true, false) {
		close(s.written)
		<-s.release
	}
	return err
}

// A deploy of another Config, instance by instance: the first instance
// started with it makes its settings the live ones; those of the earlier
// deploy follow them rather than writing theirs back at every sync, and an
// Update made meanwhile stays. A later instance with the same Config
// changes nothing. The deploy warns that live changes were replaced.
func TestDeployOfAnotherConfig(t *testing.T) {
	clk, st := newClock(), newMemStore()
	limits := func(total, perMinute int) func(*Config) {
		return func(c *Config) { c.Settings.TotalActiveUsers, c.Settings.NewUsersPerMinute = total, perMinute }
	}
	var logs bytes.Buffer
	logged := func(mutate func(*Config)) func(*Config) {
		return func(c *Config) { mutate(c); c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) }
	}
	old := newTestRoomOn(t, clk, st, limits(50, 30))
	deployed := newTestRoomOn(t, clk, st, logged(limits(60, 30)))
	const replaced = "the room's live settings came from: they are replaced by its own"
	assert.Contains(t, logs.String(), replaced, "the deploy says so")
	old.sync()
	assert.Equal(t, 60, old.Stats().Settings.TotalActiveUsers, "the deploy's")
	require.NoError(t, old.Update(context.Background(), func(s *Settings) { s.TotalActiveUsers, s.NewUsersPerMinute = 12, 4 }))
	logs.Reset()
	later := newTestRoomOn(t, clk, st, logged(limits(60, 30)))
	for range 3 {
		for _, tr := range []*testRoom{old, deployed, later} {
			tr.sync()
		}
	}
	for i, tr := range []*testRoom{old, deployed, later} {
		s := tr.Stats().Settings
		assert.Equal(t, [2]int{12, 4}, [2]int{s.TotalActiveUsers, s.NewUsersPerMinute}, "instance %d", i)
	}
	assert.NotContains(t, logs.String(), replaced, "the same Config replaces nothing")
}

// A deploy whose Config makes sessions longer leaves those that ended
// under the shorter length ended, as an Update does.
func TestDeployLengtheningSessions(t *testing.T) {
	clk, st := newClock(), newMemStore()
	newTestRoomOn(t, clk, st, func(c *Config) { c.Settings.SessionDuration = time.Minute })
	deployed := newTestRoomOn(t, clk, st, func(c *Config) { c.Settings.SessionDuration = 10 * time.Minute })
	s := deployed.syncer.Snapshot().Settings
	assert.Equal(t, 10*time.Minute, s.SessionDuration)
	assert.Equal(t, clk.Now().UnixMilli()-time.Minute.Milliseconds(), s.floors.Seen)
	assert.Zero(t, deployed.Stats().Settings.floors, "not in what callers see")
}

// An Update the store acknowledged and then lost (a failover of a store
// that replicates later) does not leave the instance on settings the
// others never see, admitting nobody: the next sync installs the
// store's, with a grant.
func TestUpdateLostByTheStore(t *testing.T) {
	ls := &lossyStore{Store: newMemStore()}
	tr := newTestRoomOn(t, newClock(), ls, func(c *Config) { c.Settings.TotalActiveUsers, c.Settings.NewUsersPerMinute = 10, 10 })
	ls.lose.Store(true)
	require.NoError(t, tr.Update(context.Background(), func(s *Settings) { s.TotalActiveUsers, s.NewUsersPerMinute = 20, 20 }))
	tr.sync()
	assert.Equal(t, 10, tr.Stats().Settings.TotalActiveUsers, "the store's")
	in := 0
	for range 20 {
		if admitted(tr.get(&visitor{}, "")) {
			in++
		}
	}
	assert.Equal(t, 10, in)
}

// lossyStore acknowledges the first Update after lose is set without
// writing it.
type lossyStore struct {
	store.Store
	lose atomic.Bool
}

var errLost = errors.New("lost")

func (s *lossyStore) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	if !s.lose.CompareAndSwap(true, false) {
		return s.Store.Update(ctx, room, fn)
	}
	err := s.Store.Update(ctx, room, func(st *store.State) error {
		if err := fn(st); err != nil {
			return err
		}
		return errLost
	})
	if errors.Is(err, errLost) {
		return nil
	}
	return err
}

package waitingroom

import (
	"context"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEventValidation(t *testing.T) {
	t0 := newClock().Now().Add(time.Hour)
	ok := Event{Name: "drop", Start: t0, End: t0.Add(time.Hour)}
	yes := true
	for _, tc := range []struct {
		name   string
		events []Event
		want   string
	}{
		{"no name", []Event{{Start: t0, End: t0.Add(time.Hour)}}, "name is required"},
		{"no end", []Event{{Name: "a", Start: t0}}, "needs Start and End"},
		{"ends before start", []Event{{Name: "a", Start: t0, End: t0.Add(-time.Hour)}}, "ends before it starts"},
		{"not whole minute", []Event{{Name: "a", Start: t0.Add(time.Second), End: t0.Add(time.Hour)}}, "whole minutes"},
		{"prequeue after start", []Event{{Name: "a", Start: t0, End: t0.Add(time.Hour), PrequeueStart: t0.Add(time.Minute)}}, "before Start"},
		{"shuffle without prequeue", []Event{{Name: "a", Start: t0, End: t0.Add(time.Hour), ShuffleAtStart: true}}, "needs a pre-queue"},
		{"one limit", []Event{{Name: "a", Start: t0, End: t0.Add(time.Hour), TotalActiveUsers: 5}}, "together"},
		{"limits inverted", []Event{{Name: "a", Start: t0, End: t0.Add(time.Hour), TotalActiveUsers: 5, NewUsersPerMinute: 6}}, "NewUsersPerMinute ≤"},
		{"session", []Event{{Name: "a", Start: t0, End: t0.Add(time.Hour), SessionDuration: time.Hour}}, "SessionDuration"},
		{"method", []Event{{Name: "a", Start: t0, End: t0.Add(time.Hour), QueueingMethod: "lifo"}}, "QueueingMethod"},
		{"template", []Event{{Name: "a", Start: t0, End: t0.Add(time.Hour), Template: "{{#x}}"}}, "Template"},
		{"overlap", []Event{ok, {Name: "b", Start: t0.Add(30 * time.Minute), End: t0.Add(2 * time.Hour)}}, "overlap"},
		{"a suspended event overlaps all the same", []Event{ok, {Name: "b", Start: t0.Add(30 * time.Minute), End: t0.Add(2 * time.Hour), Suspended: true}}, "overlap"},
		{"description too long", []Event{{Name: "a", Start: t0, End: t0.Add(time.Hour), Description: strings.Repeat("é", maxEventDescription/2+1)}}, "Description"},
		{"description not UTF-8", []Event{{Name: "a", Start: t0, End: t0.Add(time.Hour), Description: "caf\xe9"}}, "UTF-8"},
		{"after the year 9999", []Event{{Name: "a", Start: t0, End: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}, "years 1 to 9999"},
		{"before the year 1", []Event{{Name: "a", Start: t0, End: t0.Add(time.Hour), PrequeueStart: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}}, "years 1 to 9999"},
		{"prequeue overlaps", []Event{ok, {Name: "b", Start: t0.Add(2 * time.Hour), End: t0.Add(3 * time.Hour), PrequeueStart: t0.Add(50 * time.Minute)}}, "overlap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(newClock())
			cfg.Events = tc.events
			_, err := New(cfg, newMemStore())
			require.ErrorIs(t, err, ErrInvalidConfig)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	t.Run("valid, unsorted", func(t *testing.T) {
		cfg := baseConfig(newClock())
		later := Event{Name: "later", Start: t0.Add(3 * time.Hour), End: t0.Add(4 * time.Hour), DisableSessionRenewal: &yes,
			PrequeueStart: t0.Add(2 * time.Hour), ShuffleAtStart: true, TotalActiveUsers: 5, NewUsersPerMinute: 5, Template: "<p>{{waitTime}}</p>"}
		cfg.Events = []Event{later, ok}
		rm, err := New(cfg, newMemStore())
		require.NoError(t, err)
		defer rm.Close()
		assert.Equal(t, "drop", rm.Stats().Settings.Events[0].Name, "events are kept sorted")
		assert.Equal(t, "later", cfg.Events[0].Name, "the caller's slice is untouched")
	})
	t.Run("update refuses overlap", func(t *testing.T) {
		tr := newTestRoom(t, func(c *Config) { c.Events = []Event{ok} })
		err := tr.Update(context.Background(), func(s *Settings) {
			s.Events = append(s.Events, Event{Name: "b", Start: t0, End: t0.Add(time.Minute)})
		})
		assert.ErrorIs(t, err, ErrInvalidConfig)
		assert.Len(t, tr.Stats().Settings.Events, 1)
	})
}

func TestEventPhases(t *testing.T) {
	clk := newClock()
	start := clk.Now().Add(10 * time.Minute)
	ev := Event{Name: "drop", PrequeueStart: start.Add(-5 * time.Minute), Start: start, End: start.Add(10 * time.Minute),
		TotalActiveUsers: 2, NewUsersPerMinute: 2, QueueingMethod: Random, Template: "<p>event {{queueingMethod}}</p>"}
	tr := newTestRoomOn(t, clk, newMemStore(), func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 100, 100
		c.Events = []Event{ev}
	})
	early := &visitor{}
	require.True(t, admitted(tr.get(early, "")), "before the pre-queue the room is open")

	for range 6 { // the early visitor stays active into the pre-queue
		clk.Add(time.Minute)
		tr.get(early, "")
	}
	tr.sync()
	w := tr.get(&visitor{}, "")
	assert.True(t, isWaiting(w), "during the pre-queue every new visitor waits")
	assert.Contains(t, w.Body.String(), "event random", "the event's template and method apply")
	assert.True(t, admitted(tr.get(early, "")), "admitted visitors keep their session")
	d, err := tr.checkRequest((&visitor{}).request(http.MethodGet, ""))
	require.NoError(t, err)
	assert.False(t, d.Estimate.Known)

	for range 4 { // started: the event's limits
		clk.Add(time.Minute)
		tr.get(early, "")
	}
	tr.sync()
	n := 0
	for range 10 {
		if admitted(tr.get(&visitor{}, "")) {
			n++
		}
	}
	assert.Equal(t, 1, n, "the event's limits: 2 active at most, one of them the early visitor")

	clk.Add(10 * time.Minute) // ended: the room's own settings again
	tr.sync()
	w = tr.get(&visitor{}, "")
	assert.True(t, admitted(w))
}

// A suspended event is not applied, on any instance sharing the room, and
// applies again once resumed; its description travels with it.
func TestSuspendedEvent(t *testing.T) {
	clk := newClock()
	st := newMemStore()
	start := clk.Now().Add(time.Minute).Truncate(time.Minute)
	ev := Event{Name: "sale", Description: "Spring sale: 500 pairs", Start: start, End: start.Add(time.Hour), Suspended: true,
		QueueingMethod: Reject}
	cfg := func(c *Config) { c.Events = []Event{ev} }
	a := newTestRoomOn(t, clk, st, cfg)
	b := newTestRoomOn(t, clk, st, cfg)
	clk.Set(start.Add(time.Minute))
	for range 2 { // the second round shares the grant between the two
		a.sync()
		b.sync()
	}
	for _, tr := range []*testRoom{a, b} {
		assert.True(t, admitted(tr.get(&visitor{}, "")), "a suspended event does not close the room")
		assert.Nil(t, tr.Stats().Event)
		assert.Equal(t, "Spring sale: 500 pairs", tr.Stats().Settings.Events[0].Description)
	}

	require.NoError(t, a.Update(t.Context(), func(s *Settings) { s.Events[0].Suspended = false }))
	b.sync()
	for _, tr := range []*testRoom{a, b} {
		assert.Equal(t, http.StatusOK, tr.get(&visitor{}, "").Code)
		assert.False(t, admitted(tr.get(&visitor{}, "")), "resumed, the event rejects everyone")
		require.NotNil(t, tr.Stats().Event)
		assert.Equal(t, "Spring sale: 500 pairs", tr.Stats().Event.Description)
	}
}

// TestShuffleAtStart runs many seeded pre-queues and checks that the
// admission order at the start does not depend on arrival order
// (chi-square over arrival quartile × admission quartile), that nobody is
// lost or let in twice, and that later arrivals come after the pre-queued
// visitors: only once every pre-queued visitor has a slot reserved, so
// none gets in more than a refresh interval after a later arrival.
func TestShuffleAtStart(t *testing.T) {
	if raceEnabled {
		t.Skip("rooms simulated on one goroutine: scripts/test.sh runs it without the race detector")
	}
	const (
		runs     = 40
		prequeue = 20 // visitors who join during the pre-queue, in arrival order
		after    = 6  // visitors who arrive after the start
	)
	var table [4][4]float64
	for run := range runs {
		order, at := shuffleRun(t, uint64(run), prequeue, after)
		require.Len(t, order, prequeue+after, "everyone got in exactly once")
		seen := map[int]bool{}
		firstLater, lastPre := time.Time{}, time.Time{}
		rank := 0
		for i, id := range order {
			require.False(t, seen[id], "visitor %d admitted twice", id)
			seen[id] = true
			if id >= prequeue {
				if firstLater.IsZero() {
					firstLater = at[i]
				}
				continue
			}
			lastPre = at[i]
			table[id*4/prequeue][rank*4/prequeue]++
			rank++
		}
		assert.LessOrEqual(t, lastPre.Sub(firstLater), 22*time.Second, "run %d: a pre-queued visitor got in long after a later arrival", run)
	}
	// Chi-square test of independence, 9 degrees of freedom.
	var rows, cols [4]float64
	total := 0.0
	for i := range 4 {
		for j := range 4 {
			rows[i] += table[i][j]
			cols[j] += table[i][j]
			total += table[i][j]
		}
	}
	chi := 0.0
	for i := range 4 {
		for j := range 4 {
			e := rows[i] * cols[j] / total
			chi += (table[i][j] - e) * (table[i][j] - e) / e
		}
	}
	const critical1pct = 21.666 // chi-square, 9 dof, p = 0.01
	assert.Less(t, chi, critical1pct, "admission order depends on arrival order: %v", table)
	t.Logf("chi-square %.2f (9 dof; 1%% critical %.2f)", chi, critical1pct)
	assert.False(t, math.IsNaN(chi))
}

// shuffleRun pre-queues visitors over five minutes, starts the event and
// returns the visitors' ids in the order they got in.
func shuffleRun(t *testing.T, seed uint64, prequeue, after int) (order []int, at []time.Time) {
	clk := newClock()
	start := clk.Now().Add(6 * time.Minute)
	rng := mrand.New(mrand.NewPCG(seed, 99))
	tr := newTestRoomOn(t, clk, newMemStore(), func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1000, 4
		// The run's identities and seeds too: each run the same, so that
		// the test's figure is one, not a draw at 1 % each time.
		c.Random, c.Identities = rng.Float64, rng.Uint64
		c.Events = []Event{{Name: "drop", PrequeueStart: clk.Now().Add(time.Minute), Start: start, End: start.Add(time.Hour), ShuffleAtStart: true}}
	})
	type sv struct {
		req  *http.Request
		next time.Time
		in   bool
	}
	var vs []*sv
	arrive := func(at time.Time) {
		vs = append(vs, &sv{req: &http.Request{Method: "GET", URL: &url.URL{Path: "/"}, Header: http.Header{}}, next: at})
	}
	for i := range prequeue {
		arrive(clk.Now().Add(time.Minute + time.Duration(i)*5*time.Minute/time.Duration(prequeue) + time.Duration(rng.IntN(1000))*time.Millisecond))
	}
	for i := range after {
		arrive(start.Add(time.Duration(i)*10*time.Second + time.Second))
	}
	for now := clk.Now(); now.Before(start.Add(20 * time.Minute)); now = now.Add(time.Second) {
		clk.Set(now)
		require.NoError(t, tr.Sync(context.Background()))
		// Requests due in the same second arrive in no particular order.
		for _, id := range rng.Perm(len(vs)) {
			v := vs[id]
			if v.in || now.Before(v.next) {
				continue
			}
			d, err := tr.checkRequest(v.req)
			require.NoError(t, err)
			if d.cookie != "" {
				v.req.Header.Set("Cookie", tr.cookieName+"="+d.cookie)
			}
			if d.Outcome == outcomeAdmitted {
				v.in = true
				order = append(order, id)
				at = append(at, now)
				continue
			}
			v.next = now.Add(d.RefreshAfter).Add(time.Second - 1).Truncate(time.Second)
		}
		if len(order) == len(vs) {
			break // everyone is in: the rest would change nothing
		}
	}
	return order, at
}

// Limits that go down hold from the moment they are in force: the grant
// the instance holds, carved under the higher ones, is not used past
// them before its next sync, nor kept by it.
func TestLoweredLimitsHoldAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lower func(t *testing.T, tr *testRoom, start time.Time) // makes the limits 2 and 2 from start, and the clock just after
	}{
		{"an event's start", func(t *testing.T, tr *testRoom, start time.Time) {
			require.NoError(t, tr.Update(context.Background(), func(s *Settings) {
				s.Events = []Event{{Name: "drop", Start: start, End: start.Add(time.Hour), TotalActiveUsers: 2, NewUsersPerMinute: 2}}
			}))
			tr.sync()
			tr.clk.Set(start.Add(100 * time.Millisecond))
		}},
		{"an update", func(t *testing.T, tr *testRoom, start time.Time) {
			tr.clk.Set(start.Add(100 * time.Millisecond))
			require.NoError(t, tr.Update(context.Background(), func(s *Settings) {
				s.TotalActiveUsers, s.NewUsersPerMinute = 2, 2
			}))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) { c.Settings.TotalActiveUsers, c.Settings.NewUsersPerMinute = 500, 500 })
			start := tr.clk.Now().Truncate(time.Minute).Add(time.Minute)
			var warm visitor
			require.True(t, admitted(tr.get(&warm, "")), "a grant carved under the higher limits")
			tc.lower(t, tr, start)
			in := 0
			for i := range 60 {
				if i%20 == 19 {
					tr.sync()
				}
				if admitted(tr.get(&visitor{}, "")) {
					in++
				}
			}
			tr.sync()
			assert.LessOrEqual(t, in+1, 2, "let in, the first visitor included")
			assert.LessOrEqual(t, tr.Stats().Active, 2, "active")
		})
	}
}

// Settings as Update takes them come back whole from the store: an
// event's times in a zone whose offset has seconds (as the Netherlands'
// had until 1937) are stored as the same instants, and the other
// settings changed with them stay.
func TestEventTimesSurviveTheStore(t *testing.T) {
	tr := newTestRoom(t, nil)
	odd := time.FixedZone("AMT", 19*60+32)
	start := tr.clk.Now().Truncate(time.Minute).Add(time.Hour).In(odd)
	require.NotEqual(t, 0, start.Second(), "a whole minute that is not one on the zone's clock")
	require.NoError(t, tr.Update(context.Background(), func(s *Settings) {
		s.QueueAll = true
		s.Events = []Event{{Name: "drop", Start: start, End: start.Add(time.Hour)}}
	}))
	tr.sync()
	got := tr.Stats().Settings
	assert.True(t, got.QueueAll, "the other settings stay")
	require.Len(t, got.Events, 1)
	assert.True(t, got.Events[0].Start.Equal(start), "the same instant: %v, %v", got.Events[0].Start, start)
}

// Limits lowered hold on every instance once each has synced: what the
// instances hold together fits in the free slots (each holding capped by
// what the others' leave), and a holding kept while the room admitted
// nobody (QueueAll) is not spent under the lower limits when it opens.
func TestLoweredLimitsHoldAcrossInstances(t *testing.T) {
	t.Run("three instances", func(t *testing.T) {
		clk, st := newClock(), newMemStore()
		var rooms []*testRoom
		for range 3 {
			rooms = append(rooms, newTestRoomOn(t, clk, st, func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1000, 1000 }))
		}
		for range 2 {
			for _, tr := range rooms {
				tr.sync()
			}
		}
		clk.Add(time.Second)
		in := 0
		crowd := func(tr *testRoom, n int) {
			for range n {
				if admitted(tr.get(&visitor{}, "")) {
					in++
				}
			}
		}
		for _, tr := range rooms {
			crowd(tr, 100)
		}
		require.Equal(t, 300, in)
		require.NoError(t, rooms[0].Update(context.Background(), func(s *Settings) { s.TotalActiveUsers, s.NewUsersPerMinute = 310, 310 }))
		clk.Add(time.Second)
		for _, i := range []int{1, 2, 0} {
			rooms[i].sync()
		}
		for _, tr := range rooms {
			crowd(tr, 50)
		}
		assert.LessOrEqual(t, in, 310, "let in this minute, every instance knowing the limits")
	})
	t.Run("opened after QueueAll", func(t *testing.T) {
		tr := newTestRoom(t, func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 100, 100 })
		ctx := context.Background()
		require.NoError(t, tr.Update(ctx, func(s *Settings) { s.QueueAll = true }))
		for range 200 {
			require.True(t, isWaiting(tr.get(&visitor{}, "")))
		}
		require.NoError(t, tr.Update(ctx, func(s *Settings) { s.TotalActiveUsers, s.NewUsersPerMinute = 5, 5 }))
		tr.sync()
		require.NoError(t, tr.Update(ctx, func(s *Settings) { s.QueueAll = false }))
		in := 0
		for range 50 {
			if admitted(tr.get(&visitor{}, "")) {
				in++
			}
		}
		tr.sync()
		for range 50 {
			if admitted(tr.get(&visitor{}, "")) {
				in++
			}
		}
		assert.LessOrEqual(t, in, 5)
	})
}

// The places in line of a shuffled pre-queue at the start are the
// expected ranks of the visitors' draws among those still waiting: within
// the line, and right on average. Each visitor knows only their own place,
// so a visitor is told how many of the others' places are expected below
// theirs; over many shuffles the numbers told add up to the ranks' (three
// pre-queued visitors were told 2, 3 and 3 of 3, each counting themself
// among those ahead; rounding down told the last of three they were 2).
func TestShuffledPlacesInLine(t *testing.T) {
	for _, n := range []int{2, 3, 10} {
		t.Run(fmt.Sprintf("%d pre-queued", n), func(t *testing.T) {
			var told, ranks, seen int
			for trial := range 600 / n {
				clk := newClock()
				start := clk.Now().Add(5 * time.Minute)
				tr := newTestRoomOn(t, clk, newMemStore(), func(c *Config) {
					c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
					c.Events = []Event{{Name: "drop", PrequeueStart: clk.Now(), Start: start, End: start.Add(time.Hour), ShuffleAtStart: true}}
					// Seeded identities and seeds: the figure is the same
					// at each run.
					c.Identities = mrand.New(mrand.NewPCG(uint64(n), uint64(trial))).Uint64
				})
				vs := make([]*visitor, n)
				for i := range vs {
					vs[i] = &visitor{}
					require.True(t, isWaiting(tr.get(vs[i], "")), "pre-queued")
				}
				clk.Set(start.Add(-10 * time.Second))
				for _, v := range vs {
					tr.get(v, "") // back before the start: counted
				}
				clk.Set(start.Add(time.Second))
				tr.sync()
				waiting := 0
				for _, v := range vs {
					w := tr.get(v, "application/json")
					if admitted(w) {
						continue
					}
					got := jsonBody(t, w)
					pos, length := int(got["positionInLine"].(float64)), int(got["queueLength"].(float64))
					require.GreaterOrEqual(t, pos, 1)
					require.LessOrEqual(t, pos, min(length, n), "a place within the line")
					told, waiting = told+pos, waiting+1
				}
				ranks, seen = ranks+waiting*(waiting+1)/2, seen+waiting
			}
			// One visitor's number is off by up to half the line; on
			// average by nought (rounding down: -0.5).
			bias := float64(told-ranks) / float64(seen)
			t.Logf("%d visitors told: mean error %+.3f", seen, bias)
			assert.InDelta(t, 0, bias, 0.2, "numbers told against the ranks, on average")
		})
	}
}

// The wait told at an event's start follows the event's limits, not the
// admissions before its pre-queue: a visitor let in beforehand made the
// recent rate one admission over five minutes, and the 60th of the
// pre-queue, at 10 a minute, was told 4 hours (TestOutflowNeverAboveLimit
// has the rate).
func TestWaitAtAnEventsStart(t *testing.T) {
	for _, shuffle := range []bool{false, true} {
		t.Run(fmt.Sprintf("shuffle %v", shuffle), func(t *testing.T) {
			clk := newClock()
			opens, start := clk.Now().Add(2*time.Minute), clk.Now().Add(5*time.Minute)
			tr := newTestRoomOn(t, clk, newMemStore(), func(c *Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 100, 100
				c.Events = []Event{{Name: "drop", PrequeueStart: opens, Start: start, End: start.Add(time.Hour),
					ShuffleAtStart: shuffle, TotalActiveUsers: 1000, NewUsersPerMinute: 10}}
			})
			clk.Set(opens.Add(-30 * time.Second))
			require.True(t, admitted(tr.get(&visitor{}, "")), "let in before the pre-queue")
			tr.sync()
			clk.Set(opens.Add(time.Second))
			vs := make([]*visitor, 60)
			for i := range vs {
				vs[i] = &visitor{}
				require.True(t, isWaiting(tr.get(vs[i], "")), "pre-queued")
			}
			clk.Set(start.Add(-10 * time.Second))
			tr.sync()
			for _, v := range vs {
				tr.get(v, "") // back before the start
			}
			clk.Set(start.Add(time.Second))
			tr.sync()
			waits := waitsTold(t, tr, vs)
			require.NotEmpty(t, waits)
			t.Log(waits)
			// Nobody is further than 60 admissions away: 6 minutes at 10.
			assert.LessOrEqual(t, slices.Max(waits), 7.0, "minutes told")
		})
	}
}

// A random event's shuffled pre-queue goes in ahead of those who arrive
// after its start, as a FIFO event's does, on one instance or two: the
// draw gives the others the slots the pre-queue leaves, none while it
// waits (of 50 let in, 13 to 29 went to later arrivals while pre-queued
// visitors waited; on two instances 3 to 6 arrivals got in at their first
// request), and those queued before it opened draw behind it. The pages
// say so: no chance while the pre-queue goes in (1 in 21 was told, none
// let in), and the pre-queue's wait by place, without those queued
// before (told 3.4 to 3.9 times their wait).
func TestRandomEventPrequeueGoesFirst(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d instances", n), func(t *testing.T) {
			clk := newClock()
			opens, start := clk.Now().Add(time.Minute), clk.Now().Add(3*time.Minute)
			st := newMemStore()
			var rooms []*testRoom
			for range n {
				rooms = append(rooms, newTestRoomOn(t, clk, st, func(c *Config) {
					c.RefreshInterval, c.RefreshJitter = 10*time.Second, -1
					c.Identities = mrand.New(mrand.NewPCG(3, uint64(len(rooms)))).Uint64
					c.Events = []Event{{Name: "drop", PrequeueStart: opens, Start: start, End: start.Add(time.Hour),
						ShuffleAtStart: true, QueueingMethod: Random, TotalActiveUsers: 1000, NewUsersPerMinute: 10}}
				}))
			}
			type guest struct {
				polite
				kind     string // "before" the pre-queue opened, "pre", "after" the start
				told, at int64  // the first wait told after the start (minutes), and when
			}
			var gs []*guest
			require.NoError(t, rooms[0].Update(t.Context(), func(s *Settings) { s.QueueAll = true }))
			for i := range 40 { // queued before the pre-queue opened
				g := &guest{kind: "before"}
				require.True(t, isWaiting(rooms[i%n].get(&g.visitor, "")))
				g.next = clk.Now().UnixMilli() + 10_000
				gs = append(gs, g)
			}
			clk.Set(opens)
			require.NoError(t, rooms[0].Update(t.Context(), func(s *Settings) { s.QueueAll = false }))
			for i := range 40 { // 20 in the pre-queue, 20 in the event's first minute
				g := &guest{kind: "pre", polite: polite{next: opens.Add(time.Duration(i) * 3 * time.Second).UnixMilli()}}
				if i >= 20 {
					g.kind, g.next = "after", start.Add(time.Duration(i-20)*3*time.Second).UnixMilli()
				}
				gs = append(gs, g)
			}
			serveUntil(t, rooms, start.Add(10*time.Minute), politeOf(gs), func(i int, got map[string]any) {
				g := gs[i]
				if clk.Now().Before(start) || !slices.ContainsFunc(gs, func(h *guest) bool { return h.kind == "pre" && h.inAt == 0 }) {
					return
				}
				assert.Zero(t, got["chancePerRefreshOneIn"], "%s, at %v", g.kind, clk.Now().Sub(start))
				if g.kind == "pre" && g.at == 0 && got["waitTimeKnown"] == true { // on two, unknown where another's slot may be free
					g.told, g.at = int64(got["waitTime"].(float64)), clk.Now().UnixMilli()
				}
			})
			var pre, others []int64 // when let in
			for _, g := range gs {
				require.NotZero(t, g.inAt, "everyone let in within ten minutes at 10 a minute")
				if g.kind != "pre" {
					others = append(others, g.inAt)
					continue
				}
				pre = append(pre, g.inAt)
				if g.at != 0 {
					// Told in whole minutes, rounded up.
					assert.LessOrEqual(t, g.told, (g.inAt-g.at)/60_000+2, "minutes told against waited")
				}
			}
			// Others draw for the slots the pre-queue leaves: none before
			// fewer of it wait than an interval's slots (1.7).
			slices.Sort(pre)
			assert.Less(t, pre[len(pre)-3], slices.Min(others), "the pre-queue in before anyone else, but for its last two")
		})
	}
}

// The wait told near an event's end counts the room's own pace after it:
// at 20 a minute for the event's last minute and 3 after, a visitor with
// 40 ahead was told 2 minutes (waited 16 in a trial).
func TestWaitAcrossAnEventsEnd(t *testing.T) {
	clk := newClock()
	start := clk.Now().Truncate(time.Minute).Add(-10 * time.Minute)
	end := clk.Now().Truncate(time.Minute).Add(time.Minute)
	tr := newTestRoomOn(t, clk, newMemStore(), func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1000, 3
		c.Events = []Event{{Name: "drop", Start: start, End: end, TotalActiveUsers: 1000, NewUsersPerMinute: 20}}
	})
	clk.Set(end.Add(-time.Minute))
	tr.sync()
	for range 20 { // the event's last minute's slots
		require.True(t, admitted(tr.get(&visitor{}, "")))
	}
	vs := make([]*visitor, 41)
	for i := range vs { // a second apart: each one ahead of the next
		vs[i] = &visitor{}
		require.True(t, isWaiting(tr.get(vs[i], "")))
		clk.Add(time.Second)
	}
	tr.sync()
	got := jsonBody(t, tr.get(vs[40], "application/json"))
	require.Equal(t, true, got["waitTimeKnown"], got)
	// 40 ahead, 20 of the minute's in already: none before the end, and
	// 40 at 3 a minute after it, 13.6 minutes from now.
	assert.InDelta(t, 14, got["waitTime"].(float64), 1, "minutes told")
}

// The wait after QueueAll or Suspended counts the admission rate from
// the reopening: the minutes the room was closed are no rate.
func TestWaitAfterTheRoomReopens(t *testing.T) {
	for _, change := range []string{"queue all", "suspended"} {
		t.Run(change, func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1000, 10 })
			closed := func(s *Settings, on bool) { s.QueueAll = on }
			if change == "suspended" {
				closed = func(s *Settings, on bool) { s.Suspended = on }
			}
			for range 10 {
				require.True(t, admitted(tr.get(&visitor{}, "")))
			}
			tr.sync()
			require.NoError(t, tr.Update(t.Context(), func(s *Settings) { closed(s, true) }))
			for range 4 {
				tr.clk.Add(time.Minute)
				tr.sync()
			}
			require.NoError(t, tr.Update(t.Context(), func(s *Settings) { closed(s, false) }))
			vs := make([]*visitor, 70)
			for i := range vs {
				vs[i] = &visitor{}
				tr.get(vs[i], "")
				tr.clk.Add(100 * time.Millisecond)
			}
			tr.sync()
			waits := waitsTold(t, tr, vs)
			require.Len(t, waits, 60)
			// The last of 60 at 10 a minute, the minute under way's slots
			// taken: told 8 minutes (28 when the closed minutes counted).
			assert.LessOrEqual(t, slices.Max(waits), 9.0, "minutes told")
		})
	}
}

// Changes of the live settings that change the flow of admissions (the
// limits, the method, QueueAll, Suspended) restart the admission rate
// (Rules.Since); others do not.
func TestFlowChangeRestartsTheRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(*Settings)
		flow bool
	}{
		{"limits", func(s *Settings) { s.NewUsersPerMinute-- }, true},
		{"method", func(s *Settings) { s.QueueingMethod = Random }, true},
		{"queue all", func(s *Settings) { s.QueueAll = true }, true},
		{"suspended", func(s *Settings) { s.Suspended = true }, true},
		{"template", func(s *Settings) { s.Template = "<p>{{waitTimeFormatted}}</p>" }, false},
		{"nothing", func(*Settings) {}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, nil)
			tr.clk.Add(time.Minute)
			require.NoError(t, tr.Update(t.Context(), tc.fn))
			st, err := tr.store.(store.Reader).Read(t.Context(), tr.cfg.Name)
			require.NoError(t, err)
			_, r := tr.settle(st, tr.now(), nil)
			assert.Equal(t, tc.flow, r.Since == tr.now(), "since %d, now %d", r.Since, tr.now())
		})
	}
}

// A FIFO event's shuffled pre-queue goes in in the order of its places
// behind a queue standing from before the pre-queue opened: the cut moves
// by the slots those visitors leave, no more than the minute has left. (It
// moved at the event's pace while they took every slot, reached 1 with 30
// of the 40 pre-queued still waiting, and they went in as they came back:
// 114 pairs let in out of order by more than two intervals, up to 24 let
// in ahead of one told they were next.) Below the cut, visitors still
// race within an interval or two.
func TestShuffleBehindAStandingQueue(t *testing.T) {
	clk := newClock()
	opens, start := clk.Now().Add(2*time.Minute), clk.Now().Add(5*time.Minute)
	tr := newTestRoomOn(t, clk, newMemStore(), func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute, c.RefreshJitter = 1000, 10, -1
		c.Identities = mrand.New(mrand.NewPCG(5, 6)).Uint64
		c.Events = []Event{{Name: "drop", PrequeueStart: opens, Start: start, End: start.Add(time.Hour), ShuffleAtStart: true}}
	})
	type guest struct {
		polite
		pre bool
		id  uint64
	}
	var gs []*guest
	tr.Update(t.Context(), func(s *Settings) { s.QueueAll = true })
	for range 30 { // queued before the pre-queue opens
		g := &guest{}
		require.True(t, isWaiting(tr.get(&g.visitor, "")))
		gs = append(gs, g)
		clk.Add(time.Second)
	}
	tr.Update(t.Context(), func(s *Settings) { s.QueueAll = false })
	clk.Set(opens)
	for range 40 {
		g := &guest{pre: true}
		got := jsonBody(t, tr.get(&g.visitor, "application/json"))
		id, err := strconv.ParseUint(got["lotteryIdentity"].(string), 16, 64)
		require.NoError(t, err)
		g.id = id
		gs = append(gs, g)
		clk.Add(time.Second)
	}
	// While those queued before go in, the pre-queue's places are told by
	// their place in the shuffle (all read 117 or 118 of them, places 0 to
	// 0.95, while no cut was written).
	serveUntil(t, []*testRoom{tr}, start.Add(30*time.Second), politeOf(gs), nil)
	st, err := tr.store.(store.Reader).Read(t.Context(), tr.cfg.Name)
	require.NoError(t, err)
	var seed lottery.Seed
	for _, x := range st.Seeds {
		if x.Start <= start.Unix() && start.Unix() < x.End {
			seed = x.Secret
		}
	}
	require.False(t, seed.IsZero())
	type told struct{ place, position float64 }
	var ts []told
	for _, g := range gs {
		if g.pre && g.inAt == 0 {
			got := jsonBody(t, tr.get(&g.visitor, "application/json"))
			ts = append(ts, told{lottery.Place(seed, g.id), got["positionInLine"].(float64)})
		}
	}
	concordant, pairs := 0, 0
	for _, a := range ts {
		for _, b := range ts {
			if a.place < b.place {
				pairs++
				if a.position < b.position {
					concordant++
				}
			}
		}
	}
	assert.Greater(t, float64(concordant), 0.9*float64(pairs), "positions told in the order of places")
	serveUntil(t, []*testRoom{tr}, start.Add(12*time.Minute), politeOf(gs), nil)
	interval := tr.cfg.RefreshInterval.Milliseconds()
	var lastOlder, firstPre int64 = 0, math.MaxInt64
	inversions := 0
	for _, g := range gs {
		require.NotZero(t, g.inAt, "everyone let in within 12 minutes at 10 a minute")
		if !g.pre {
			lastOlder = max(lastOlder, g.inAt)
			continue
		}
		firstPre = min(firstPre, g.inAt)
		for _, h := range gs {
			// A later place let in more than an interval before.
			if h.pre && lottery.Place(seed, h.id) > lottery.Place(seed, g.id) && h.inAt+2*interval < g.inAt {
				inversions++
			}
		}
	}
	assert.LessOrEqual(t, lastOlder, firstPre+interval, "those queued before the pre-queue opened first")
	assert.Zero(t, inversions, "pre-queued visitors let in out of the order of their places")
}

// Once the pre-queue of an event that shuffles it opened, its opening,
// start and end stay until it ends: the seed of its period is committed,
// and an end moved later made a period of its own with a new seed, which
// shuffled the rest of the pre-queue anew under a record listing no
// places (20 of 60 honest visitors failed verification; an operator who
// moved it again and again could pick who goes first). Shortening,
// suspending or removing it, and moving one not opened, are allowed.
func TestShufflingEventKeepsItsTimes(t *testing.T) {
	clk := newClock()
	opens, start := clk.Now().Add(time.Minute), clk.Now().Add(5*time.Minute)
	end := start.Add(time.Hour)
	for _, tc := range []struct {
		name    string
		at      time.Time
		shuffle bool
		change  func(e *Event)
		ok      bool
	}{
		{"ended later, in the pre-queue", opens.Add(time.Second), true, func(e *Event) { e.End = e.End.Add(30 * time.Minute) }, false},
		{"ended later, after the start", start.Add(4 * time.Minute), true, func(e *Event) { e.End = e.End.Add(30 * time.Minute) }, false},
		{"started later", opens.Add(time.Second), true, func(e *Event) { e.Start = e.Start.Add(time.Minute) }, false},
		{"opened earlier", opens.Add(time.Second), true, func(e *Event) { e.PrequeueStart = e.PrequeueStart.Add(-time.Minute) }, false},
		{"suspended and ended later", opens.Add(time.Second), true, func(e *Event) { e.Suspended, e.End = true, e.End.Add(time.Hour) }, false},
		{"shortened", start.Add(4 * time.Minute), true, func(e *Event) { e.End = e.End.Add(-30 * time.Minute) }, true},
		{"suspended", opens.Add(time.Second), true, func(e *Event) { e.Suspended = true }, true},
		{"a new limit", opens.Add(time.Second), true, func(e *Event) { e.TotalActiveUsers, e.NewUsersPerMinute = 50, 5 }, true},
		{"not opened yet", opens.Add(-time.Second), true, func(e *Event) { e.End = e.End.Add(30 * time.Minute) }, true},
		{"not shuffled", start.Add(time.Minute), false, func(e *Event) { e.End = e.End.Add(30 * time.Minute) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			tr := newTestRoomOn(t, clk, newMemStore(), func(c *Config) {
				c.Events = []Event{{Name: "drop", PrequeueStart: opens, Start: start, End: end, ShuffleAtStart: tc.shuffle}}
			})
			clk.Set(tc.at)
			tr.sync()
			err := tr.Update(t.Context(), func(s *Settings) { tc.change(&s.Events[0]) })
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidConfig)
			assert.Contains(t, err.Error(), `event "drop": its pre-queue is shuffled`)
			assert.Equal(t, end, tr.Stats().Settings.Events[0].End, "nothing changed")
		})
	}
	// Removed, it may be added again (as another event would be).
	tr := newTestRoomOn(t, clk, newMemStore(), func(c *Config) {
		c.Events = []Event{{Name: "drop", PrequeueStart: opens, Start: start, End: end, ShuffleAtStart: true}}
	})
	clk.Set(opens.Add(time.Second))
	require.NoError(t, tr.Update(t.Context(), func(s *Settings) { s.Events = nil }))
}

// polite is a visitor who comes back when told (the JSON's
// refreshIntervalSeconds), from next (Unix ms) on, until let in at inAt.
type polite struct {
	visitor
	next, inAt int64
}

// politeOf returns the polite visitors of gs, in order.
func politeOf[G interface{ self() *polite }](gs []G) []*polite {
	ps := make([]*polite, len(gs))
	for i, g := range gs {
		ps[i] = g.self()
	}
	return ps
}

func (p *polite) self() *polite { return p }

// serveUntil moves the rooms' clock a second at a time until until,
// syncing each every second, and lets each of ps not let in yet come back
// when due, at the next of the rooms in turn;
// seen (if not nil) gets the index and the JSON of each who waits on.
func serveUntil(t *testing.T, rooms []*testRoom, until time.Time, ps []*polite, seen func(i int, got map[string]any)) {
	t.Helper()
	clk, k := rooms[0].clk, 0
	for clk.Now().Before(until) {
		clk.Add(time.Second)
		for _, tr := range rooms {
			tr.sync()
		}
		now := clk.Now().UnixMilli()
		for i, p := range ps {
			if p.inAt != 0 || p.next > now {
				continue
			}
			k++ // each request at the next instance
			w := rooms[k%len(rooms)].get(&p.visitor, "application/json")
			if admitted(w) {
				p.inAt = now
				continue
			}
			got := jsonBody(t, w)
			p.next = now + int64(got["refreshIntervalSeconds"].(float64))*1000
			if seen != nil {
				seen(i, got)
			}
		}
	}
}

// waitsTold returns the waits, in minutes, told to those of vs not let in
// at their next request, each known.
func waitsTold(t *testing.T, tr *testRoom, vs []*visitor) []float64 {
	t.Helper()
	var waits []float64
	for _, v := range vs {
		if w := tr.get(v, "application/json"); !admitted(w) {
			got := jsonBody(t, w)
			require.Equal(t, true, got["waitTimeKnown"])
			waits = append(waits, got["waitTime"].(float64))
		}
	}
	return waits
}

package waitingroom

import (
	"math"
	"testing"
	"time"

	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRandomMinutesWriteUpExample(t *testing.T) {
	// 100 waiting, 10 let in per minute: P = 0.1; a 50 % chance takes
	// log(0.5)/log(0.9) ≈ 6.58 minutes (6 minutes 35 seconds).
	n := randomMinutes(10.0/100, 0.5)
	assert.InDelta(t, 6.58, n, 0.005)
	assert.Equal(t, 6*time.Minute+35*time.Second, time.Duration(n*float64(time.Minute)).Round(time.Second))
}

func TestRandomMinutes(t *testing.T) {
	for _, tc := range []struct {
		P, p, want float64
	}{
		{0.1, 0.25, 2.7304},
		{0.1, 0.75, 13.1576},
		{0.5, 0.5, 1},
		{1, 0.5, 0},
		{2, 0.75, 0},
	} {
		assert.InDelta(t, tc.want, randomMinutes(tc.P, tc.p), 1e-3, "P=%v p=%v", tc.P, tc.p)
	}
	assert.True(t, math.IsInf(randomMinutes(0, 0.5), 1))
}

// flowing is a view of a room admitting perMinute visitors a minute, with
// limits so high that only the observed rate bounds an estimate, and the
// policy in force.
func flowing(perMinute float64) (*view, *policy) {
	at := testclock.Start.UnixMilli()
	p := &policy{Settings: Settings{TotalActiveUsers: 1 << 40, NewUsersPerMinute: 1 << 40}, session: 5 * 60_000}
	return &view{View: share.View{At: at, PerMinute: perMinute}}, p
}

func TestFIFOEstimate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ahead, per float64
		want       Estimate
	}{
		{"nothing flows, nobody ahead", 0, 0, Estimate{Known: true}},
		{"nan", math.NaN(), 3, Estimate{}},
		{"nobody ahead", 0, 10, Estimate{Known: true}},
		{"exact", 100, 10, Estimate{Known: true, Wait: 10 * time.Minute}},
		{"rounds up", 101, 10, Estimate{Known: true, Wait: 11 * time.Minute}},
		{"a day", 1440, 1, Estimate{Known: true, Wait: 1440 * time.Minute}},
		{"over a day: unknown", 2000, 1, Estimate{Full: true}},
		{"absurd", 1e18, 1e-9, Estimate{Full: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, p := flowing(tc.per)
			got := fifoEstimate(v, p, tc.ahead, 0)
			if !math.IsNaN(tc.ahead) {
				assert.Equal(t, int(min(tc.ahead, 1e9))+1, got.Position, "position in line")
			}
			got.Position = 0
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRandomEstimate(t *testing.T) {
	v, p := flowing(10)
	e := randomEstimate(v, p, 100, 0)
	// 10 of 100 let in a minute: a chance of 10 % a minute.
	assert.InDelta(t, 0.1, e.ChancePerMinute, 1e-9)
	e.ChancePerMinute = 0
	assert.Equal(t, Estimate{Known: true, Wait: 7 * time.Minute, P25: 3 * time.Minute, P50: 7 * time.Minute, P75: 14 * time.Minute}, e)
	assert.Equal(t, "3 minutes to 14 minutes", e.Formatted(""))
	// Behind 50 of a random event's shuffled pre-queue, who go first: 5
	// minutes more, and no chance until they are in.
	behind := randomEstimate(v, p, 150, 50)
	assert.Zero(t, behind.ChancePerMinute)
	assert.Equal(t, [3]time.Duration{8 * time.Minute, 12 * time.Minute, 19 * time.Minute}, [3]time.Duration{behind.P25, behind.P50, behind.P75})
	v, p = flowing(5)
	assert.Equal(t, Estimate{Known: true, ChancePerMinute: 1}, randomEstimate(v, p, 0, 0))
	v, p = flowing(1)
	e = randomEstimate(v, p, 1e6, 0)
	assert.InDelta(t, 1e-6, e.ChancePerMinute, 1e-9)
	e.ChancePerMinute = 0
	assert.Equal(t, Estimate{Full: true}, e, "beyond a day: unknown")
}

// TestEstimateKnowsWhenSessionsEnd holds that while TotalActiveUsers
// binds, the estimate waits for the sessions holding the slots to end,
// whatever the admission rate says.
func TestEstimateKnowsWhenSessionsEnd(t *testing.T) {
	at := testclock.Start.UnixMilli() + 15_000 // Unix ms
	sec := at / 1000
	p := &policy{Settings: Settings{TotalActiveUsers: 3, NewUsersPerMinute: 3}, session: 5 * 60_000}
	times := share.SessionTimes{Window: p.session}
	// room is the view of the room with sessions last seen at the given seconds.
	room := func(perMinute float64, seen ...int64) *view {
		v := &view{View: share.View{At: at, PerMinute: perMinute}}
		var ss []store.Session
		for i, s := range seen {
			x := store.Session{ID: uint64(i + 1), Admitted: sec - 15, Seen: s}
			if times.Alive(&x, at) {
				v.Active++
				ss = append(ss, x)
			}
		}
		v.Ends = share.EndsOf(at, times, ss)
		return v
	}
	for _, tc := range []struct {
		name  string
		v     *view
		ahead float64
		want  Estimate
	}{
		// The README's demo: three let in at the start, the fourth waits
		// for the first session to end, 5 minutes after its last request.
		{"first slot", room(3, sec-15, sec-15, sec-15), 0, Estimate{Known: true, Wait: 5 * time.Minute}},
		{"third slot", room(3, sec-15, sec-10, sec-5), 2, Estimate{Known: true, Wait: 5 * time.Minute}},
		// Beyond the live sessions, slots come round once per session.
		{"second round", room(3, sec-15, sec-15, sec-15), 3, Estimate{Known: true, Wait: 10 * time.Minute}},
		{"a slot is free", room(3, sec-15, sec-15), 0, Estimate{Known: true}},
		// The limit on new visitors binds after a free slot: three this
		// minute already, the next one in the next minute.
		{"free slot, minute spent", func() *view { v := room(3, sec-15, sec-15); v.AdmittedThisMinute = 3; return v }(), 0,
			Estimate{Known: true, Wait: time.Minute}},
		// Nobody let in lately and the slot held by a session still in
		// use: its end is only the earliest it can come.
		{"renewed, nothing flows", room(0, sec-1, sec-1, sec-1), 0, Estimate{}},
		// Nobody let in lately, the sessions left alone: they end on time.
		{"abandoned, nothing flows", room(0, sec-200, sec-200, sec-100), 1, Estimate{Known: true, Wait: 2 * time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fifoEstimate(tc.v, p, tc.ahead, 0)
			assert.Equal(t, int(tc.ahead)+1, got.Position, "position in line")
			got.Position = 0
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestFirstInLineWhileTheOnlySlotIsHeld holds that the first in line
// behind the only slot, held by a session still in use, is told the end
// of that session (the earliest the slot can free) however fast the room
// let visitors in lately: the rate, which gives 0 for nobody ahead, never
// shortens the wait below the slot's end. Only a view in which the slot is
// free (one older than the holder's admission) says less than a minute.
func TestFirstInLineWhileTheOnlySlotIsHeld(t *testing.T) {
	at := testclock.Start.UnixMilli() + 15_000 // Unix ms
	sec := at / 1000
	for _, tc := range []struct {
		name      string
		session   int64   // ms
		perMinute float64 // admissions lately
		seen      int64   // seconds since the holder's latest request; < 0: no holder in the view
		want      Estimate
	}{
		{"renewed just now, one a minute lately", 5 * 60_000, 1, 1, Estimate{Known: true, Wait: 6 * time.Minute}},
		{"renewed just now, one in five minutes lately", 5 * 60_000, 0.2, 1, Estimate{Known: true, Wait: 6 * time.Minute}},
		{"renewed just now, sixty a minute lately", 5 * 60_000, 60, 1, Estimate{Known: true, Wait: 6 * time.Minute}},
		{"renewed 30 s ago", 5 * 60_000, 1, 30, Estimate{Known: true, Wait: 5 * time.Minute}},
		{"renewed 59 s ago", 5 * 60_000, 1, 59, Estimate{Known: true, Wait: 5 * time.Minute}},
		// One-minute sessions: the slot frees within a minute at the
		// earliest, which rounds up to a minute, not less.
		{"one-minute session renewed 59 s ago", 60_000, 1, 59, Estimate{Known: true, Wait: time.Minute}},
		// Nothing let in lately and the slot held by a session in use.
		{"renewed, nothing flows", 5 * 60_000, 0, 1, Estimate{}},
		// Left alone for over a minute: the session ends on time.
		{"left alone 200 s ago", 5 * 60_000, 1, 200, Estimate{Known: true, Wait: 2 * time.Minute}},
		// A view from before the holder's admission: the slot is free.
		{"a view without the holder", 5 * 60_000, 1, -1, Estimate{Known: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &policy{Settings: Settings{TotalActiveUsers: 1, NewUsersPerMinute: 1}, session: tc.session}
			times := share.SessionTimes{Window: p.session}
			v := &view{View: share.View{At: at, PerMinute: tc.perMinute}}
			var ss []store.Session
			if tc.seen >= 0 {
				ss = append(ss, store.Session{ID: 1, Admitted: sec - 600, Seen: sec - tc.seen})
				v.Active = 1
			}
			v.Ends = share.EndsOf(at, times, ss)
			got := fifoEstimate(v, p, 0, 0)
			assert.Equal(t, 1, got.Position, "next in line")
			got.Position = 0
			assert.Equal(t, tc.want, got)
		})
	}
}

// The visitor who asks right after the only slot was taken, before a sync
// counts its holder, is not told the slot is free: the instance counts
// the visitors it let in since its view (the wait is not known until a
// sync brings the holder's session, and its end).
func TestEstimateCountsAdmissionsSinceTheView(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute, c.SessionDuration = 1, 1, 5*time.Minute
	})
	require.True(t, admitted(tr.get(&visitor{}, "")))
	stale := jsonBody(t, tr.get(&visitor{}, "application/json"))
	require.Equal(t, true, stale["inWaitingRoom"])
	assert.False(t, stale["waitTimeKnown"] == true && stale["waitTime"] == 0.0,
		"told the slot is free within a minute while its holder's session lasts five: %v", stale)
	tr.sync()
	synced := jsonBody(t, tr.get(&visitor{}, "application/json"))
	require.Equal(t, true, synced["waitTimeKnown"])
	assert.GreaterOrEqual(t, synced["waitTime"], 5.0, "once a sync counts the holder: their session's end at least")
	if stale["waitTimeKnown"] == true { // before: not known, the holder's end not in the view yet
		assert.GreaterOrEqual(t, stale["waitTime"], 5.0)
	}
}

func TestFormatWait(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                 "less than a minute",
		time.Minute:       "1 minute",
		10 * time.Minute:  "10 minutes",
		60 * time.Minute:  "1 hour",
		61 * time.Minute:  "1 hour 1 minute",
		125 * time.Minute: "2 hours 5 minutes",
	} {
		assert.Equal(t, want, Estimate{Known: true, Wait: d}.Formatted(""))
	}
	assert.Equal(t, "unavailable", Estimate{}.Formatted(""))
	assert.Equal(t, "10 minutes", Estimate{Known: true, Wait: 10 * time.Minute}.Formatted(""))
}

// TestEstimateWhileSessionsHoldTheSlots replays the README's demo (3
// active, 3 a minute, 5-minute sessions) and a smaller room: a visitor who
// waits for a slot held by a session is never told "less than a minute"
// while that slot frees later, and when nobody renews a session, every
// estimate is the time left, rounded up to the minute.
func TestEstimateWhileSessionsHoldTheSlots(t *testing.T) {
	for _, tc := range []struct {
		name          string
		total, per    int
		session       time.Duration
		browseFor     time.Duration // the admitted visitors' requests go on this long
		wantUnknownBy time.Duration // with renewals, unknown once nothing flowed for this long
	}{
		{"readme demo", 3, 3, 5 * time.Minute, 0, 0},
		{"one slot", 1, 1, 2 * time.Minute, 0, 0},
		{"one slot, its session renewed", 1, 1, 5 * time.Minute, 8 * time.Minute, 6 * time.Minute},
		{"readme demo, sessions renewed", 3, 3, 5 * time.Minute, 8 * time.Minute, 6 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = tc.total, tc.per
				c.SessionDuration = tc.session
			})
			start := tr.clk.Now()
			in := make([]*visitor, tc.total)
			for i := range in {
				in[i] = &visitor{}
				require.True(t, admitted(tr.get(in[i], "")))
			}
			type shown struct {
				at    time.Duration
				known bool
				wait  int
			}
			var seen []shown
			last := &visitor{}
			var admittedAt time.Duration
			for elapsed := time.Duration(0); elapsed < 20*time.Minute; elapsed += 20 * time.Second {
				tr.clk.Set(start.Add(elapsed))
				if elapsed < tc.browseFor {
					for _, v := range in {
						tr.get(v, "")
					}
				}
				tr.sync()
				w := tr.get(last, "application/json")
				if admitted(w) {
					admittedAt = elapsed
					break
				}
				got := jsonBody(t, w)
				wait, _ := got["waitTime"].(float64)
				known, _ := got["waitTimeKnown"].(bool)
				if !known {
					assert.Equal(t, "unavailable", got["waitTimeFormatted"])
				}
				seen = append(seen, shown{elapsed, known, int(wait)})
			}
			require.NotZero(t, admittedAt, "let in within 20 minutes")
			for _, s := range seen {
				left := admittedAt - s.at
				if !s.known {
					require.NotZero(t, tc.wantUnknownBy, "unknown at %v", s.at)
					assert.GreaterOrEqual(t, s.at, tc.wantUnknownBy-time.Minute, "unknown at %v", s.at)
					continue
				}
				if left > time.Minute {
					assert.NotZero(t, s.wait, "told less than a minute at %v, let in at %v", s.at, admittedAt)
				}
			}
			t.Logf("let in at %v; shown %v", admittedAt, seen)
			for _, s := range seen {
				switch {
				case tc.wantUnknownBy > 0 && s.at >= tc.wantUnknownBy && s.at < tc.browseFor:
					assert.False(t, s.known, "at %v the slots' holders renew and nobody got in lately: unknown", s.at)
				case s.at >= tc.browseFor+time.Minute:
					// Nobody renews any more: the ends are the ends.
					assert.True(t, s.known, "at %v", s.at)
					assert.InDelta(t, (admittedAt - s.at).Minutes(), float64(s.wait), 1, "at %v, let in at %v", s.at, admittedAt)
				}
			}
		})
	}
}

// TestWaitBeyondADay holds that a wait longer than a day is unknown
// ("unavailable"), not a known "25 hours", and that the queue is not
// called full: nobody is turned away.
func TestWaitBeyondADay(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1000, 1
	})
	require.True(t, admitted(tr.get(&visitor{}, "")))
	for range 1500 {
		require.True(t, isWaiting(tr.get(&visitor{}, "")))
	}
	tr.clk.Add(30 * time.Second)
	tr.sync()
	got := jsonBody(t, tr.get(&visitor{}, "application/json"))
	assert.Equal(t, false, got["waitTimeKnown"])
	assert.Equal(t, "unavailable", got["waitTimeFormatted"])
	assert.Equal(t, 0.0, got["waitTime"])
	assert.Equal(t, false, got["queueIsFull"], "nobody is turned away")
	assert.Equal(t, 1501.0, got["positionInLine"], "the place is known all the same")
	e := tr.Stats().Estimate
	assert.False(t, e.Known)
	assert.True(t, e.Full)
}

// Visitors this instance queued since its view are in line: a visitor
// arriving a second after another, before a sync counts the first, is
// told they are second, with two in the queue, and stays second (the
// place shown never rises, so one told too low stayed there).
func TestEstimateCountsArrivalsSinceTheView(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute, c.SessionDuration = 1, 1, 5*time.Minute
	})
	require.True(t, admitted(tr.get(&visitor{}, "")))
	tr.sync()
	first, second := &visitor{}, &visitor{}
	require.Equal(t, 1.0, jsonBody(t, tr.get(first, "application/json"))["positionInLine"])
	tr.clk.Add(time.Second)
	got := jsonBody(t, tr.get(second, "application/json"))
	assert.Equal(t, 2.0, got["positionInLine"], "the visitor queued a second before is ahead")
	assert.Equal(t, 2.0, got["queueLength"])
	for range 3 {
		tr.clk.Add(time.Duration(got["refreshIntervalSeconds"].(float64)) * time.Second)
		tr.sync()
		require.Equal(t, 1.0, jsonBody(t, tr.get(first, "application/json"))["positionInLine"])
		got = jsonBody(t, tr.get(second, "application/json"))
		assert.Equal(t, 2.0, got["positionInLine"], "still second, chance after chance")
		assert.Equal(t, 2.0, got["queueLength"])
	}
}

// Visitors who arrive in the same second go in whatever order they ask:
// each expects half of the others ahead. A hundred arriving in one second
// at a full room were each told the wait of the next slot, which
// restarted whenever another took it (one waited 30 minutes told at most
// 5). Their place in line counts earlier seconds only, as documented.
func TestEstimateOfASecondsStampede(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) { c.TotalActiveUsers = 1000 }) // 10 a minute
	tr.clk.Set(tr.clk.Now().Truncate(time.Minute).Add(time.Minute))
	for range 10 {
		require.True(t, admitted(tr.get(&visitor{}, "")))
	}
	tr.sync()
	tr.clk.Set(tr.clk.Now().Truncate(time.Second).Add(time.Second))
	crowd := make([]*visitor, 100)
	for i := range crowd {
		crowd[i] = &visitor{}
		require.True(t, isWaiting(tr.get(crowd[i], "")))
	}
	tr.clk.Add(500 * time.Millisecond)
	tr.sync()
	for i, v := range crowd {
		got := jsonBody(t, tr.get(v, "application/json"))
		assert.Equal(t, 1.0, got["positionInLine"], "visitor %d: nobody of an earlier second", i)
		// 49 ahead at 10 a minute, the minute's 10 taken already: the
		// fifth minute from now, not the next.
		assert.GreaterOrEqual(t, got["waitTime"], 4.0, "visitor %d: half of the 99 others ahead", i)
	}
}

// A visitor refused at an instance whose view says a slot is free (another
// instance took it since the latest sync) is told the wait is unknown, not
// "less than a minute": the view does not hold what keeps them waiting.
// Their next refresh, after a sync, knows. Both methods, an HTML visitor
// and a JSON one.
func TestWaitUnknownWhileTheViewLags(t *testing.T) {
	for _, method := range []QueueingMethod{FIFO, Random} {
		t.Run(string(method), func(t *testing.T) {
			clk, st := newClock(), newMemStore()
			mutate := func(c *Config) {
				c.QueueingMethod = method
				c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
				c.SessionDuration = 5 * time.Minute
			}
			a := newTestRoomOn(t, clk, st, mutate)
			b := newTestRoomOn(t, clk, st, mutate)
			a.sync()
			b.sync()
			a.sync() // each knows the other: the one slot's grant is one's
			holder, other := a, b
			if !admitted(a.get(&visitor{}, "")) {
				holder, other = b, a
				require.True(t, admitted(b.get(&visitor{}, "")), "one of them holds the slot")
			}
			v := &visitor{}
			got := jsonBody(t, other.get(v, "application/json"))
			assert.Equal(t, false, got["waitTimeKnown"], "refused where the view has room: %v", got)
			clk.Add(time.Second)
			holder.sync()
			other.sync()
			clk.Add(25 * time.Second)
			got = jsonBody(t, other.get(v, "application/json"))
			assert.Equal(t, true, got["waitTimeKnown"], "after a sync: %v", got)
			assert.NotEqual(t, "less than a minute", got["waitTimeFormatted"])
		})
	}
}

package waitingroom

import (
	"context"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

func TestRoundSeconds(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{
		{-5, 0}, {0, 0}, {4, 0}, {5, 10}, {594, 590}, {599, 600},
		{600, 600}, {614, 600}, {615, 630}, {3599, 3600},
		{3600, 3600}, {3749, 3600}, {3750, 3900},
		{6 * 3600, 6 * 3600}, {6*3600 + 899, 6 * 3600}, {6*3600 + 900, 6*3600 + 1800},
		{1 << 40, 48 * 3600},
	} {
		assert.Equal(t, tc.want, roundSeconds(tc.in), "%d s", tc.in)
	}
	// Every duration up to 48 hours lands in one of at most 305 buckets,
	// within half a bucket.
	seen := map[int64]bool{}
	for s := int64(0); s <= 48*3600; s++ {
		r := roundSeconds(s)
		seen[r] = true
		step := map[bool]int64{true: 10, false: 1800}[s < 600]
		switch {
		case s >= 600 && s < 3600:
			step = 30
		case s >= 3600 && s < 6*3600:
			step = 300
		}
		assert.LessOrEqual(t, abs64(r-s), step/2, "%d s", s)
	}
	assert.LessOrEqual(t, len(seen), 305)
}

func abs64(x int64) int64 { return max(x, -x) }

func TestObservedWait(t *testing.T) {
	const m = 1000 // a minute, Unix minutes
	for _, tc := range []struct {
		name  string
		now   int64
		fresh bool
		want  int64
	}{
		{"fresh", m*60_000 + 5000, true, 0},
		{"the arrival minute's end", m*60_000 + 10_000, false, 5000},
		{"minutes later", (m+3)*60_000 + 12_000, false, 3*60_000 + 12_000 - 30_000},
		{"a bucket ahead", (m-1)*60_000 + 59_000, false, 0},
	} {
		assert.Equal(t, tc.want, observedWait(m, tc.now, tc.fresh), tc.name)
	}
}

func TestDurationsOf(t *testing.T) {
	assert.Equal(t, Durations{}, durationsOf(nil, 0))
	// 10 waits: 5 of 0 s, 4 of 60 s, 1 of 600 s (max 612 s).
	cs := []store.Count{{Key: 0, N: 5}, {Key: 60, N: 4}, {Key: 600, N: 1}}
	assert.Equal(t, Durations{Count: 10, P50: 0, P90: time.Minute, Max: 612 * time.Second}, durationsOf(cs, 612))
	cs = []store.Count{{Key: 0, N: 4}, {Key: 60, N: 4}, {Key: 600, N: 2}}
	assert.Equal(t, Durations{Count: 10, P50: time.Minute, P90: 598 * time.Second, Max: 598 * time.Second}, durationsOf(cs, 598),
		"a rounded value above the exact maximum is the maximum")
}

// pollers is visitors who come back when their page says, on a test room.
type pollers struct {
	tr   *testRoom
	t0   time.Time
	next map[*visitor]time.Duration // when each waiting visitor comes back; absent: gone or admitted
}

// until advances the clock to at (since t0) a second at a time, sending
// each waiting visitor's request when due and syncing every second.
func (c *pollers) until(at time.Duration) {
	for c.tr.clk.Now().Sub(c.t0) < at {
		c.tr.clk.Add(time.Second)
		now := c.tr.clk.Now().Sub(c.t0)
		for v, due := range c.next {
			if due <= now {
				w := c.tr.get(v, "")
				if admitted(w) {
					delete(c.next, v)
				} else {
					c.next[v] = now + time.Duration(refreshSeconds(c.tr.t, w))*time.Second
				}
			}
		}
		c.tr.sync()
	}
}

// The kept history, one instance on a memstore: admissions and their
// waits in their minute, abandonment in the minute a waiting count
// expires, sessions in the minute the room forgets them; written once the
// minute has been over for the instance TTL, and read back by Minutes.
func TestKeptHistory(t *testing.T) {
	st := memstore.New()
	tr := newTestRoomOn(t, newClock(), st, func(c *Config) { c.NewUsersPerMinute = 2; c.TotalActiveUsers = 100 })
	c := &pollers{tr: tr, t0: tr.clk.Now(), next: map[*visitor]time.Duration{}}
	// At 0 s four arrive: two are let in, two wait and refresh; one more
	// waits once and gives up.
	in := 0
	for range 4 {
		v := &visitor{}
		if w := tr.get(v, ""); admitted(w) {
			in++
		} else {
			c.next[v] = time.Duration(refreshSeconds(t, w)) * time.Second
		}
	}
	require.Equal(t, 2, in)
	quitter := &visitor{}
	require.True(t, isWaiting(tr.get(quitter, "")))
	c.until(3 * time.Minute)
	require.Empty(t, c.next, "all four let in; stats %+v", tr.Stats())

	ms, err := tr.Minutes(context.Background(), c.t0, c.t0.Add(time.Hour))
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	by := map[int]Minute{}
	for _, m := range ms {
		by[int(m.Minute.Sub(c.t0)/time.Minute)] = m
	}
	m0, m1 := by[0], by[1]
	assert.False(t, m0.Partial)
	assert.Equal(t, 2, m0.Admitted)
	assert.Equal(t, Durations{Count: 2}, m0.Wait, "let in at once: no wait")
	assert.Equal(t, 3, m0.Waiting, "two waiting and the quitter")
	assert.Equal(t, 2, m0.Active)
	assert.Equal(t, 2, m0.NewUsersPerMinute)
	assert.Equal(t, 100, m0.TotalActiveUsers)
	// The two who waited were let in during minute 1 (its slots are
	// released along the minute), at a refresh (20 s ± 10 %); arrived at 0
	// s of minute 0, they are taken for arrivals at 30 s.
	assert.Equal(t, 2, m1.Admitted)
	assert.Equal(t, 2, m1.Wait.Count)
	assert.InDelta(t, 50, m1.Wait.P50.Seconds(), 30)
	assert.InDelta(t, 60, m1.Wait.Max.Seconds(), 30)
	assert.InDelta(t, m1.Wait.Max.Seconds(), m1.Wait.P90.Seconds(), 5, "the longer of two, rounded to 10 s")
	abandoned := 0
	for _, m := range ms {
		abandoned += m.Abandoned
	}
	assert.Equal(t, 1, abandoned, "the quitter, once their count expired")

	// Sessions end when the room forgets them: the first two, whose only
	// request was their admission, lasted 0 s.
	c.until(12 * time.Minute)
	ms, err = tr.Minutes(context.Background(), c.t0, c.t0.Add(time.Hour))
	require.NoError(t, err)
	sessions := 0
	for _, m := range ms {
		sessions += m.Session.Count
		if m.Session.Count > 0 {
			assert.Equal(t, time.Duration(0), m.Session.Max)
		}
	}
	assert.Equal(t, 4, sessions)
	h := tr.History()
	require.NotEmpty(t, h)

	// Reports: no event, none.
	assert.Empty(t, Reports(ms))
	// Observed, for metrics: four waits, four sessions.
	o := tr.Observed()
	assert.Equal(t, uint64(4), o.Waits.Count)
	assert.Equal(t, uint64(2), o.Waits.Counts[0], "two waited 0 s")
	assert.Equal(t, uint64(4), o.Sessions.Count)
}

// A store without history: Minutes says so, and the state keeps no
// tallies.
func TestNoHistoryStore(t *testing.T) {
	st := plainStore{memstore.New()}
	tr := newTestRoomOn(t, newClock(), st, nil)
	tr.get(&visitor{}, "")
	tr.clk.Add(2 * time.Minute)
	tr.sync()
	_, err := tr.Minutes(context.Background(), time.Time{}, tr.clk.Now())
	assert.ErrorIs(t, err, ErrNoHistory)
	require.NoError(t, st.Update(context.Background(), "launch", func(s *store.State) error {
		assert.Empty(t, s.Tallies)
		return nil
	}))
	assert.Equal(t, uint64(1), tr.Observed().Waits.Count, "metrics all the same")
}

// plainStore hides the history of the store it wraps.
type plainStore struct{ store.Store }

func refreshSeconds(t testing.TB, w *httptest.ResponseRecorder) int {
	n, err := strconv.Atoi(w.Header().Get("Refresh"))
	require.NoError(t, err)
	return n
}

// A state lost and rebuilt (a flushed Redis) brings back the sessions of
// minutes already written: they are not written again, so the kept record
// stays whole.
func TestKeptHistoryAfterLoss(t *testing.T) {
	st := memstore.New()
	tr := newTestRoomOn(t, newClock(), st, nil)
	t0 := tr.clk.Now()
	for range 3 {
		require.True(t, admitted(tr.get(&visitor{}, "")))
	}
	for range 70 {
		tr.clk.Add(time.Second)
		tr.sync()
	}
	before, err := tr.Minutes(context.Background(), t0, t0.Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, before, 1)
	require.False(t, before[0].Partial)
	require.Equal(t, 3, before[0].Admitted)

	require.NoError(t, st.Update(context.Background(), "launch", func(s *store.State) error { *s = store.State{}; return nil }))
	for range 130 {
		tr.clk.Add(time.Second)
		tr.sync()
	}
	after, err := tr.Minutes(context.Background(), t0, t0.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, before, after)
}

package admin_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

func admitted(w *httptest.ResponseRecorder) bool {
	return w.Code == http.StatusOK && w.Body.String() == "app"
}

func refreshSeconds(t testing.TB, w *httptest.ResponseRecorder) int {
	n, err := strconv.Atoi(w.Header().Get("Refresh"))
	require.NoError(t, err)
	return n
}

// pollers is visitors who come back when their page says.
type pollers struct {
	t    testing.TB
	f    *adminFixture
	t0   time.Time
	next map[*string]time.Duration // when each waiting visitor (their cookie) comes back; absent: gone or admitted
}

// until advances the clock to at (since t0) a second at a time, sending
// each waiting visitor's request when due and syncing every second.
func (c *pollers) until(at time.Duration) {
	for c.f.clk.Now().Sub(c.t0) < at {
		c.f.clk.Add(time.Second)
		now := c.f.clk.Now().Sub(c.t0)
		for v, due := range c.next {
			if due <= now {
				w := c.f.get(v)
				if admitted(w) {
					delete(c.next, v)
				} else {
					c.next[v] = now + time.Duration(refreshSeconds(c.t, w))*time.Second
				}
			}
		}
		c.f.sync()
	}
}

// The kept history, one instance on a memstore: admissions and their
// waits in their minute, abandonment in the minute a waiting count
// expires, sessions in the minute the room forgets them; written once the
// minute has been over for the instance TTL, and read back by Minutes.
func TestKeptHistory(t *testing.T) {
	f := newAdminFixture(t, newAdminClock(), memstore.New(), func(c *waitingroom.Config) { c.NewUsersPerMinute = 2; c.TotalActiveUsers = 100 })
	f.sync()
	c := &pollers{t: t, f: f, t0: f.clk.Now(), next: map[*string]time.Duration{}}
	// At 0 s four arrive: two are let in, two wait and refresh; one more
	// waits once and gives up.
	in := 0
	for range 4 {
		v := new(string)
		if w := f.get(v); admitted(w) {
			in++
		} else {
			c.next[v] = time.Duration(refreshSeconds(t, w)) * time.Second
		}
	}
	require.Equal(t, 2, in)
	var quitter string
	require.Positive(t, refreshSeconds(t, f.get(&quitter)), "the quitter waits")
	c.until(3 * time.Minute)
	require.Empty(t, c.next, "all four let in; stats %+v", f.room.Stats())

	ms, err := admin.Minutes(t.Context(), f.room, c.t0, c.t0.Add(time.Hour))
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	by := map[int]admin.Minute{}
	for _, m := range ms {
		by[int(m.Minute.Sub(c.t0)/time.Minute)] = m
	}
	m0, m1 := by[0], by[1]
	assert.False(t, m0.Partial)
	assert.Equal(t, 2, m0.Admitted)
	assert.Equal(t, admin.Durations{Count: 2}, m0.Wait, "let in at once: no wait")
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
	ms, err = admin.Minutes(t.Context(), f.room, c.t0, c.t0.Add(time.Hour))
	require.NoError(t, err)
	sessions := 0
	for _, m := range ms {
		sessions += m.Session.Count
		if m.Session.Count > 0 {
			assert.Equal(t, time.Duration(0), m.Session.Max)
		}
	}
	assert.Equal(t, 4, sessions)
	require.NotEmpty(t, f.room.History())

	// Reports: no event, none.
	assert.Empty(t, admin.Reports(ms))
	// Observed, for metrics: four waits, four sessions.
	o := f.room.Stats().Observed
	assert.Equal(t, uint64(4), o.Waits.Count)
	assert.Equal(t, uint64(2), o.Waits.Counts[0], "two waited 0 s")
	assert.Equal(t, uint64(4), o.Sessions.Count)
}

// A state lost and rebuilt (a flushed Redis) brings back the sessions of
// minutes already written: they are not written again, so the kept record
// stays whole.
func TestKeptHistoryAfterLoss(t *testing.T) {
	st := memstore.New()
	f := newAdminFixture(t, newAdminClock(), st, nil)
	f.sync()
	t0 := f.clk.Now()
	for range 3 {
		require.True(t, f.visit(new(string)))
	}
	for range 70 {
		f.clk.Add(time.Second)
		f.sync()
	}
	before, err := admin.Minutes(t.Context(), f.room, t0, t0.Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, before, 1)
	require.False(t, before[0].Partial)
	require.Equal(t, 3, before[0].Admitted)

	require.NoError(t, st.Update(t.Context(), "launch", func(s *store.State) error { *s = store.State{}; return nil }))
	for range 130 {
		f.clk.Add(time.Second)
		f.sync()
	}
	after, err := admin.Minutes(t.Context(), f.room, t0, t0.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, before, after)
}

// A report pairs its busiest minute's admissions with the limit in force
// in that minute, not with the highest limit of another: 10 let in at a
// limit of 10 read as 10 of 20 when the limit was raised to 20 for
// minutes that let in 5.
func TestReportPeakAndItsLimit(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	minute := func(i, admitted, limit int) admin.Minute {
		return admin.Minute{Minute: t0.Add(time.Duration(i) * time.Minute), Event: "drop", Admitted: admitted, NewUsersPerMinute: limit}
	}
	for _, tc := range []struct {
		name        string
		ms          []admin.Minute
		peak, limit int
	}{
		{"raised after the peak", []admin.Minute{minute(0, 10, 10), minute(1, 5, 20)}, 10, 10},
		{"lowered after the peak", []admin.Minute{minute(0, 20, 20), minute(1, 5, 5)}, 20, 20},
		{"a tie: the first", []admin.Minute{minute(0, 5, 5), minute(1, 5, 50)}, 5, 5},
		{"nobody let in", []admin.Minute{minute(0, 0, 10), minute(1, 0, 20)}, 0, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := admin.Reports(tc.ms)
			require.Len(t, rs, 1)
			assert.Equal(t, [2]int{tc.peak, tc.limit}, [2]int{rs[0].PeakAdmitted, rs[0].NewUsersPerMinute})
		})
	}
}

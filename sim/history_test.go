package sim

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// The room's kept history tells the truth: in runs whose every wait is
// known, the p50 and p90 of the waits it recorded minute by minute are
// within a minute of the true ones, its admissions per minute are exact,
// and so is the number of visitors who gave up, all instances together.
func TestHistoryAccuracy(t *testing.T) {
	t.Parallel()
	for _, method := range []waitingroom.QueueingMethod{waitingroom.FIFO, waitingroom.Random} {
		t.Run(string(method), func(t *testing.T) {
			t.Parallel()
			per := pick(200, 50)
			st := memstore.New()
			defer st.Close()
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			res := simulate(t, Options{
				Visitors:          per * 40,
				Arrivals:          20 * time.Minute,
				Method:            method,
				Abandon:           0.02,
				NewUsersPerMinute: per,
				TotalActiveUsers:  100 * per,
				Instances:         2,
				Store:             st,
				Start:             start,
				Duration:          50 * time.Minute, // the last to give up expire meanwhile
				FirstEstimateOnly: true,
			})
			// The history as an operator reads it, from another instance.
			rm, err := waitingroom.New(waitingroom.Config{Name: "sim", Keys: [][]byte{simKey}, SyncInterval: -1,
				Settings: waitingroom.Settings{
					TotalActiveUsers:  1,
					NewUsersPerMinute: 1,
				}}, st)
			require.NoError(t, err)
			defer rm.Close()
			ms, err := admin.Minutes(context.Background(), rm, start, start.Add(24*time.Hour))
			require.NoError(t, err)

			waits := map[int][]time.Duration{}
			for _, v := range res.VisitorRecords {
				if v.WasAdmitted {
					m := int(v.Admitted / time.Minute)
					waits[m] = append(waits[m], v.Wait())
				}
			}
			recorded := map[int]admin.Minute{}
			abandoned, sessions := 0, 0
			for _, m := range ms {
				i := int(m.Minute.Sub(start) / time.Minute)
				recorded[i] = m
				abandoned += m.Abandoned
				sessions += m.Session.Count
				if m.Session.Count > 0 {
					// Visitors browse for a minute, a request every 20 s:
					// their sessions last 40 s to a minute and a little.
					assert.InDelta(t, 55, m.Session.P50.Seconds(), 20, "session p50 of minute %d", i)
					assert.LessOrEqual(t, m.Session.Max, 2*time.Minute, "session max of minute %d", i)
				}
			}
			last := int(time.Duration(res.DurationSeconds*float64(time.Second)) / time.Minute)
			var worst50, worst90 time.Duration
			checked := 0
			for _, m := range res.Minutes {
				if m.Minute >= last-1 {
					continue // not over, or not written yet
				}
				r, ok := recorded[m.Minute]
				if !assert.True(t, ok, "minute %d recorded", m.Minute) {
					continue
				}
				assert.Equal(t, m.Admissions, r.Admitted, "admissions of minute %d", m.Minute)
				w := waits[m.Minute]
				assert.Equal(t, len(w), r.Wait.Count, "waits of minute %d", m.Minute)
				if len(w) == 0 {
					continue
				}
				slices.Sort(w)
				p50, p90 := w[(len(w)+1)/2-1], w[(len(w)*9+9)/10-1]
				worst50 = max(worst50, (r.Wait.P50 - p50).Abs())
				worst90 = max(worst90, (r.Wait.P90 - p90).Abs())
				assert.InDelta(t, p50.Seconds(), r.Wait.P50.Seconds(), 60, "p50 of minute %d", m.Minute)
				assert.InDelta(t, p90.Seconds(), r.Wait.P90.Seconds(), 60, "p90 of minute %d", m.Minute)
				assert.InDelta(t, w[len(w)-1].Seconds(), r.Wait.Max.Seconds(), 60, "max of minute %d", m.Minute)
				checked++
			}
			t.Logf("%s: %d minutes checked, %d admissions; worst error p50 %v, p90 %v; %d gave up, %d recorded as abandoned; %d sessions recorded",
				method, checked, res.Admitted, worst50, worst90, res.Abandoned, abandoned, sessions)
			assert.Greater(t, checked, 20)
			assert.Equal(t, res.Abandoned, abandoned, "every visitor who gave up, once")
			assert.Equal(t, res.Admitted, sessions, "every session, once it was forgotten")
		})
	}
}

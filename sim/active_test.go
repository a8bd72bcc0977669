package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
)

// activeBinds is a standing queue while TotalActiveUsers binds: total
// visitors may be active, each browses for a minute (a request every 20
// seconds) and holds their slot for session after their last request, so
// the room lets in about total / (1 minute + session) a minute, far below
// NewUsersPerMinute. Over the first session hold (1 minute + session),
// total visitors arrive and get in, and queueMinutes of that flow more
// who wait, so that sessions end spread out as in a room that has run
// for a while; then as many arrive each minute as get in, for minutes.
// Estimates are judged for visitors arriving from 5 minutes after that
// first hold until 5 minutes before arrivals end.
func activeBinds(method waitingroom.QueueingMethod, total int, session time.Duration, queueMinutes, minutes int) Options {
	hold := time.Minute + session
	rate := float64(total) / hold.Minutes()
	q0 := total + int(rate*float64(queueMinutes))
	n := q0 + int(rate*float64(minutes))
	return Options{
		Visitors:          n,
		Arrival:           Spike,
		SpikeShare:        float64(q0) / float64(n),
		SpikeSpan:         hold,
		Arrivals:          time.Duration(minutes) * time.Minute,
		Browse:            time.Minute,
		BrowseEvery:       20 * time.Second,
		Method:            method,
		TotalActiveUsers:  total,
		NewUsersPerMinute: total,
		SessionDuration:   session,
		MeasureFrom:       hold + 5*time.Minute,
		MeasureUntil:      time.Duration(minutes-5) * time.Minute,
		FirstEstimateOnly: true,
	}
}

// TestEstimatesWhileActiveBinds holds the estimates to the same standard
// as in a steady queue bound by NewUsersPerMinute when TotalActiveUsers
// binds instead, with sessions of 1, 5 and 30 minutes: slots then free as
// sessions end, in bursts when they began together, which the admission
// rate alone cannot foresee.
func TestEstimatesWhileActiveBinds(t *testing.T) {
	t.Parallel()
	for _, session := range []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute} {
		for _, method := range []waitingroom.QueueingMethod{waitingroom.FIFO, waitingroom.Random} {
			t.Run(fmt.Sprintf("%s/%v", method, session), func(t *testing.T) {
				t.Parallel()
				minutes := pick(90, 40)
				if session == 30*time.Minute {
					minutes = pick(150, 100)
				}
				o := activeBinds(method, pick(200, 60), session, 10, minutes)
				res := simulate(t, o)
				t.Logf("%d visitors, %d requests; peak %d active (limit %d); utilization %.3f over %d minutes",
					res.Visitors, res.Requests, res.PeakActive, o.TotalActiveUsers, res.Utilization, res.SaturatedMinutes)
				switch method {
				case waitingroom.FIFO:
					ee := res.EstimateError
					require.NotNil(t, ee)
					t.Logf("FIFO estimate error over %d visitors: median %.3f, p90 %.3f, bias %+.3f", ee.N, ee.Median, ee.P90, ee.Bias)
					require.Greater(t, ee.N, 50)
					assert.LessOrEqual(t, ee.Median, 0.20, "median relative error of the first FIFO estimate")
					pe := res.PositionError
					require.NotNil(t, pe)
					t.Logf("FIFO position error over %d visitors: median %.3f, p90 %.3f, bias %+.3f", pe.N, pe.Median, pe.P90, pe.Bias)
					assert.LessOrEqual(t, pe.Median, 0.10, "median relative error of the position in line")
				case waitingroom.Random:
					c := res.Calibration
					require.NotNil(t, c)
					t.Logf("random calibration over %d visitors: within P25 %.3f, P50 %.3f, P75 %.3f", c.N, c.WithinP25, c.WithinP50, c.WithinP75)
					require.Greater(t, c.N, 50)
					assert.InDelta(t, 0.5, c.WithinP50, 0.1, "share let in within the shown P50")
					assert.InDelta(t, 0.75, c.WithinP75, 0.1, "share let in within the shown P75")
				}
			})
		}
	}
}

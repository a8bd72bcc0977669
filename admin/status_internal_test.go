package admin

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
)

func TestFinite(t *testing.T) {
	for in, want := range map[float64]float64{0: 0, 1.5: 1.5, -2: -2, math.Inf(1): 0, math.Inf(-1): 0} {
		assert.Equal(t, want, finite(in), "%v", in)
	}
	assert.Zero(t, finite(math.NaN()))
}

// An estimate is given in whole seconds, its quartiles for random only,
// nothing when unknown.
func TestEstimateJSON(t *testing.T) {
	e := waitingroom.Estimate{Known: true, Wait: 90*time.Second + 900*time.Millisecond, P25: time.Minute, P50: 2 * time.Minute, P75: 3 * time.Minute}
	fifo := estimateJSON(e, false)
	require.NotNil(t, fifo.WaitSeconds)
	assert.Equal(t, int64(90), *fifo.WaitSeconds)
	assert.Nil(t, fifo.P25Seconds)
	assert.Nil(t, fifo.P50Seconds)
	assert.Nil(t, fifo.P75Seconds)
	assert.True(t, fifo.Known)

	random := estimateJSON(e, true)
	require.NotNil(t, random.P25Seconds)
	assert.Equal(t, int64(60), *random.P25Seconds)
	assert.Equal(t, int64(120), *random.P50Seconds)
	assert.Equal(t, int64(180), *random.P75Seconds)

	unknown := estimateJSON(waitingroom.Estimate{Wait: time.Minute}, true)
	assert.False(t, unknown.Known)
	assert.Nil(t, unknown.WaitSeconds)
	assert.Nil(t, unknown.P50Seconds)
}

// eventsAt finds the event in force (its pre-queue included), else the
// next, passing over suspended events.
func TestEventsAt(t *testing.T) {
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return base.Add(time.Duration(h) * time.Hour) }
	events := []waitingroom.Event{
		{Name: "a", PrequeueStart: at(1), Start: at(2), End: at(3)},
		{Name: "off", Start: at(4), End: at(5), Suspended: true},
		{Name: "b", Start: at(6), End: at(7)},
	}
	for _, tc := range []struct {
		name     string
		t        time.Time
		current  string
		prequeue bool
		next     string
	}{
		{"before any", at(0), "", false, "a"},
		{"in a's pre-queue", at(1), "a", true, ""},
		{"a in progress", at(2), "a", false, ""},
		{"a's end", at(3), "", false, "b"},
		{"within the suspended one", at(4).Add(time.Minute), "", false, "b"},
		{"b in progress", at(6).Add(time.Minute), "b", false, ""},
		{"after all", at(8), "", false, ""},
		{"no time", time.Time{}, "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur, pre, next := eventsAt(events, tc.t)
			name := func(e *waitingroom.Event) string {
				if e == nil {
					return ""
				}
				return e.Name
			}
			assert.Equal(t, tc.current, name(cur))
			assert.Equal(t, tc.prequeue, pre)
			assert.Equal(t, tc.next, name(next))
		})
	}
}

// An event is given in UTC, its pre-queue's start only when it has one.
func TestEventJSON(t *testing.T) {
	zone := time.FixedZone("x", 3600)
	e := &waitingroom.Event{Name: "a", Description: "d", Start: time.Date(2030, 1, 1, 10, 0, 0, 0, zone), End: time.Date(2030, 1, 1, 11, 0, 0, 0, zone),
		TotalActiveUsers: 5, NewUsersPerMinute: 2, QueueingMethod: waitingroom.Random}
	out := eventJSON(e, true, false)
	assert.Equal(t, time.UTC, out.Start.Location())
	assert.True(t, out.Start.Equal(e.Start))
	assert.Nil(t, out.PrequeueStart)
	assert.True(t, out.InProgress)
	assert.Equal(t, 5, out.TotalActiveUsers)
	e.PrequeueStart = e.Start.Add(-time.Hour)
	out = eventJSON(e, false, true)
	require.NotNil(t, out.PrequeueStart)
	assert.True(t, out.PrequeueStart.Equal(e.PrequeueStart))
	assert.Equal(t, time.UTC, out.PrequeueStart.Location())
	assert.True(t, out.Prequeueing)
}

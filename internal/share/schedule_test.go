package share

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
)

// EndsOf counts the live sessions only, by when each ends unless renewed,
// earliest first, each no earlier than it does and within a step of it;
// those seen within the last minute are being renewed.
func TestEndsOf(t *testing.T) {
	times := SessionTimes{Window: 300_000, Margin: 2000}
	const now = int64(1_000_000_000)
	sec := now / 1000
	ss := []store.Session{
		{ID: 1, Seen: sec},                         // ends in 303 s, being renewed
		{ID: 2, Seen: sec - 200},                   // ends in 103 s
		{ID: 3, Seen: sec, End: sec + 10},          // ends in 10 s
		{ID: 4, Seen: sec, Revoked: true},          // not live
		{ID: 5, Seen: sec - 400},                   // over
		{ID: 6, Seen: sec - 100, End: sec + 1_000}, // ends in 203 s
	}
	s := EndsOf(now, times, ss)
	for j, tc := range []struct {
		end      int64
		renewing bool
	}{
		{now + 10_000, false},
		{now + 103_000, false},
		{now + 203_000, false},
		{now + 303_000, true},
	} {
		at, renewing, ok := s.End(int64(j + 1))
		require.True(t, ok, "session %d", j+1)
		assert.GreaterOrEqual(t, at, tc.end, "session %d: no earlier than it ends", j+1)
		assert.LessOrEqual(t, at, tc.end+1000, "session %d: within a step", j+1)
		assert.Equal(t, tc.renewing, renewing, "session %d", j+1)
	}
	_, _, ok := s.End(5)
	assert.False(t, ok, "four live sessions")

	empty := EndsOf(now, times, nil)
	_, _, ok = empty.End(1)
	assert.False(t, ok, "none live")
}

// Sessions that end in the same step end together; a longer window makes
// coarser steps, never more than endResolution of them.
func TestEndsOfSteps(t *testing.T) {
	const now = int64(1_000_000_000)
	sec := now / 1000
	times := SessionTimes{Window: 3_600_000}
	var ss []store.Session
	for i := range int64(3600) {
		ss = append(ss, store.Session{ID: uint64(i + 1), Seen: sec - i})
	}
	s := EndsOf(now, times, ss)
	assert.LessOrEqual(t, len(s.steps), endResolution+2)
	prev := int64(0)
	for j := int64(1); j <= int64(len(ss)); j++ {
		at, _, ok := s.End(j)
		require.True(t, ok)
		require.GreaterOrEqual(t, at, prev, "ends in order")
		prev = at
	}
}

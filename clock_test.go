package waitingroom

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWallClock: the clock reads as time.Now does, to the millisecond the
// room works in, and follows the wall clock within a second when it is set.
func TestWallClock(t *testing.T) {
	var c wallClock
	for range 10_000 {
		before := time.Now().UnixMilli()
		got := c.Now().UnixMilli()
		after := time.Now().UnixMilli()
		require.True(t, before <= got && got <= after, "%d not within [%d, %d]", got, before, after)
	}

	// The wall clock read at a reading is what the time counts from until
	// a second passes on the monotonic clock, however the wall clock moves.
	set := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	c.base.Store(&clockReading{wall: set, mono: time.Now()})
	got := c.Now()
	assert.True(t, !got.Before(set) && got.Before(set.Add(time.Second)), "%v: counted from the reading", got)

	// A second on, the wall clock is read again.
	c.base.Store(&clockReading{wall: set, mono: time.Now().Add(-time.Second)})
	got = c.Now()
	assert.WithinDuration(t, time.Now(), got, time.Second, "read again after a second")
	assert.Less(t, got.Sub(set), time.Duration(0))
}

func TestRoomClock(t *testing.T) {
	rm, err := New(Config{Name: "clock", TotalActiveUsers: 1, NewUsersPerMinute: 1, Keys: [][]byte{testKey}, SyncInterval: -1}, newMemStore())
	require.NoError(t, err)
	defer rm.Close()
	before := time.Now().UnixMilli()
	got := rm.now()
	assert.True(t, before <= got && got <= time.Now().UnixMilli(), "the default clock is the wall clock")

	clk := newClock()
	tr := newTestRoomOn(t, clk, newMemStore(), nil)
	assert.Equal(t, clk.Now().UnixMilli(), tr.now(), "Config.Now is the clock when set")
}

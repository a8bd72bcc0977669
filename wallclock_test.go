package waitingroom

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// wallMillis reads the same clock as time.Now: every reading lies between
// the time.Now readings around it, to the millisecond.
func TestWallMillisIsTimeNow(t *testing.T) {
	for range 100_000 {
		before := time.Now().UnixMilli()
		got := wallMillis()
		after := time.Now().UnixMilli()
		if got < before || got > after {
			require.Failf(t, "wallMillis outside time.Now", "%d not in [%d, %d]", got, before, after)
		}
	}
}

// A room whose Config.Now is left nil reads the wall clock; one given a
// clock reads that clock.
func TestRoomClock(t *testing.T) {
	cfg := baseConfig(nil)
	cfg.Now = nil
	rm, err := New(cfg, memstore.New())
	require.NoError(t, err)
	defer rm.Close()
	before := time.Now().UnixMilli()
	got := rm.localNow()
	require.GreaterOrEqual(t, got, before)
	require.LessOrEqual(t, got, time.Now().UnixMilli())

	cfg.Now = func() time.Time { return time.UnixMilli(1_234_567) }
	rm2, err := New(cfg, memstore.New())
	require.NoError(t, err)
	defer rm2.Close()
	require.Equal(t, int64(1_234_567), rm2.localNow())
}

package share

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// WallMillis reads the same clock as time.Now: every reading lies between
// the time.Now readings around it, to the millisecond.
func TestWallMillisIsTimeNow(t *testing.T) {
	for range 100_000 {
		before := time.Now().UnixMilli()
		got := WallMillis()
		after := time.Now().UnixMilli()
		if got < before || got > after {
			require.Failf(t, "WallMillis outside time.Now", "%d not in [%d, %d]", got, before, after)
		}
	}
}

package waitingroom

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store/memstore"
)

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

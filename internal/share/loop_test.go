package share

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// The protocol's times, for a room syncing every interval.
func TestProtocolTimes(t *testing.T) {
	for _, tc := range []struct {
		interval                  time.Duration
		timeout, wake, ttl, grace time.Duration
		pickWait                  int64
	}{
		{0, 2 * time.Second, 0, 3 * time.Second, 6 * time.Second, 3000},
		{-time.Second, 2 * time.Second, -100 * time.Millisecond, 3 * time.Second, 6 * time.Second, 3000},
		{500 * time.Millisecond, 2 * time.Second, 50 * time.Millisecond, 3 * time.Second, 4500 * time.Millisecond, 1500},
		{time.Second, 2 * time.Second, 100 * time.Millisecond, 3 * time.Second, 5 * time.Second, 3000},
		{5 * time.Second, 10 * time.Second, 500 * time.Millisecond, 15 * time.Second, 25 * time.Second, 15000},
	} {
		assert.Equal(t, tc.timeout, SyncTimeout(tc.interval), "SyncTimeout(%v)", tc.interval)
		assert.Equal(t, tc.wake, WakeGap(tc.interval), "WakeGap(%v)", tc.interval)
		assert.Equal(t, tc.ttl, InstanceTTL(tc.interval), "InstanceTTL(%v)", tc.interval)
		assert.Equal(t, tc.grace, GraceAfterGap(tc.interval), "GraceAfterGap(%v)", tc.interval)
		assert.Equal(t, tc.pickWait, PickWait(tc.interval), "PickWait(%v)", tc.interval)
		if tc.interval > 0 {
			assert.GreaterOrEqual(t, GraceAfterGap(tc.interval), SyncTimeout(tc.interval)+maxBackoff(tc.interval),
				"every instance syncs within the grace, through its backoff")
		}
	}
}

// Closed, a Syncer refuses syncs with Config.Closed; Shutdown may be
// called again, and Close after it.
func TestShutdownCloses(t *testing.T) {
	clk := testclock.New(testclock.Start)
	s := newTestSyncer(t, clk, memstore.New(), &testHost{})
	ctx := context.Background()
	assert.NoError(t, s.Sync(ctx))
	assert.NoError(t, s.Shutdown(ctx))
	assert.Equal(t, s.cfg.Closed, s.Sync(ctx))
	assert.Equal(t, s.cfg.Closed, s.Ready(ctx))
	assert.NoError(t, s.Shutdown(ctx), "again")
	s.Close()
}

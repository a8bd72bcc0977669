package share

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// A sync's parameters follow the Syncer's configuration: a reservation
// held half a waiting window and a margin, an instance TTL of the
// interval's, no negative interval.
func TestSyncerParams(t *testing.T) {
	s := newTestSyncer(t, testclock.New(testclock.Start), memstore.New(), &testHost{})
	p := s.params(123)
	assert.Equal(t, int64(123), p.now)
	assert.Equal(t, "a", p.id)
	assert.Equal(t, int64(44_000), p.waitWindow)
	assert.Equal(t, int64(22_000+dueMargin), p.dueWindow)
	assert.Zero(t, p.syncInterval, "the caller syncs: no negative interval")
	assert.Equal(t, InstanceTTL(-1).Milliseconds(), p.instanceTTL)
	assert.Equal(t, int64(fleetScarceBelow), p.scarceBelow)
	assert.Equal(t, fleetLeaseTTLs*InstanceTTL(-1).Milliseconds(), s.fleetPatience())

	s.cfg.SyncInterval = 2 * time.Second
	p = s.params(0)
	assert.Equal(t, int64(2000), p.syncInterval)
	assert.Equal(t, int64(6000), p.instanceTTL)
	assert.Equal(t, int64(18_000), s.fleetPatience())
}

// usedSince sums the admissions of the batches after base, by entry.
func TestUsedSince(t *testing.T) {
	s := newTestSyncer(t, testclock.New(testclock.Start), memstore.New(), &testHost{})
	s.fleet.used = []usedBatch{
		{seq: 3, used: map[int64]int64{100: 1}},
		{seq: 4, used: map[int64]int64{100: 2, AnyBucket: 1}},
		{seq: 5, used: map[int64]int64{101: 4}},
		{seq: 6, used: nil},
	}
	u := s.usedSince(3)
	assert.Equal(t, map[int64]int64{100: 2, 101: 4, AnyBucket: 1}, u.byEntry)
	assert.Equal(t, int64(7), u.total)
	u = s.usedSince(6)
	assert.Empty(t, u.byEntry)
	assert.Zero(t, u.total)
}

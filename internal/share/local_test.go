package share

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Local.Take charges what it takes while a sync is in flight to the grant
// the sync brings, entry by entry.
func TestTakeWhileInFlight(t *testing.T) {
	l := newLocal()
	l.SetGrant(Grant{{Bucket: 3, N: 1}, {Bucket: AnyBucket, N: 1}})
	l.inflight = map[int64]int64{}
	assert.True(t, l.Take(3, false))
	assert.True(t, l.Take(3, false), "an older visitor takes a newer one's slot")
	assert.False(t, l.Take(3, false))
	assert.Equal(t, map[int64]int64{3: 1, AnyBucket: 1}, l.inflight)
}

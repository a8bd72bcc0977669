package share

import (
	"testing"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// Lookup merges the latest view's record with the reports since; Report
// remembers what it reports.
func TestLocalReportAndLookup(t *testing.T) {
	l := newLocal()
	v := &View{Sessions: []store.Session{{ID: 1, Admitted: 10, Seen: 10}, {ID: 2, Admitted: 20, Seen: 20}}}
	l.Report(store.Session{ID: 1, Seen: 30})
	l.Report(store.Session{ID: 1, Seen: 25, Revoked: true})
	l.Report(store.Session{ID: 3, Admitted: 40, Seen: 40})
	for _, tc := range []struct {
		id    uint64
		want  store.Session
		found bool
	}{
		{1, store.Session{ID: 1, Admitted: 10, Seen: 30, Revoked: true}, true},
		{2, store.Session{ID: 2, Admitted: 20, Seen: 20}, true},
		{3, store.Session{ID: 3, Admitted: 40, Seen: 40}, true},
		{4, store.Session{}, false},
	} {
		x, ok := l.Lookup(v, tc.id)
		assert.Equal(t, tc.found, ok, "visitor %d", tc.id)
		assert.Equal(t, tc.want, x, "visitor %d", tc.id)
	}
	assert.Equal(t, store.Session{ID: 1, Seen: 30, Revoked: true}, l.pending.sessions[1], "the next sync's report")
}

// Grant is a copy: taking from it takes nothing from the grant in hand.
func TestLocalGrantIsACopy(t *testing.T) {
	l := newLocal()
	l.SetGrant(Grant{{Bucket: AnyBucket, N: 1}})
	g := l.Grant()
	g[0].N = 0
	assert.True(t, l.Take(AnyBucket, true))
	assert.False(t, l.Take(AnyBucket, true))
	assert.Equal(t, int64(0), l.Grant().Total())
	assert.Nil(t, l.inflight, "no sync in flight: nothing charged")
}

// Count, Attempt, Wait and Ask (and Reask) go out with the next sync.
func TestLocalPending(t *testing.T) {
	l := newLocal()
	l.Count(100, 7, 1)
	l.Count(100, 7, 1)
	l.Count(100, 6, -1)
	l.Attempt()
	l.Attempt()
	l.Wait(5, 1234)
	_, ok := l.Asked(9)
	assert.False(t, ok)
	require.True(t, l.MayAsk(9))
	l.Ask(9, 101, 5000)
	b, ok := l.Asked(9)
	assert.True(t, ok)
	assert.Equal(t, int64(101), b)
	assert.Equal(t, map[cellKey]int64{{100, 7}: 2, {100, 6}: -1}, l.pending.waiting)
	assert.Equal(t, int64(2), l.pending.attempts)
	assert.Equal(t, map[uint64]int64{5: 1234}, l.pending.waits)
	// Told to come back sooner after the ask: the ask follows, never
	// later; a visitor not asked for is not asked for by it.
	l.Reask(9, 3000)
	l.Reask(9, 4000)
	l.Reask(8, 1000)
	assert.Equal(t, map[uint64]ask{9: {bucket: 101, at: 3000}}, l.pending.asks)
}

// OlderKept reports a slot kept for an older bucket than the one asked
// about, not one kept for the same bucket or a newer one, nor an entry
// used up.
func TestOlderKept(t *testing.T) {
	l := newLocal()
	l.SetGrant(Grant{{Bucket: 3, N: 1}, {Bucket: 5, N: 0}, {Bucket: 7, N: 1}, {Bucket: AnyBucket, N: 1}})
	for _, tc := range []struct {
		bucket int64
		want   bool
	}{{2, false}, {3, false}, {4, true}, {6, true}, {AnyBucket, true}} {
		assert.Equal(t, tc.want, l.OlderKept(tc.bucket), "bucket %d", tc.bucket)
	}
	l.SetGrant(Grant{{Bucket: 3, N: 0}, {Bucket: 7, N: 1}})
	assert.False(t, l.OlderKept(6), "an entry used up")
}

// Queued counts the visitors this instance counted waiting that the view
// does not show: arrivals, less those let in, whatever the slot they
// check in at; a check-in moves a count within its bucket, and leaves
// nothing to walk.
func TestLocalQueued(t *testing.T) {
	l := newLocal()
	l.Count(10, 1, 1) // an arrival in second 10
	l.Count(12, 1, 1) // and in 12
	for slot := int64(2); slot < 1000; slot++ {
		l.Count(5, slot-1, -1) // a visitor of second 5 checking in again and again
		l.Count(5, slot, 1)
	}
	l.Count(3, 1, -1) // one of second 3 let in
	for _, tc := range []struct{ bucket, older int64 }{{3, 0}, {4, -1}, {11, 0}, {12, 0}, {13, 1}} {
		older, all := l.Queued(tc.bucket)
		assert.Equal(t, tc.older, older, "older than %d", tc.bucket)
		assert.Equal(t, int64(1), all)
	}
	assert.Len(t, l.queued, 3, "the buckets whose count changed: 3, 10 and 12")
}

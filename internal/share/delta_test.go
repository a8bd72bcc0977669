package share

import (
	"testing"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/stretchr/testify/assert"
)

// TestAsksOnTheWire checks that asks go out with a batch and come back.
func TestAsksOnTheWire(t *testing.T) {
	d := newDelta()
	d.ask(7, 100, 5000)
	d.ask(7, 99, 6000) // the same visitor again: the older bucket, the later return
	d.ask(8, 101, 7000)
	w := toBatch(batch{seq: 3, d: d})
	back := batchDelta(&w)
	assert.Equal(t, map[uint64]ask{7: {99, 6000}, 8: {101, 7000}}, back.asks)
	for i := range uint64(maxAsks) {
		assert.True(t, d.mayAsk(100+i) || len(d.asks) >= maxAsks)
		if d.mayAsk(100 + i) {
			d.ask(100+i, 100, 5000)
		}
	}
	assert.Len(t, d.asks, maxAsks, "an instance asks for maxAsks visitors at most")
	assert.False(t, d.mayAsk(1<<40), "no more")
	assert.True(t, d.mayAsk(7), "but again for one it asked for")
	other := newDelta()
	other.ask(1<<40, 100, 5000)
	merged := newDelta()
	merged.add(d)
	merged.add(other)
	assert.Len(t, merged.asks, maxAsks+1, "a round merges every instance's asks")
}

// A delta's reports of one visitor merge into one; its waits, the latest
// of each visitor.
func TestDeltaSession(t *testing.T) {
	d := newDelta()
	d.session(store.Session{ID: 1, Admitted: 10, Seen: 10})
	d.session(store.Session{ID: 1, Seen: 30})
	d.session(store.Session{ID: 2, Admitted: 20, Seen: 20, Revoked: true})
	d.session(store.Session{ID: 1, Seen: 25, End: 99})
	assert.Equal(t, map[uint64]store.Session{
		1: {ID: 1, Admitted: 10, Seen: 30, End: 99},
		2: {ID: 2, Admitted: 20, Seen: 20, Revoked: true},
	}, d.sessions)
	assert.Nil(t, d.waits, "no wait yet")
	d.wait(1, 5000)
	d.wait(1, 7000)
	assert.Equal(t, map[uint64]int64{1: 7000}, d.waits)
}

// prune forgets the waiting counts that no longer count, and those that
// sum to nothing, and the attempts; it keeps the sessions.
func TestDeltaPrune(t *testing.T) {
	const now, window = int64(1_000_000), int64(20_000) // slot 100
	d := newDelta()
	d.session(store.Session{ID: 1, Seen: 1})
	d.waiting[cellKey{7, 100}] = 2
	d.waiting[cellKey{7, 99}] = 0
	d.waiting[cellKey{8, 98}] = -1
	d.waiting[cellKey{8, 97}] = 3 // no longer counted
	d.attempts = 9
	d.prune(now, window)
	assert.Equal(t, map[cellKey]int64{{7, 100}: 2, {8, 98}: -1}, d.waiting)
	assert.Zero(t, d.attempts)
	assert.Len(t, d.sessions, 1)
}

// add merges every part of another delta: sessions by ID, waiting counts
// summed, attempts summed, waits and asks.
func TestDeltaAdd(t *testing.T) {
	a, b := newDelta(), newDelta()
	a.session(store.Session{ID: 1, Admitted: 10, Seen: 10})
	b.session(store.Session{ID: 1, Seen: 40})
	b.session(store.Session{ID: 2, Admitted: 20, Seen: 20})
	a.waiting[cellKey{100, 5}] = 2
	b.waiting[cellKey{100, 5}] = -1
	b.waiting[cellKey{101, 6}] = 4
	a.attempts, b.attempts = 3, 4
	b.wait(2, 9000)
	a.ask(7, 101, 5000)
	b.ask(7, 100, 4000)
	b.ask(8, 102, 6000)
	a.add(b)
	assert.Equal(t, map[uint64]store.Session{1: {ID: 1, Admitted: 10, Seen: 40}, 2: {ID: 2, Admitted: 20, Seen: 20}}, a.sessions)
	assert.Equal(t, map[cellKey]int64{{100, 5}: 1, {101, 6}: 4}, a.waiting)
	assert.Equal(t, int64(7), a.attempts)
	assert.Equal(t, map[uint64]int64{2: 9000}, a.waits)
	assert.Equal(t, map[uint64]ask{7: {100, 5000}, 8: {102, 6000}}, a.asks)
	a.add(newDelta())
	assert.Equal(t, int64(7), a.attempts, "an empty delta adds nothing")
}

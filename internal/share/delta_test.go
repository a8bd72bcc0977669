package share

import (
	"testing"

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

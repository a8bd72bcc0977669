package waitingroom

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Each queueing method is defined once: what it does with a slot, and
// whether it has a queue's order.
func TestQueueingMethods(t *testing.T) {
	for _, tc := range []struct {
		m                        QueueingMethod
		passes, rejects, ordered bool
		grants                   bool
	}{
		{FIFO, false, false, true, true},
		{Random, false, false, false, true},
		{Passthrough, true, false, false, false},
		{Reject, false, true, false, false},
	} {
		t.Run(string(tc.m), func(t *testing.T) {
			assert.True(t, tc.m.valid())
			s := tc.m.spec()
			assert.Equal(t, tc.passes, s.passes)
			assert.Equal(t, tc.rejects, s.rejects)
			assert.Equal(t, tc.ordered, s.ordered)
			assert.Equal(t, tc.grants, s.layout != nil, "grants slots")
		})
	}
	for _, m := range []QueueingMethod{"", "lifo", "FIFO", "fifo ", "lottery"} {
		assert.False(t, m.valid(), "%q", m)
		assert.Nil(t, m.spec(), "%q", m)
	}
}

// Passthrough's wait is known and none.
func TestPassthroughEstimate(t *testing.T) {
	e := Passthrough.spec().estimate(&view{}, &policy{}, 0, 0, true)
	assert.Equal(t, Estimate{Known: true}, e)
}

package share

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An entry of a Memory lives from one to two periods after it was last
// set, and the map is never walked to forget it.
func TestMemory(t *testing.T) {
	g := NewMemory[int]()
	g.Set(1, 10)
	g.Turn(0, 100) // turned at 0: 1 is in the previous generation
	g.Set(2, 20)
	v, ok := g.Get(1)
	require.True(t, ok)
	assert.Equal(t, 10, v)
	g.Turn(99, 100) // not a period yet
	_, ok = g.Get(1)
	assert.True(t, ok)
	g.Set(1, 11) // set again: current again
	g.Turn(100, 100)
	v, ok = g.Get(1)
	require.True(t, ok, "set within the period: kept")
	assert.Equal(t, 11, v)
	_, ok = g.Get(2)
	assert.True(t, ok, "a period after it was set: kept")
	g.Turn(200, 100)
	_, ok = g.Get(2)
	assert.False(t, ok, "two periods after it was set: gone")
	g.Del(1)
	_, ok = g.Get(1)
	assert.False(t, ok)
	assert.Zero(t, g.Len())
}

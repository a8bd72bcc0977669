package share

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFloorDiv(t *testing.T) {
	for _, tc := range []struct{ a, b, want int64 }{
		{0, 5, 0}, {6, 3, 2}, {7, 2, 3}, {-6, 3, -2}, {-7, 2, -4}, {7, -2, -4}, {-7, -2, 3}, {-1, 60_000, -1},
	} {
		assert.Equal(t, tc.want, FloorDiv(tc.a, tc.b), "%d / %d", tc.a, tc.b)
	}
}

// Slots and minutes are numbered from the epoch and begin at their first
// ms, before it as after it.
func TestSlotOfAndMinuteOf(t *testing.T) {
	for _, tc := range []struct{ ms, slot, minute int64 }{
		{0, 0, 0},
		{9_999, 0, 0},
		{10_000, 1, 0},
		{59_999, 5, 0},
		{60_000, 6, 1},
		{-1, -1, -1},
		{-10_000, -1, -1},
		{-10_001, -2, -1},
		{-60_001, -7, -2},
	} {
		assert.Equal(t, tc.slot, SlotOf(tc.ms), "SlotOf(%d)", tc.ms)
		assert.Equal(t, tc.minute, MinuteOf(tc.ms), "MinuteOf(%d)", tc.ms)
	}
}

// A count counts until window ms after its slot ends, and not at all
// from a slot further ahead than the clock lead allows.
func TestSlotCounted(t *testing.T) {
	const now, window = int64(1_000_000), int64(20_000) // slot 100
	for _, tc := range []struct {
		name string
		slot int64
		want bool
	}{
		{"the current slot", 100, true},
		{"window ms after its end, less one", 98, true},
		{"window ms after its end", 97, false},
		{"long ago", 1, false},
		{"ahead within the clock lead", SlotOf(now + MaxClockLead), true},
		{"ahead past the clock lead", SlotOf(now+MaxClockLead) + 1, false},
		{"hours ahead", SlotOf(now + 3_600_000), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, SlotCounted(tc.slot, now, window))
		})
	}
}

// Mix is the same for the same arguments, differs when either does, and
// is never 0, not even where its hash is.
func TestMix(t *testing.T) {
	assert.Equal(t, Mix(42, 7), Mix(42, 7))
	assert.NotEqual(t, Mix(42, 7), Mix(42, 8))
	assert.NotEqual(t, Mix(42, 7), Mix(43, 7))
	assert.Equal(t, uint64(1), Mix(0, 0), "the hash of 0 is 0")
	assert.Equal(t, uint64(1), Mix(0x9e3779b97f4a7c15, 1), "so is this one's")
	seen := map[uint64]bool{}
	for id := range uint64(100) {
		for x := range int64(100) {
			h := Mix(id, x)
			assert.NotZero(t, h)
			seen[h] = true
		}
	}
	assert.Len(t, seen, 100*100, "no two of 10,000 arguments mix the same")
}

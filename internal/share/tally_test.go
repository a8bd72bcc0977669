package share

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRoundSeconds(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{
		{-5, 0}, {0, 0}, {4, 0}, {5, 10}, {594, 590}, {599, 600},
		{600, 600}, {614, 600}, {615, 630}, {3599, 3600},
		{3600, 3600}, {3749, 3600}, {3750, 3900},
		{6 * 3600, 6 * 3600}, {6*3600 + 899, 6 * 3600}, {6*3600 + 900, 6*3600 + 1800},
		{1 << 40, 48 * 3600},
	} {
		assert.Equal(t, tc.want, roundSeconds(tc.in), "%d s", tc.in)
	}
	// Every duration up to 48 hours lands in one of at most 305 buckets,
	// within half a bucket.
	seen := map[int64]bool{}
	for s := int64(0); s <= 48*3600; s++ {
		r := roundSeconds(s)
		seen[r] = true
		step := map[bool]int64{true: 10, false: 1800}[s < 600]
		switch {
		case s >= 600 && s < 3600:
			step = 30
		case s >= 3600 && s < 6*3600:
			step = 300
		}
		assert.LessOrEqual(t, abs64(r-s), step/2, "%d s", s)
	}
	assert.LessOrEqual(t, len(seen), 305)
}

func abs64(x int64) int64 { return max(x, -x) }

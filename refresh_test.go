package waitingroom

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestJitteredRefresh holds the refresh intervals to whole seconds (what
// the Refresh header says), within the jitter, with RefreshInterval as
// their mean and, with jitter, more than one value even for short
// intervals.
func TestJitteredRefresh(t *testing.T) {
	for _, tc := range []struct {
		interval time.Duration
		jitter   float64
		lo, hi   int64 // bounds of the draws, in seconds
	}{
		{20 * time.Second, 0.1, 18, 22},
		{5 * time.Second, 0.1, 4, 6},
		{2 * time.Second, 0.5, 1, 3},
		{30 * time.Second, -1, 30, 30},
		{1500 * time.Millisecond, -1, 1, 2},
	} {
		t.Run(tc.interval.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			rm := newTestRoom(t, func(c *Config) {
				c.RefreshInterval, c.RefreshJitter = tc.interval, tc.jitter
				c.Random = rng.Float64
			}).Room
			const n = 20_000
			var sum int64
			seen := map[int64]bool{}
			for range n {
				ms := rm.jitteredRefresh()
				if !assert.Zero(t, ms%1000, "whole seconds") {
					return
				}
				s := ms / 1000
				assert.GreaterOrEqual(t, s, tc.lo)
				assert.LessOrEqual(t, s, tc.hi)
				seen[s] = true
				sum += ms
			}
			assert.InEpsilon(t, float64(tc.interval.Milliseconds()), float64(sum)/n, 0.01, "the mean is RefreshInterval")
			if tc.jitter > 0 {
				assert.Greater(t, len(seen), 1, "jitter survives the rounding")
			}
		})
	}
}

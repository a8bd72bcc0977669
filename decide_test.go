package waitingroom

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRefreshTooEarlyGetsNoChance(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1; c.RefreshJitter = -1 })
	require.True(t, admitted(tr.get(&visitor{}, "")))
	v := &visitor{}
	require.True(t, isWaiting(tr.get(v, "")))
	first := v.cookie

	// A slot comes free (next minute, and the first visitor's session is
	// over), but the visitor refreshes early: same page, no chance, and the
	// cookie is left alone.
	tr.clk.Add(5*time.Minute + 10*time.Second)
	tr.sync()
	before := tr.local.Grant().Total()
	require.Positive(t, before)
	v2 := *v
	// Replay the same queued cookie many times within its interval.
	tr.clk.Add(-5*time.Minute - 10*time.Second + 5*time.Second)
	for range 100 {
		w := tr.get(&v2, "")
		require.True(t, isWaiting(w))
		assert.Empty(t, w.Result().Cookies())
		assert.Equal(t, "15", w.Header().Get("Refresh"), "the remaining wait, not a fresh interval")
	}
	assert.Equal(t, before, tr.local.Grant().Total(), "early refreshes take no slot")
	assert.Equal(t, first, v2.cookie)

	tr.clk.Add(15 * time.Second)
	assert.True(t, admitted(tr.get(v, "")), "on time, the visitor gets the slot")
}

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

// A place's successor is the same for every copy of its cookie (its ID
// and latest check-in), another for another check-in, and never 0.
func TestSuccessor(t *testing.T) {
	assert.Equal(t, successor(42, 1000), successor(42, 1000))
	assert.NotEqual(t, successor(42, 1000), successor(42, 1001))
	assert.NotEqual(t, successor(42, 1000), successor(43, 1000))
	assert.NotEqual(t, uint64(42), successor(42, 1000), "a new ID")
	assert.NotZero(t, successor(0, 0))
}

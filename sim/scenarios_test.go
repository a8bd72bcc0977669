package sim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// TestPrequeueWithShuffle runs a scheduled event through the simulator:
// everyone who comes during the pre-queue waits, and at the start they are
// let in in an order that does not follow their arrival. The chi-square
// test pools four seeded runs (a sum of independent chi-square statistics
// is chi-square with the summed degrees of freedom), so that one unlucky
// draw neither fails the test nor hides a bias; small runs pool two.
func TestPrequeueWithShuffle(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	opens := start.Add(10 * time.Minute)
	var chi float64
	var dof int
	for seed := uint64(1); seed <= pick[uint64](4, 2); seed++ {
		res, err := Run(context.Background(), Options{
			Visitors: 1500, Arrivals: 9 * time.Minute, Browse: time.Minute,
			TotalActiveUsers: 1000, NewUsersPerMinute: 150,
			Start: start, Duration: 30 * time.Minute, Seed: seed,
			// The cohort: everyone waiting just before the start.
			CohortAt: 10*time.Minute - time.Second,
			Configure: func(c *waitingroom.Config) {
				c.Events = []waitingroom.Event{{
					Name: "drop", PrequeueStart: start, Start: opens, End: opens.Add(time.Hour), ShuffleAtStart: true,
				}}
			},
		})
		require.NoError(t, err)
		assert.Equal(t, 1500, res.CohortSize, "everyone waited for the start")
		assert.LessOrEqual(t, res.MaxAdmittedPerMinute, 150)
		assert.Equal(t, res.Visitors, res.Admitted+res.Abandoned, "nobody lost: everyone got in")
		assert.InDelta(t, 0, res.CohortTau, 0.05, "admission order against arrival order")
		chi += res.ChiSquare.Statistic
		dof += res.ChiSquare.DoF
		t.Logf("seed %d: cohort %d, tau %+.3f, chi-square %.1f (p %.2f), admitted %d", seed, res.CohortSize, res.CohortTau, res.ChiSquare.Statistic, res.ChiSquare.PValue, res.Admitted)
	}
	p := ChiSquareSurvival(chi, dof)
	t.Logf("pooled chi-square %.1f, %d degrees of freedom, p %.3f", chi, dof, p)
	assert.Greater(t, p, 0.01, "uniformity is not rejected")
}

// TestBypassedPathUnderSurge sends a surge to a bypassed path: every
// request goes through at once, and none is counted.
func TestBypassedPathUnderSurge(t *testing.T) {
	st := memstore.New()
	res, err := Run(context.Background(), Options{
		Visitors: 2000, Arrivals: time.Minute, Browse: time.Minute,
		TotalActiveUsers: 10, NewUsersPerMinute: 10,
		Duration: 5 * time.Minute, Seed: 7, Store: st, Path: "/static/app.js", Name: "bypass",
		Configure: func(c *waitingroom.Config) {
			c.Bypass = []waitingroom.Rule{waitingroom.PathPrefix("/static/")}
		},
	})
	require.NoError(t, err)
	assert.Zero(t, res.WaitingResponses, "nobody waits for a bypassed path")
	assert.Positive(t, res.Requests)
	require.NoError(t, st.Update(context.Background(), "bypass", func(s *store.State) error {
		assert.Empty(t, s.Sessions, "bypassed requests are not counted as active")
		assert.Empty(t, s.Admitted, "bypassed requests are not admissions")
		assert.Empty(t, s.Waiting)
		return nil
	}))
}

package faults

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
)

// fleetRooms is the size of the fleet scenarios: above fleetMin (32, in
// the root package), so that the instances sync through an aggregator.
const fleetRooms = 40

// fleetCut is how many of a fleet's instances a partition cuts off from
// the store.
const fleetCut = 4

// fleetTurns are the turns of the Redis fleets' scenarios (each with a
// server of its own, the cluster's too): fleetsAtOnce of them run side by
// side, beside the two SQL fleets, which run from the start (each runs its
// scenarios one after the other on one server, the longest chain of the
// suite: about 85 s), and beside the three-instance suites, which mostly
// wait on their timelines. A fleet of forty instances syncs against
// deadlines, and each used about a tenth of a core (the whole suite, 168
// CPU seconds in 344 s one fleet at a time): four at once leave the CPU to
// spare. With every fleet in the two turns, the SQL fleets' chains waited
// for them and the suite took 184 s; with four turns, in the order the
// shuffle gave, 144 s.
var fleetTurns = make(chan struct{}, fleetsAtOnce)

// fleetsAtOnce is how many of the Redis fleets' scenarios run at once.
const fleetsAtOnce = 2

// fleetTurn makes t, a test of Redis fleet scenarios, run beside the other
// suites and, once it has a turn, beside at most one other (scripts/test.sh
// lets them all start at once: go test -parallel).
func fleetTurn(t *testing.T) {
	t.Parallel()
	fleetTurns <- struct{}{}
	t.Cleanup(func() { <-fleetTurns })
}

// dumpLag is how long before a restart from an older dump the dump is
// taken: the writes of those seconds, acknowledged, are lost.
const dumpLag = 3 * time.Second

// TestRedisFleet runs the scenarios with a fleet of fleetRooms instances
// syncing through an aggregator, against a
// redis-server of each test's own: killed and restarted empty, emptied
// with FLUSHALL, paused with SIGSTOP, restarted from a dump taken dumpLag
// earlier (every key goes back), fleetCut instances cut off from it
// while the rest go on, and the aggregator stopped. The checks are the
// three-instance scenarios', and the fleet's own: every instance synced
// through the aggregator at the fault, and does again within
// fleetRecoverySyncs of its end. Measured (docs/performance.md, "Through
// store failures"): the first admission 1.6 to 27.7 intervals after the
// fault, the fleet through an aggregator again 1.6 to 22.9.
func TestRedisFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: six scenarios of about 20 s, each with 40 instances, against a redis-server")
	}
	t.Parallel()
	for _, tc := range []struct {
		name  string
		kind  faultKind
		lag   time.Duration
		fault func(srv *RedisServer, cut *Proxy, r **run) (inject, heal func(*testing.T))
	}{
		{
			name: "killed and restarted empty",
			kind: faultKind{outage: true, loss: true},
			fault: func(srv *RedisServer, _ *Proxy, _ **run) (func(*testing.T), func(*testing.T)) {
				return func(*testing.T) { srv.Kill() },
					func(t *testing.T) { require.NoError(t, srv.Start(), "restarting redis-server on its port") }
			},
		},
		{
			name: "FLUSHALL",
			kind: faultKind{loss: true},
			fault: func(srv *RedisServer, _ *Proxy, _ **run) (func(*testing.T), func(*testing.T)) {
				return func(t *testing.T) {
					require.NoError(t, srv.Client().FlushAll(context.Background()).Err())
				}, nil
			},
		},
		{
			name: "paused with SIGSTOP",
			kind: faultKind{outage: true},
			fault: func(srv *RedisServer, _ *Proxy, _ **run) (func(*testing.T), func(*testing.T)) {
				return func(t *testing.T) { require.NoError(t, srv.Pause()) },
					func(t *testing.T) { require.NoError(t, srv.Resume()) }
			},
		},
		{
			name: "restarted from an older dump",
			kind: faultKind{outage: true, rollback: true},
			lag:  dumpLag,
			fault: func(srv *RedisServer, _ *Proxy, _ **run) (func(*testing.T), func(*testing.T)) {
				return func(t *testing.T) {
						require.NoError(t, srv.Client().Save(context.Background()).Err())
						time.Sleep(dumpLag)
						srv.Kill()
					}, func(t *testing.T) {
						require.NoError(t, srv.Start(), "restarting redis-server from its dump")
					}
			},
		},
		{
			name: "a partition cuts some instances off",
			kind: faultKind{cut: fleetCut},
			fault: func(_ *RedisServer, p *Proxy, _ **run) (func(*testing.T), func(*testing.T)) {
				return func(*testing.T) { p.Cut() }, func(*testing.T) { p.Mend() }
			},
		},
		{
			name: "the aggregator stopped",
			fault: func(_ *RedisServer, _ *Proxy, r **run) (func(*testing.T), func(*testing.T)) {
				return func(t *testing.T) { stopAggregator(t, *r) }, nil
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fleetTurn(t) // each scenario has a server of its own
			srv := StartRedis(t)
			p := StartProxy(t, srv.Addr())
			prefix := randomName("faults:") + ":"
			var r *run
			inject, heal := tc.fault(srv, p, &r)
			lasts := time.Duration(0)
			if tc.lag > 0 {
				lasts = tc.lag + faultFor
			}
			r = runScenario(t, scenario{
				name: "redis fleet " + tc.name,
				kind: tc.kind,
				open: func(t *testing.T, i int) store.Store {
					if i < tc.kind.cut {
						return redisStore(t, p.Addr(), prefix)
					}
					return redisStore(t, srv.Addr(), prefix)
				},
				inject: inject,
				heal:   heal,
				lag:    tc.lag,
				lasts:  lasts,
				rooms:  fleetRooms,
				fleet:  true,
				setup:  func(rr *run) { r = rr },
			})
			r.check(t)
		})
	}
}

// stopAggregator stops the instance holding the fleet's lease at the
// fault (Close: no last sync) and sends its visitors to the others.
func stopAggregator(t *testing.T, r *run) {
	i := r.aggregator
	require.GreaterOrEqual(t, i, 0, "an instance holds the lease")
	r.down[i].Store(true)
	require.NoError(t, r.rooms[i].Close())
}

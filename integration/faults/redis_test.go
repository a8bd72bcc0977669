package faults

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
)

// redisStore returns a redisstore on addr under prefix, with a client of
// its own (go-redis defaults), closed when the test ends.
func redisStore(t *testing.T, addr, prefix string) store.Store {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return redisstore.New(c, redisstore.Options{KeyPrefix: prefix})
}

// TestRedis runs the scenarios against a redis-server of each test's own.
func TestRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: four scenarios of about 20 s against a redis-server")
	}
	t.Parallel() // beside the other suites and the fleets (fleetTurn)
	for _, tc := range []struct {
		name  string
		kind  faultKind
		proxy bool          // the rooms reach the server through a Proxy
		lasts time.Duration // default faultFor
		fault func(srv *RedisServer, p *Proxy) (inject, heal func(*testing.T))
	}{
		{
			name: "killed and restarted empty",
			kind: faultKind{outage: true, loss: true},
			fault: func(srv *RedisServer, _ *Proxy) (func(*testing.T), func(*testing.T)) {
				return func(*testing.T) { srv.Kill() },
					func(t *testing.T) { require.NoError(t, srv.Start(), "restarting redis-server on its port") }
			},
		},
		{
			name: "paused with SIGSTOP",
			kind: faultKind{outage: true},
			fault: func(srv *RedisServer, _ *Proxy) (func(*testing.T), func(*testing.T)) {
				return func(t *testing.T) { require.NoError(t, srv.Pause()) },
					func(t *testing.T) { require.NoError(t, srv.Resume()) }
			},
		},
		{
			name:  "slow, 200 ms per round trip",
			kind:  faultKind{slow: true},
			proxy: true,
			lasts: 8 * time.Second,
			fault: func(_ *RedisServer, p *Proxy) (func(*testing.T), func(*testing.T)) {
				return func(*testing.T) { p.SetLatency(200 * time.Millisecond) },
					func(*testing.T) { p.SetLatency(0) }
			},
		},
		{
			name: "FLUSHALL",
			kind: faultKind{loss: true},
			fault: func(srv *RedisServer, _ *Proxy) (func(*testing.T), func(*testing.T)) {
				return func(t *testing.T) {
					require.NoError(t, srv.Client().FlushAll(context.Background()).Err())
				}, nil
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := StartRedis(t)
			addr := srv.Addr()
			var p *Proxy
			if tc.proxy {
				p = StartProxy(t, addr)
				addr = p.Addr()
			}
			prefix := randomName("faults:") + ":"
			inject, heal := tc.fault(srv, p)
			r := runScenario(t, scenario{
				name:   "redis " + tc.name,
				kind:   tc.kind,
				open:   func(t *testing.T, _ int) store.Store { return redisStore(t, addr, prefix) },
				inject: inject,
				heal:   heal,
				lasts:  tc.lasts,
			})
			r.check(t)
		})
	}
}

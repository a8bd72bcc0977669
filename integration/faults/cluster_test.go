package faults

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
)

// syncRecovery bounds the time from the end of the failover (the replica
// serves the slots, the cluster is ok) to each instance's next successful
// sync: the room's retry backoff after failures (at most 2 s), a sync
// that was already waiting on the dead primary (its deadline), the
// client's reload of the cluster's layout, which the store asks for at
// every failure (200 ms at most between two reloads), an interval, and
// the first sync's own round trips, on two cores running forty instances
// and the cluster's six servers (4.06 s once in CI, against 4 s without
// them). In sync intervals: 25 (5 s).
const syncRecovery = 25 * syncInterval

// lagFor is how long the replica of the room's primary is kept from
// replicating before the primary is killed: the writes the primary
// acknowledges meanwhile are lost at the failover. From faultAt (:56 of
// the first minute) to :01.5 of the next, so that the admissions of the
// new minute's first second and a half are among them.
const lagFor = 5500 * time.Millisecond

// TestRedisClusterFailover runs the scenario on a Redis Cluster of the
// test's own (three primaries, a replica each, cluster-node-timeout 1 s):
// the primary that holds the room's keys is killed with SIGKILL, after its
// replica was kept from replicating for 5.5 s, so that the replica takes
// over with the room as it was then: the writes the primary acknowledged
// last are lost, as Redis's asynchronous replication allows at any
// failover, and with them the admissions at the start of a minute. The
// room must not let in again the visitors' worth of slots it forgot. The
// fault is over when the replica serves the slots and every live node
// reports the cluster ok.
func TestRedisClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: a scenario of about 20 s against a Redis Cluster")
	}
	t.Parallel() // beside the other suites and the fleets (fleetTurn)
	clusterFailover(t, nRooms, false)
}

// TestRedisClusterFleetFailover runs the failover of
// TestRedisClusterFailover with a fleet of fleetRooms instances syncing
// through an aggregator: the room's state, its view, its join records and
// every instance's mailbox are in the room's slot (hash tags), so the
// failover takes the latest writes of all of them, mailboxes included.
// The checks are the fleet scenarios': the limits, FIFO, every instance
// through the aggregator at the fault and again within fleetRecoverySyncs
// of its end, and the state's going back noticed.
func TestRedisClusterFleetFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: a scenario of about 20 s, with 40 instances, against a Redis Cluster")
	}
	fleetTurn(t)
	clusterFailover(t, fleetRooms, true)
}

// clusterFailover runs the failover scenario with rooms instances, through
// an aggregator when fleet is set.
func clusterFailover(t *testing.T, rooms int, fleet bool) {
	rc := servicetest.StartRedisCluster(t)
	admin := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs()})
	t.Cleanup(func() { _ = admin.Close() })
	prefix := randomName("faults:") + ":"
	var dead string
	var before, after uint64 // the state's version when the primary was killed, and after the failover
	name := "redis cluster failover"
	if fleet {
		name = "redis cluster fleet failover"
	}
	r := runScenario(t, scenario{
		name: name,
		kind: faultKind{outage: true, rollback: true},
		open: func(t *testing.T, _ int) store.Store {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs(), ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = c.Close() })
			// Connected, as a server is before it serves: the room's
			// first sync does not also learn the slots and dial the
			// nodes, 40 clients at once in a fleet.
			require.NoError(t, c.ForEachShard(context.Background(), func(ctx context.Context, s *redis.Client) error {
				return s.Ping(ctx).Err()
			}))
			return redisstore.New(c, redisstore.Options{KeyPrefix: prefix})
		},
		inject: func(t *testing.T) {
			ctx := context.Background()
			key := roomKey(t, admin, prefix)
			slot, err := admin.ClusterKeySlot(ctx, key).Result()
			require.NoError(t, err)
			if fleet {
				// Every key of the room is in its slot: the failover
				// takes the mailboxes' latest writes with the state's.
				for _, k := range roomKeys(t, admin, prefix) {
					s, err := admin.ClusterKeySlot(ctx, k).Result()
					require.NoError(t, err)
					require.Equal(t, slot, s, "key %s in the room's slot", k)
				}
			}
			dead, err = rc.PrimaryOf(int(slot))
			require.NoError(t, err)
			replica, err := rc.ReplicaOf(dead)
			require.NoError(t, err)
			rcl := redis.NewClient(&redis.Options{Addr: replica})
			defer rcl.Close()
			// The replica cannot follow its primary: it fails to
			// authenticate (the primary has no password) and tries again
			// every second, while the rooms write on.
			require.NoError(t, rcl.ConfigSet(ctx, "masterauth", "lagging").Err())
			require.NoError(t, rcl.ClientKillByFilter(ctx, "TYPE", "master").Err())
			time.Sleep(lagFor)
			before = stateVersion(t, admin, key)
			require.NoError(t, rc.Kill(dead))
		},
		lag:   lagFor,
		lasts: time.Nanosecond, // heal waits for the failover
		heal: func(t *testing.T) {
			promoted, err := rc.WaitFailover(dead)
			require.NoError(t, err)
			t.Logf("%s killed, %s took over", dead, promoted)
			after = stateVersion(t, admin, roomKey(t, admin, prefix))
		},
		rooms: rooms,
		fleet: fleet,
	})
	r.check(t)
	if !fleet {
		// An aggregator's first round after the failover takes the
		// state's Version past the newest grant its mailboxes name, which
		// the instances write from memory: only the classic sync's
		// Version shows the loss.
		assert.Less(t, after, before, "the failover took the room's latest writes with it")
	}
	for i, st := range r.stores {
		st.mu.Lock()
		var first time.Time
		for _, c := range st.calls {
			if c.err == nil && c.ended.After(r.healedAt) {
				first = c.ended
				break
			}
		}
		st.mu.Unlock()
		if assert.False(t, first.IsZero(), "instance %d syncs again", i+1) {
			d := first.Sub(r.healedAt)
			assert.LessOrEqual(t, d, syncRecovery, "instance %d: first sync after the failover", i+1)
			if !fleet {
				t.Logf("instance %d synced again %v after the failover (%.1f intervals)", i+1, d.Round(time.Millisecond), float64(d)/float64(syncInterval))
			}
		}
	}
	noticed := 0
	for _, l := range r.logs {
		noticed += l.Count("shared state went back")
	}
	assert.Positive(t, noticed, "instances noticed that the state went back")
	t.Logf("the state's version: %d when the primary was killed, %d after the failover; %d instances noticed it went back", before, after, noticed)
}

// roomKey returns the key of the room's state under prefix: the only key
// under it with no '#'.
func roomKey(t *testing.T, admin *redis.ClusterClient, prefix string) string {
	keys := slices.DeleteFunc(roomKeys(t, admin, prefix), func(k string) bool { return strings.Contains(k, "#") })
	require.Len(t, keys, 1)
	return keys[0]
}

// roomKeys returns every key under prefix, on every primary.
func roomKeys(t *testing.T, admin *redis.ClusterClient, prefix string) []string {
	var mu sync.Mutex
	var keys []string
	require.NoError(t, admin.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		ks, err := m.Keys(ctx, prefix+"*").Result()
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, ks...)
		return err
	}))
	return keys
}

// stateVersion reads the Version of the state at key (after the 8-byte
// write tag redisstore starts its values with).
func stateVersion(t *testing.T, admin *redis.ClusterClient, key string) uint64 {
	b, err := admin.Get(context.Background(), key).Bytes()
	require.NoError(t, err)
	require.Greater(t, len(b), 8)
	st, err := store.UnmarshalState(b[8:])
	require.NoError(t, err)
	return st.Version
}

package redisstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
	"github.com/go-waitingroom/waitingroom/store/storetest"
)

// cluster is a Redis Cluster of the test's own and a client of it.
type cluster struct {
	*servicetest.RedisCluster
	opts  *redis.ClusterOptions
	admin *redis.ClusterClient
}

func startCluster(t *testing.T) *cluster {
	rc := servicetest.StartRedisCluster(t)
	opts := &redis.ClusterOptions{Addrs: rc.Addrs(), ContextTimeoutEnabled: true}
	admin := redis.NewClusterClient(opts)
	t.Cleanup(func() { _ = admin.Close() })
	return &cluster{RedisCluster: rc, opts: opts, admin: admin}
}

func (c *cluster) client(tb testing.TB) *redis.ClusterClient {
	cl := redis.NewClusterClient(c.opts)
	tb.Cleanup(func() { _ = cl.Close() })
	return cl
}

// keys returns every key of the cluster, by the slot it is in.
func (c *cluster) keys(t *testing.T) map[string]int64 {
	ctx := context.Background()
	out := map[string]int64{}
	var (
		mu   sync.Mutex
		keys []string
	)
	require.NoError(t, c.admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		ks, err := m.Keys(ctx, "*").Result()
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, ks...)
		return err
	}))
	for _, k := range keys {
		slot, err := c.admin.ClusterKeySlot(ctx, k).Result()
		require.NoError(t, err)
		out[k] = slot
	}
	return out
}

// The conformance suite passes on a Redis Cluster, the history's
// included.
func TestClusterConformance(t *testing.T) {
	c := startCluster(t)
	storetest.Run(t, func(tb testing.TB) store.Store {
		return redisstore.New(c.client(tb), redisstore.Options{})
	})
}

// On a Cluster, every key of a room is in its state's slot: the history,
// and the mailboxes and view of a fleet, as package waitingroom names them.
// The state's key is the room's name after the prefix; rooms spread over
// the three primaries. A KeyPrefix with a hash tag of its own keeps the
// names as they are. A single node's keys have no tags.
func TestClusterKeysInOneSlot(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	touch := func(s *redisstore.Store, room string) {
		for _, name := range []string{room, room + "#fleet:a1b2+s4c3f1", room + "#fleet:c3d4+s4c3f1", room + "#fleet-view"} {
			require.NoError(t, s.Update(ctx, name, setEpoch(1)))
		}
		require.NoError(t, s.AppendHistory(ctx, room, []store.Record{{Minute: 1, Data: []byte("x")}}))
	}
	s := redisstore.New(c.client(t), redisstore.Options{})
	primaries := map[string]bool{}
	for i := range 30 {
		room := storetest.RoomName("slot") + string(rune('a'+i%26))
		touch(s, room)
		keys := c.keys(t)
		state := "waitingroom:" + room
		require.Contains(t, keys, state, "the state's key is the room's")
		require.Contains(t, keys, state+"#history{"+state+"}")
		require.Contains(t, keys, state+"#fleet-view{"+state+"}")
		n := 0
		for k, slot := range keys {
			if len(k) >= len(state) && k[:len(state)] == state && (len(k) == len(state) || k[len(state)] == '#') {
				assert.Equal(t, keys[state], slot, "%s is not in the slot of %s", k, state)
				n++
			}
		}
		assert.Equal(t, 5, n, "keys of room %s", room)
		p, err := c.PrimaryOf(int(keys[state]))
		require.NoError(t, err)
		primaries[p] = true
		require.NoError(t, c.admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return m.FlushAll(ctx).Err()
		}))
	}
	assert.Len(t, primaries, 3, "30 rooms spread over the three primaries")

	// A prefix with a hash tag: every key of every room in its slot.
	s = redisstore.New(c.client(t), redisstore.Options{KeyPrefix: "{wr}:"})
	touch(s, "one")
	touch(s, "two")
	keys := c.keys(t)
	assert.Len(t, keys, 10)
	for k, slot := range keys {
		assert.Equal(t, keys["{wr}:one"], slot, k)
		assert.NotContains(t, k[1:], "{", "no second tag")
	}
}

// On a single node the keys have no tags.
func TestSingleNodeKeysHaveNoTags(t *testing.T) {
	srv := setup(t)
	ctx := context.Background()
	s := srv.store(t, 0)
	room := storetest.RoomName("notag")
	require.NoError(t, s.Update(ctx, room+"#fleet-view", setEpoch(1)))
	require.NoError(t, s.AppendHistory(ctx, room, []store.Record{{Minute: 1, Data: []byte("x")}}))
	for _, k := range []string{srv.prefix + room + "#fleet-view", srv.prefix + room + "#history"} {
		n, err := srv.admin.Exists(ctx, k).Result()
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, k)
	}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/store"
)

// TestRedisCluster runs the proxy on a Redis Cluster of the test's own
// (three primaries, a replica each), named by redis+cluster:// URLs that
// give only some of its nodes, none of them the one serving the room: two
// proxies keep one limit between them, and all of the room's keys are in
// the slot of its state, on one primary. A redis:// URL naming one of the
// cluster's nodes fails at start-up with a hint to use redis+cluster://.
func TestRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: starts a Redis Cluster and proxies on it")
	}
	rc := servicetest.StartRedisCluster(t)
	addrs := rc.Addrs()
	admin := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = admin.Close() })
	ctx := context.Background()

	// A room whose state is not on the first node, which the first proxy
	// is given as the only one.
	prefix := randomName("wrcmd:") + ":"
	var room, primary string
	var slot int64
	for i := 0; primary == "" || primary == addrs[0]; i++ {
		room = fmt.Sprintf("cluster-%d", i)
		var err error
		slot, err = admin.ClusterKeySlot(ctx, prefix+room).Result()
		require.NoError(t, err)
		primary, err = rc.PrimaryOf(int(slot))
		require.NoError(t, err)
	}
	urlA := "redis+cluster://" + addrs[0]
	urlB := fmt.Sprintf("redis+cluster://%s?addr=%s", addrs[3], addrs[4]) // two replicas

	t.Run("two proxies share the limits", func(t *testing.T) {
		common := []string{"-demo", "-key", hexKey, "-name", room, "-store-prefix", prefix,
			"-total-active-users", "1", "-new-users-per-minute", "1", "-refresh-interval", "1s", "-sync-interval", "100ms"}
		baseA := start(t, append(common, "-store", urlA)...)
		baseB := start(t, append(common, "-store", urlB)...)
		both := []string{baseA + "/", baseB + "/"}

		oneBetweenTwoProxies(t, both)
	})

	t.Run("the room's keys share a slot", func(t *testing.T) {
		spec, err := parseStore("-store", urlA)
		require.NoError(t, err)
		st, closeStore, err := openStore(ctx, spec, storeOptions{prefix: prefix})
		require.NoError(t, err)
		defer closeStore()
		hs, ok := st.(store.HistoryStore)
		require.True(t, ok, "the Redis store keeps a history")
		minute := time.Now().Unix() / 60
		require.NoError(t, hs.AppendHistory(ctx, room, []store.Record{{Minute: minute, Data: []byte("minute")}}))
		recs, err := hs.ReadHistory(ctx, room, minute-1, minute+1)
		require.NoError(t, err)
		// The proxies of the subtest above kept the room's history too:
		// a record of theirs may fall in the minutes read (the previous
		// one's, in a CI run).
		recs = slices.DeleteFunc(recs, func(r store.Record) bool { return string(r.Data) != "minute" })
		assert.Len(t, recs, 1, "the history reads back")

		state := prefix + room
		want := []string{state, state + "#history{" + state + "}"}
		where := map[string]string{} // key → primary
		var mu sync.Mutex
		require.NoError(t, admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			keys, err := m.Keys(ctx, prefix+"*").Result()
			mu.Lock()
			defer mu.Unlock()
			for _, k := range keys {
				where[k] = m.Options().Addr
			}
			return err
		}))
		var keys []string
		for k, p := range where {
			keys = append(keys, k)
			assert.Equal(t, primary, p, "%s is on the room's primary", k)
			s, err := admin.ClusterKeySlot(ctx, k).Result()
			require.NoError(t, err)
			assert.Equal(t, slot, s, "%s is in the room's slot", k)
		}
		assert.ElementsMatch(t, want, keys, "the room's keys")
	})

	t.Run("redis:// at a node", func(t *testing.T) {
		var stderr bytes.Buffer
		code := run(ctx, []string{"-demo", "-key", hexKey, "-listen", "127.0.0.1:0", "-name", room, "-store-prefix", prefix,
			"-store", "redis://" + addrs[0] + "/0"}, io.Discard, &stderr, nil)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr.String(), "MOVED")
		assert.Contains(t, stderr.String(), "the server is a node of a Redis Cluster")
		assert.Contains(t, stderr.String(), "redis+cluster://")
	})
}

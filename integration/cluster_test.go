package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/sim"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
)

// clusterRooms returns n room names whose state keys under prefix are
// spread evenly over the cluster's three primaries (by slot range).
func clusterRooms(t *testing.T, admin *redis.ClusterClient, prefix string, n int) []string {
	var rooms []string
	per := map[int]int{}
	for i := 0; len(rooms) < n; i++ {
		name := fmt.Sprintf("surge-%d", i)
		slot, err := admin.ClusterKeySlot(context.Background(), prefix+name).Result()
		require.NoError(t, err)
		shard := int(slot) * 3 / 16384
		if per[shard] < (n+2)/3 {
			per[shard]++
			rooms = append(rooms, name)
		}
	}
	return rooms
}

// TestClusterSurge runs nine rooms at once on a Redis Cluster of the
// test's own (three primaries, a replica each), each room with four
// instances under one virtual clock (the simulator), through a surge: each
// room's limits hold exactly, admissions reach the limits while demand
// exceeds them, FIFO holds, and the rooms' keys are on all three primaries.
func TestClusterSurge(t *testing.T) {
	if testing.Short() {
		t.Skip("nine surges on a Redis Cluster take a while")
	}
	rc := servicetest.StartRedisCluster(t)
	admin := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs()})
	t.Cleanup(func() { _ = admin.Close() })
	const prefix = "wrcluster:"
	rooms := clusterRooms(t, admin, prefix, 9)

	results := make([]*sim.Result, len(rooms))
	errs := make([]error, len(rooms))
	var wg sync.WaitGroup
	start := time.Now()
	for i, name := range rooms {
		client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs(), ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = client.Close() })
		st := redisstore.New(client, redisstore.Options{KeyPrefix: prefix})
		wg.Go(func() {
			results[i], errs[i] = sim.Run(context.Background(), sim.Options{
				Name:     name,
				Visitors: 300, Arrivals: 2 * time.Minute, Browse: time.Minute,
				Duration: 7 * time.Minute, Abandon: 0.01, Seed: uint64(i + 1),
				Instances: 4, Store: st,
				TotalActiveUsers: 1000, NewUsersPerMinute: 40, SessionDuration: time.Minute,
			})
		})
	}
	wg.Wait()
	t.Logf("9 rooms × 4 instances, 7 virtual minutes each, in %v", time.Since(start).Round(time.Millisecond))

	for i, name := range rooms {
		require.NoError(t, errs[i], name)
		res := results[i]
		assert.LessOrEqual(t, res.MaxAdmittedPerMinute, 40, name)
		assert.LessOrEqual(t, res.PeakActive, 1000, name)
		require.Positive(t, res.SaturatedMinutes, name)
		assert.GreaterOrEqual(t, res.Utilization, 0.95, "%s: utilization while demand exceeds the limits", name)
		n := inversions(res.VisitorRecords, 40*time.Second)
		assert.Zero(t, n, "%s: FIFO order across instances", name)
		t.Logf("%s: admitted %d, at most %d a minute, utilization %.3f over %d saturated minutes, inversions %d",
			name, res.Admitted, res.MaxAdmittedPerMinute, res.Utilization, res.SaturatedMinutes, n)
	}

	// Where the rooms are: each primary holds some rooms' states.
	ctx := context.Background()
	primaries := map[string]int{}
	var mu sync.Mutex
	require.NoError(t, admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, prefix+"*").Result()
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			if slices.Contains(rooms, strings.TrimPrefix(k, prefix)) {
				primaries[m.Options().Addr]++
			}
		}
		return err
	}))
	assert.Len(t, primaries, 3, "the rooms' states on each primary: %v", primaries)
	for p, n := range primaries {
		assert.Equal(t, 3, n, "rooms on %s", p)
	}
}

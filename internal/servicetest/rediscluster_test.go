package servicetest

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cluster forms with three primaries, one a slot range, and a killed
// primary's replica takes its slots over.
func TestRedisCluster(t *testing.T) {
	start := time.Now()
	c := StartRedisCluster(t)
	t.Logf("formed in %v", time.Since(start))
	addrs := c.Addrs()
	require.Len(t, addrs, 6)
	primaries, err := c.Primaries()
	require.NoError(t, err)
	assert.Equal(t, addrs[:3], primaries)
	p, err := c.PrimaryOf(6000)
	require.NoError(t, err)
	assert.Equal(t, addrs[1], p)

	r, err := c.ReplicaOf(addrs[1])
	require.NoError(t, err)
	assert.Equal(t, addrs[4], r)

	require.NoError(t, c.Kill(addrs[1]))
	start = time.Now()
	promoted, err := c.WaitFailover(addrs[1])
	t.Logf("failed over in %v", time.Since(start))
	require.NoError(t, err)
	assert.Equal(t, addrs[4], promoted, "the replica of the killed primary")
	p, err = c.PrimaryOf(6000)
	require.NoError(t, err)
	assert.Equal(t, addrs[4], p)
	key := ""
	for i := 0; key == ""; i++ {
		k := "k" + strconv.Itoa(i)
		slot, err := redisDo(addrs[4], "CLUSTER", "KEYSLOT", k)
		require.NoError(t, err)
		if s := slot.(int64); 5461 <= s && s <= 10922 {
			key = k
		}
	}
	_, err = redisDo(addrs[4], "SET", key, "1")
	assert.NoError(t, err, "the promoted replica takes writes")
}

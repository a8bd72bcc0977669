package share

import (
	"testing"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/stretchr/testify/require"
)

// The queueing methods' slot algorithms, as the room lays its grants out
// (its slots.go): the algorithm's tests need one to carve.

// fifoLayout reserves for the oldest buckets' due visitors first, the
// rest for anyone.
func fifoLayout(n int64, buckets []Bucket) Grant {
	g := Grant{}
	for _, b := range buckets {
		if r := min(n, b.Due); r > 0 {
			g = append(g, GrantEntry{Bucket: b.Arrival, N: r})
			n -= r
		}
	}
	if n > 0 {
		g = append(g, GrantEntry{Bucket: AnyBucket, N: n})
	}
	return g
}

// randomLayout is one pool.
func randomLayout(n int64, _ []Bucket) Grant { return Grant{{Bucket: AnyBucket, N: n}} }

// The rules of the two methods that grant slots, before limits.
var (
	fifo   = Rules{Layout: fifoLayout, Ordered: true}
	random = Rules{Layout: randomLayout}
)

// limits returns m with the limits total and perMinute, and the times of
// sessions that count five minutes after their latest request, with a
// margin of two seconds, and whose waiting cookies are held five minutes.
// The session's own length is left 0, without renewal (what lostToSilence
// records end with): the algorithm counts by the times.
func limits(m Rules, total, perMinute int64) Rules {
	m.TotalActiveUsers, m.NewUsersPerMinute = total, perMinute
	m.Times = SessionTimes{Window: 5 * 60_000, Margin: 2000, Hold: 5 * 60_000}
	return m
}

// clone returns a deep copy of st.
func clone(t *testing.T, st *store.State) *store.State {
	t.Helper()
	c, err := store.UnmarshalState(store.MarshalState(st))
	require.NoError(t, err)
	return c
}

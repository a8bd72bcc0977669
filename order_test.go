package waitingroom_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// FIFO to the second: visitors who arrive seconds apart and obey the page
// get in in the order they arrived, on one instance or several (a slot
// released for an older visitor is kept for them, and newer ones wait
// until they come back: share.Local.Take). Each is shown an exact place
// in line that never goes up.
func TestArrivalOrderToTheSecond(t *testing.T) {
	for _, tc := range []struct {
		name      string
		instances int
		apart     time.Duration
		visitors  int
	}{
		{"one instance, 5 s apart", 1, 5 * time.Second, 10},
		{"one instance, 1 s apart", 1, time.Second, 20},
		{"four instances, 5 s apart", 4, 5 * time.Second, 10},
		{"four instances, 2 s apart", 4, 2 * time.Second, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var inverted, pairs int
			defer func() {
				t.Logf("pairs let in out of arrival order: %d of %d", inverted, pairs)
				assert.Zero(t, inverted, "everyone let in in arrival order")
			}()
			for seed := range uint64(3) {
				res := runArrivalOrder(t, tc.instances, tc.apart, tc.visitors, seed)
				assert.Len(t, res.order, tc.visitors, "seed %d: everyone got in", seed)
				inverted += res.inversions
				pairs += res.pairs
			}
		})
	}
}

type arrivalOrder struct {
	order             []int // the visitors, as let in
	inversions, pairs int
}

// runArrivalOrder lets visitors arrive apart, one after the other, at a
// room that lets in 3 a minute on instances instances (whichever one each
// request reaches, at random), three visitors already in; each
// comes back when the page says, and leaves at once when let in. It checks
// the places they are shown: never up, 1 + the earlier arrivals still
// waiting as of the latest sync, and the queue's length.
func runArrivalOrder(t *testing.T, instances int, apart time.Duration, n int, seed uint64) arrivalOrder {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	clk, st := newClock(), memstore.New()
	rooms := make([]*testRoom, instances)
	for i := range rooms {
		rooms[i] = newTestRoomOn(t, clk, st, func(c *waitingroom.Config) {
			c.TotalActiveUsers, c.NewUsersPerMinute = 100, 3
			c.Random = rng.Float64
		})
	}
	syncAll := func() {
		for _, rm := range rooms {
			rm.sync()
		}
	}
	for range 3 { // the three already in
		require.True(t, admitted(rooms[0].get(&visitor{}, "")))
	}
	syncAll()

	type guest struct {
		visitor
		arrive, next time.Time
		in           bool
		at           time.Time // let in
		shown        int       // the latest place shown
	}
	start := clk.Now()
	guests := make([]*guest, n)
	for i := range guests {
		guests[i] = &guest{arrive: start.Add(time.Duration(i) * apart)}
		guests[i].next = guests[i].arrive
	}
	var res arrivalOrder
	syncedAt := clk.Now()
	for step := 0; len(res.order) < n && step < 4*60*20; step++ {
		now := clk.Now()
		for i, g := range guests {
			if g.in || now.Before(g.next) {
				continue
			}
			w := rooms[rng.IntN(instances)].get(&g.visitor, "application/json")
			if admitted(w) {
				g.in, g.at = true, now
				res.order = append(res.order, i)
				continue
			}
			var page struct {
				Room struct {
					Position int `json:"positionInLine"`
					Length   int `json:"queueLength"`
					Refresh  int `json:"refreshIntervalSeconds"`
				} `json:"waitingRoom"`
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &page), w.Body.String())
			p := page.Room
			require.Positive(t, p.Refresh)
			g.next = now.Add(time.Duration(p.Refresh) * time.Second)
			if p.Position == 0 {
				continue // the first answer, before any sync counts the visitor: behind everyone
			}
			if g.shown > 0 {
				assert.LessOrEqual(t, p.Position, g.shown, "seed %d: visitor %d's place went up", seed, i)
			}
			g.shown = p.Position
			ahead, synced := 0, 0 // earlier arrivals still waiting, now and at the latest sync
			for _, o := range guests[:i] {
				if !o.in {
					ahead++
				}
				if !o.in || !o.at.Before(syncedAt) {
					synced++
				}
			}
			assert.GreaterOrEqual(t, p.Position, ahead+1, "seed %d: visitor %d shown too near the front", seed, i)
			assert.LessOrEqual(t, p.Position, synced+1+instances, "seed %d: visitor %d shown too far back", seed, i)
			assert.GreaterOrEqual(t, p.Length, p.Position, "seed %d: the queue is as long as the place at least", seed)
		}
		clk.Add(250 * time.Millisecond)
		if step%4 == 3 {
			syncAll()
			syncedAt = clk.Now()
		}
	}
	for i, x := range res.order {
		for _, y := range res.order[i+1:] {
			res.pairs++
			if y < x {
				res.inversions++
			}
		}
	}
	t.Logf("%d instances, %v apart, seed %d: order %v, done in %v", instances, apart, seed, res.order, clk.Now().Sub(start))
	return res
}

// A slot kept for an older visitor holds a newer one back for as long as
// an obeying visitor takes to come back (the longest refresh and its
// lateness: 22 + 10 s here), no longer: the older one's count may be a
// copy of a cookie that never comes. The newer one comes back when their
// page says.
func TestHeldBackForAnOlderVisitorAtMost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		older bool // the grant keeps a slot for an older bucket
	}{
		{"none older", false},
		{"an older visitor's slot kept", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			rm := newTestRoomOn(t, clk, memstore.New(), func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 100, 100
			})
			rm.local.SetGrant(grant{})
			var v visitor
			w := rm.get(&v, "")
			require.False(t, admitted(w))
			b := secondOf(rm.now())
			g := grant{{Bucket: b, N: 1}}
			if tc.older {
				g = grant{{Bucket: b - 10, N: 1}, {Bucket: b, N: 1}}
			}
			rm.local.SetGrant(g)
			var first time.Time // the first chance held back
			for {
				var secs int
				_, err := fmt.Sscan(w.Header().Get("Refresh"), &secs)
				require.NoError(t, err)
				clk.Add(time.Duration(secs) * time.Second)
				if w = rm.get(&v, ""); admitted(w) {
					break
				}
				require.True(t, tc.older, "nothing older: let in at once")
				if first.IsZero() {
					first = clk.Now()
				}
				require.Less(t, clk.Now().Sub(first), 32*time.Second, "held back a refresh and its lateness at most")
			}
			if tc.older {
				assert.GreaterOrEqual(t, clk.Now().Sub(first), 32*time.Second, "held back a refresh and its lateness")
				assert.Equal(t, grant{{Bucket: b - 10, N: 1}, {Bucket: b}}, rm.local.Grant(), "the older visitor's slot kept")
			}
		})
	}
}

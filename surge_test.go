package waitingroom

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// surge drives rooms (instances sharing one store) with virtual visitors on
// a virtual clock, one-second steps. Visitors arrive uniformly over
// arrivals, keep their cookie, come back when the waiting page says, and
// once admitted browse (a request every 30 s) for browse, then leave. A
// share of them abandon the queue.
type surge struct {
	visitors int
	arrivals time.Duration
	browse   time.Duration
	duration time.Duration
	abandon  float64 // probability a waiting visitor gives up at each refresh
	seed     uint64
}

type simVisitor struct {
	arrive, next time.Time
	first        time.Time // first request
	admittedAt   time.Time
	lastRequest  time.Time
	bucket       int64
	gone         bool
	req          *http.Request
}

type surgeResult struct {
	admittedPerMinute map[int64]int // by minute of first admission
	maxActive         int           // visitors admitted with a request within SessionDuration
	backlog           map[int64]int // visitors still waiting at the end of each minute
	visitors          []*simVisitor
	waitingResponses  int
	inversions        int // older-bucket visitor admitted > 2 refresh intervals after a newer one
}

func (s surge) run(t testing.TB, clk *clock, rooms []*Room) surgeResult {
	rng := mrand.New(mrand.NewPCG(s.seed, 1))
	for _, rm := range rooms {
		rm.cfg.Random = rng.Float64 // the simulation runs on one goroutine
	}
	start := clk.Now()
	cfg := rooms[0].cfg
	vs := make([]*simVisitor, s.visitors)
	for i := range vs {
		at := start.Add(time.Duration(float64(s.arrivals) * float64(i) / float64(s.visitors)))
		vs[i] = &simVisitor{arrive: at, next: at, req: &http.Request{
			Method: http.MethodGet, URL: &url.URL{Path: "/"}, Header: http.Header{},
		}}
	}
	res := surgeResult{admittedPerMinute: map[int64]int{}, backlog: map[int64]int{}, visitors: vs}
	ctx := context.Background()
	for now := start; now.Before(start.Add(s.duration)); now = now.Add(time.Second) {
		clk.mu.Lock()
		clk.t = now
		clk.mu.Unlock()
		for _, i := range rng.Perm(len(rooms)) {
			require.NoError(t, rooms[i].Sync(ctx))
		}
		active := 0
		for _, v := range vs {
			if v.gone || now.Before(v.next) {
				if !v.admittedAt.IsZero() && now.Sub(v.lastRequest) < cfg.SessionDuration {
					active++
				}
				continue
			}
			rm := rooms[rng.IntN(len(rooms))]
			d, err := rm.Check(v.req)
			require.NoError(t, err)
			if d.cookie != "" {
				v.req.Header.Set("Cookie", rm.cookieName+"="+d.cookie)
			}
			if v.lastRequest.IsZero() {
				v.first = now
			}
			v.lastRequest = now
			switch d.Outcome {
			case Admitted:
				if v.admittedAt.IsZero() {
					v.admittedAt = now
					v.bucket = d.Ticket.Bucket.Unix() / 60
					res.admittedPerMinute[now.Unix()/60]++
				}
				if now.Sub(v.admittedAt) >= s.browse {
					v.gone = true
				}
				v.next = now.Add(30 * time.Second)
			case Waiting:
				res.waitingResponses++
				if rng.Float64() < s.abandon {
					v.gone = true
					continue
				}
				v.next = now.Add(d.RefreshAfter).Add(time.Second - 1).Truncate(time.Second)
			default:
				t.Fatalf("unexpected outcome %v", d.Outcome)
			}
			if !v.admittedAt.IsZero() && now.Sub(v.lastRequest) < cfg.SessionDuration {
				active++
			}
		}
		res.maxActive = max(res.maxActive, active)
		if now.Unix()%60 == 59 {
			for _, v := range vs {
				if !v.gone && v.admittedAt.IsZero() && !now.Before(v.arrive) {
					res.backlog[now.Unix()/60]++
				}
			}
		}
	}
	// FIFO inversions, by the minute of each visitor's first request.
	slack := 2 * cfg.RefreshInterval
	latest := map[int64]time.Time{}
	earliest := map[int64]time.Time{}
	for _, v := range vs {
		if v.admittedAt.IsZero() {
			continue
		}
		b := v.first.Unix() / 60
		if l, ok := latest[b]; !ok || v.admittedAt.After(l) {
			latest[b] = v.admittedAt
		}
		if e, ok := earliest[b]; !ok || v.admittedAt.Before(e) {
			earliest[b] = v.admittedAt
		}
	}
	for b1, l := range latest {
		for b2, e := range earliest {
			if b1 < b2 && l.Sub(e) > slack {
				res.inversions++
			}
		}
	}
	return res
}

func instances(t testing.TB, clk *clock, st store.Store, n int, mutate func(*Config)) []*Room {
	rooms := make([]*Room, n)
	for i := range rooms {
		rooms[i] = newTestRoomOn(t, clk, st, mutate).Room
	}
	// Each instance syncs once more now that all have joined: a new
	// instance gets its share at the others' next sync.
	for _, rm := range rooms {
		require.NoError(t, rm.Sync(context.Background()))
	}
	return rooms
}

func TestSurgeLimitsExact(t *testing.T) {
	for _, tc := range []struct {
		name      string
		instances int
		method    QueueingMethod
		total     int
		perMinute int
	}{
		{"fifo, one instance, per-minute bound", 1, FIFO, 1000, 100},
		{"fifo, one instance, total bound", 1, FIFO, 120, 100},
		{"random, one instance", 1, Random, 150, 100},
		{"fifo, four instances", 4, FIFO, 150, 100},
		{"random, four instances", 4, Random, 1000, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			rooms := instances(t, clk, memstore.New(), tc.instances, func(c *Config) {
				c.QueueingMethod = tc.method
				c.TotalActiveUsers, c.NewUsersPerMinute = tc.total, tc.perMinute
				c.SessionDuration = time.Minute
				c.SyncInterval = -1
			})
			res := surge{
				visitors: 2000, arrivals: 5 * time.Minute, browse: 90 * time.Second,
				duration: 25 * time.Minute, abandon: 0.01, seed: 7,
			}.run(t, clk, rooms)

			total := 0
			for m, n := range res.admittedPerMinute {
				total += n
				require.LessOrEqual(t, n, tc.perMinute, "minute %d admitted %d", m, n)
			}
			assert.LessOrEqual(t, res.maxActive, tc.total, "active visitors above TotalActiveUsers")
			assert.Positive(t, res.waitingResponses, "the surge must queue")
			// Utilization: every minute that ends with more visitors
			// still waiting than a minute's admissions, and so had demand
			// above the limits all along, admits ≥ 95 % of what
			// NewUsersPerMinute allows.
			if tc.total >= 1000 {
				for m, n := range res.backlog {
					if n >= tc.perMinute {
						assert.GreaterOrEqual(t, res.admittedPerMinute[m], tc.perMinute*95/100, "minute %d under-used", m)
					}
				}
			}
			if tc.method == FIFO {
				assert.Zero(t, res.inversions, "FIFO order across buckets")
			}
			t.Logf("admitted %d of %d; peak active %d (limit %d); inversions %d", total, len(res.visitors), res.maxActive, tc.total, res.inversions)
		})
	}
}

func TestNoQueueingWhileThereIsRoom(t *testing.T) {
	// 90 new visitors a minute against 100 a minute allowed: nobody waits.
	clk := newClock()
	rooms := instances(t, clk, memstore.New(), 2, func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1000, 100
	})
	res := surge{visitors: 900, arrivals: 10 * time.Minute, browse: time.Minute, duration: 12 * time.Minute, seed: 3}.run(t, clk, rooms)
	assert.Zero(t, res.waitingResponses)
	n := 0
	for _, c := range res.admittedPerMinute {
		n += c
	}
	assert.Equal(t, 900, n)
}

func TestManyInstancesShareOneQueue(t *testing.T) {
	// The same visitors through 1 and through 4 instances: the limits are
	// global, so the throughput is the same.
	per := map[int]int{}
	for _, n := range []int{1, 4} {
		clk := newClock()
		rooms := instances(t, clk, memstore.New(), n, func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 500, 50 })
		res := surge{visitors: 600, arrivals: time.Minute, browse: time.Minute, duration: 6 * time.Minute, seed: 11}.run(t, clk, rooms)
		for _, c := range res.admittedPerMinute {
			per[n] += c
		}
		require.Equal(t, n, rooms[0].Stats().Instances, fmt.Sprint(n))
	}
	assert.InDelta(t, per[1], per[4], float64(per[1])*0.05)
	assert.LessOrEqual(t, per[4], 6*50+50)
}

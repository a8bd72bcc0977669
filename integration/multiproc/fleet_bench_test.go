package multiproc

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
)

// fleetRecorder wraps one instance's store client and records, for every
// Update that began after the warm-up, how long it took, whether it
// failed, how many times fn ran (each run is one read and one write of
// the whole state: two store operations on Redis) and the size of the
// state it wrote.
type fleetRecorder struct {
	store.Store
	f *fleetFigures
}

// fleetFigures are the figures of one fleet run, shared by its instances.
type fleetFigures struct {
	measuring atomic.Bool
	mu        sync.Mutex
	durations []time.Duration
	errors    int
	attempts  int
	bytes     int64 // state bytes read and written, every attempt
	size      int   // the latest state size
}

func (r *fleetRecorder) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	if !r.f.measuring.Load() {
		return r.Store.Update(ctx, room, fn)
	}
	var attempts, size int
	var moved int64
	start := time.Now()
	err := r.Store.Update(ctx, room, func(st *store.State) error {
		attempts++
		in := len(store.MarshalState(st))
		if err := fn(st); err != nil {
			return err
		}
		size = len(store.MarshalState(st))
		moved += int64(in + size)
		return nil
	})
	d := time.Since(start)
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.f.durations = append(r.f.durations, d)
	r.f.attempts += attempts
	r.f.bytes += moved
	if err != nil {
		r.f.errors++
	} else if size > 0 {
		r.f.size = size
	}
	return err
}

// fleetSizes are the fleet sizes BenchmarkFleet runs:
// WAITINGROOM_FLEET="10,100,400" or its default.
func fleetSizes() []int {
	spec := os.Getenv("WAITINGROOM_FLEET")
	if spec == "" {
		return []int{10, 100}
	}
	var out []int
	for _, f := range strings.Split(spec, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// fleetBackend opens the clients of one shared store: every call of the
// function it returns is a new client of the same room.
type fleetBackend struct {
	name string
	open func(tb testing.TB) func() store.Store
}

var fleetBackends = []fleetBackend{
	{"memory", func(tb testing.TB) func() store.Store {
		s := memstore.New()
		return func() store.Store { return s }
	}},
	{"redis", func(tb testing.TB) func() store.Store {
		opts, err := redis.ParseURL(redisURL())
		require.NoError(tb, err)
		admin := redis.NewClient(opts)
		tb.Cleanup(func() { _ = admin.Close() })
		if err := admin.Ping(context.Background()).Err(); err != nil {
			servicetest.Unavailable(tb, servicetest.Redis, err)
		}
		prefix := randomName("wrfleet:") + ":"
		tb.Cleanup(func() {
			keys, _ := admin.Keys(context.Background(), prefix+"*").Result()
			if len(keys) > 0 {
				_ = admin.Del(context.Background(), keys...).Err()
			}
		})
		return func() store.Store {
			o := *opts
			o.PoolSize, o.ContextTimeoutEnabled = 2, true
			c := redis.NewClient(&o)
			tb.Cleanup(func() { _ = c.Close() })
			return closing(tb, redisstore.New(c, redisstore.Options{KeyPrefix: prefix}))
		}
	}},
	{"postgres", func(tb testing.TB) func() store.Store {
		return fleetSQL(tb, servicetest.PostgreSQL, "pgx", postgresURL(), sqlstore.Postgres)
	}},
	{"mariadb", func(tb testing.TB) func() store.Store {
		return fleetSQL(tb, servicetest.MariaDB, "mysql", servicetest.MariaDB.URL(), sqlstore.MySQL)
	}},
}

// fleetSQL opens one table, dropped at cleanup, and a pool of 40
// connections the instances' stores share (a database serves a limited
// number of connections).
func fleetSQL(tb testing.TB, service servicetest.Service, driver, dsn string, d sqlstore.Dialect) func() store.Store {
	db, err := sql.Open(driver, dsn)
	require.NoError(tb, err)
	db.SetMaxOpenConns(40)
	tb.Cleanup(func() { _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		servicetest.Unavailable(tb, service, err)
	}
	table := randomName("wrfleet_")
	s, err := sqlstore.New(db, d, sqlstore.Options{Table: table})
	require.NoError(tb, err)
	require.NoError(tb, s.CreateSchema(ctx))
	tb.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })
	return func() store.Store {
		s, err := sqlstore.New(db, d, sqlstore.Options{Table: table})
		require.NoError(tb, err)
		return closing(tb, s)
	}
}

// fleetStores are the stores BenchmarkFleet runs on:
// WAITINGROOM_FLEET_STORES="redis,postgres" or redis alone.
func fleetStores() []fleetBackend {
	spec := os.Getenv("WAITINGROOM_FLEET_STORES")
	if spec == "" {
		spec = "redis"
	}
	var out []fleetBackend
	for _, be := range fleetBackends {
		if slices.Contains(strings.Split(spec, ","), be.name) {
			out = append(out, be)
		}
	}
	return out
}

// BenchmarkFleet is the scale benchmark: N Room values of one room, each
// with its own store client, each syncing in the background every second
// on the real clock and seeing three fresh visitors a second, for
// WAITINGROOM_FLEET_SECONDS (default 10) after a warm-up of three
// seconds. It reports the syncs a second achieved, the failed syncs, the
// sync's p50, p99 and longest (ms), the store round trips (fn runs) and
// the state bytes read and written per sync, and the state's size. It is
// a measurement, not a test: run it with -benchtime 1x, e.g.
//
//	WAITINGROOM_FLEET=100,400,800 go test -run '^$' -bench Fleet -benchtime 1x ./integration/multiproc
func BenchmarkFleet(b *testing.B) {
	seconds := 10
	if n, err := strconv.Atoi(os.Getenv("WAITINGROOM_FLEET_SECONDS")); err == nil && n > 0 {
		seconds = n
	}
	for _, be := range fleetStores() {
		for _, n := range fleetSizes() {
			b.Run(fmt.Sprintf("store=%s/instances=%d", be.name, n), func(b *testing.B) {
				f := runFleet(b, be, n, time.Duration(seconds)*time.Second)
				b.ReportMetric(float64(len(f.durations))/float64(seconds), "syncs/s")
				b.ReportMetric(float64(f.errors), "errors")
				slices.Sort(f.durations)
				q := func(p float64) float64 {
					if len(f.durations) == 0 {
						return 0
					}
					return float64(f.durations[int(p*float64(len(f.durations)-1))].Microseconds()) / 1000
				}
				b.ReportMetric(q(0.5), "p50-ms")
				b.ReportMetric(q(0.99), "p99-ms")
				b.ReportMetric(q(1), "max-ms")
				if len(f.durations) > 0 {
					b.ReportMetric(float64(f.attempts)/float64(len(f.durations)), "attempts/sync")
					b.ReportMetric(float64(f.bytes)/float64(len(f.durations)), "bytes/sync")
				}
				b.ReportMetric(float64(f.size), "state-bytes")
			})
		}
	}
}

// runFleet runs n instances of one room on be for d after a warm-up and
// returns what was recorded.
func runFleet(b *testing.B, be fleetBackend, n int, d time.Duration) *fleetFigures {
	f := &fleetFigures{}
	open := be.open(b)
	name := randomName("fleet-")
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "app") })
	rooms := make([]*waitingroom.Room, n)
	handlers := make([]http.Handler, n)
	for i := range n {
		rm, err := waitingroom.New(waitingroom.Config{
			Name:              name,
			TotalActiveUsers:  100,
			NewUsersPerMinute: 100,
			Keys:              [][]byte{[]byte(hexKey)},
			SyncInterval:      time.Second,
			Logger:            slog.New(slog.DiscardHandler),
		}, &fleetRecorder{Store: open(), f: f})
		require.NoError(b, err)
		rooms[i], handlers[i] = rm, rm.Handler(app)
	}
	b.Cleanup(func() {
		for _, rm := range rooms {
			_ = rm.Close()
		}
	})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			t := time.NewTicker(time.Second / 3)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					w := httptest.NewRecorder()
					handlers[i].ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil))
				}
			}
		})
	}
	time.Sleep(3 * time.Second)
	b.ResetTimer()
	f.measuring.Store(true)
	time.Sleep(d)
	f.measuring.Store(false)
	b.StopTimer()
	close(stop)
	wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return &fleetFigures{durations: f.durations, errors: f.errors, attempts: f.attempts, bytes: f.bytes, size: f.size}
}

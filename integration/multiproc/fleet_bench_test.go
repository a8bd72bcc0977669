package multiproc

import (
	"context"
	"database/sql"
	"errors"
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

// fleetRecorder wraps one instance's store client and counts, while the
// measurement runs, the store round trips (every run of fn is one read
// and one write of a state: two operations on Redis, a transaction on
// SQL; a Read is one) and the state bytes read and written.
type fleetRecorder struct {
	store.Store
	name string // the room's (its state's size is recorded)
	f    *fleetFigures
}

// Read forwards to the store's read without a lock (store.Reader), one
// round trip, when it has one; the room reads through Update otherwise.
func (r *fleetRecorder) Read(ctx context.Context, room string) (*store.State, error) {
	rd, ok := r.Store.(store.Reader)
	if !ok {
		var out *store.State
		err := r.Update(ctx, room, func(st *store.State) error {
			c := *st
			out = &c
			return errReadOnly
		})
		if errors.Is(err, errReadOnly) {
			err = nil
		}
		return out, err
	}
	st, err := rd.Read(ctx, room)
	if r.f.measuring.Load() {
		r.f.attempts.Add(1)
		if err == nil {
			r.f.bytes.Add(int64(len(store.MarshalState(st))))
		}
	}
	return st, err
}

// recorder returns r, or with WAITINGROOM_FLEET_LOCKED_READ=1 r without
// its Read, so that the fleet reads its view with an Update, as before
// stores had a read without a lock: a comparison in the same run.
func recorder(r *fleetRecorder) store.Store {
	if os.Getenv("WAITINGROOM_FLEET_LOCKED_READ") == "1" {
		return struct{ store.Store }{r}
	}
	return r
}

// errReadOnly ends an Update of Read's fallback.
var errReadOnly = errors.New("read only")

// fleetFigures are the figures of one fleet run, shared by its instances.
type fleetFigures struct {
	measuring atomic.Bool
	attempts  atomic.Int64
	bytes     atomic.Int64 // state bytes read and written
	// stateUpdates counts the Updates of the room's shared state: the
	// classic syncs and the aggregator's rounds.
	stateUpdates atomic.Int64
	size         atomic.Int64 // the latest size of the room's shared state
	mu           sync.Mutex
	durations    []time.Duration // of every Sync
	logs         map[string]int  // the rooms' log records, by message
	errors       int
	// pool is the SQL stores' connection pool, nil for other stores;
	// poolWaits and poolWait the waits for one of its connections while
	// measuring, and how long they took in all.
	pool      *sql.DB
	poolWaits int64
	poolWait  time.Duration
}

func (r *fleetRecorder) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	if !r.f.measuring.Load() {
		return r.Store.Update(ctx, room, fn)
	}
	if room == r.name {
		r.f.stateUpdates.Add(1)
	}
	var attempts int
	var moved int64
	err := r.Store.Update(ctx, room, func(st *store.State) error {
		attempts++
		in := len(store.MarshalState(st))
		err := fn(st)
		moved += int64(in)
		if err == nil {
			size := len(store.MarshalState(st))
			moved += int64(size)
			if room == r.name {
				r.f.size.Store(int64(size))
			}
		}
		return err
	})
	r.f.attempts.Add(int64(attempts))
	r.f.bytes.Add(moved)
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
	open func(tb testing.TB, f *fleetFigures) func() store.Store
}

var fleetBackends = []fleetBackend{
	{"memory", func(tb testing.TB, _ *fleetFigures) func() store.Store {
		s := memstore.New()
		return func() store.Store { return s }
	}},
	{"redis", func(tb testing.TB, _ *fleetFigures) func() store.Store {
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
			o.ContextTimeoutEnabled = true
			c := redis.NewClient(&o)
			tb.Cleanup(func() { _ = c.Close() })
			return closing(tb, redisstore.New(c, redisstore.Options{KeyPrefix: prefix}))
		}
	}},
	{"postgres", func(tb testing.TB, f *fleetFigures) func() store.Store {
		return fleetSQL(tb, f, servicetest.PostgreSQL, "pgx", postgresURL(), sqlstore.Postgres)
	}},
	{"mariadb", func(tb testing.TB, f *fleetFigures) func() store.Store {
		return fleetSQL(tb, f, servicetest.MariaDB, "mysql", servicetest.MariaDB.URL(), sqlstore.MySQL)
	}},
}

// fleetSQL opens one table, dropped at cleanup, and a pool of
// connections the instances' stores share (a database serves a limited
// number of connections): 40, or WAITINGROOM_FLEET_POOL.
func fleetSQL(tb testing.TB, f *fleetFigures, service servicetest.Service, driver, dsn string, d sqlstore.Dialect) func() store.Store {
	db, err := sql.Open(driver, dsn)
	require.NoError(tb, err)
	db.SetMaxOpenConns(fleetPool())
	db.SetMaxIdleConns(fleetPool())
	f.pool = db
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

// fleetPool is the size of the SQL stores' connection pool:
// WAITINGROOM_FLEET_POOL or 40.
func fleetPool() int {
	if n, err := strconv.Atoi(os.Getenv("WAITINGROOM_FLEET_POOL")); err == nil && n > 0 {
		return n
	}
	return 40
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
// with its own store client and the default Config (a fleet of 32 or more
// syncs through an aggregator on its own), all started within the first
// second, each syncing once a second (its own goroutine calls Sync, with
// the background loop's 2 s deadline) and seeing three fresh visitors a
// second, measured for WAITINGROOM_FLEET_SECONDS (default 10) after a
// warm-up in which every instance joins: WAITINGROOM_FLEET_WARMUP seconds,
// default 5 and 1 more per 100 instances; 0 measures from the start,
// the fleet's forming included. It reports the
// syncs a second achieved, the failed syncs, the sync's p50, p99 and
// longest (ms), the store round trips and state bytes per sync (all
// instances', the aggregator's included, over the syncs), and the size of
// the room's shared state, the Updates of that state a second (classic
// syncs and the aggregator's rounds); on SQL, the waits for a connection of the pool
// per sync and their time; with -v, the rooms' log records while measuring,
// counted by message (a fleet's fallbacks to classic syncs and their
// cause). WAITINGROOM_FLEET_LOCKED_READ=1 hides the
// stores' read without a lock (store.Reader) from the rooms. It is a
// measurement, not a test: run it with -benchtime 1x, e.g.
//
//	WAITINGROOM_FLEET=100,400,1000 go test -run '^$' -bench Fleet -benchtime 1x ./integration/multiproc
func BenchmarkFleet(b *testing.B) {
	seconds := 10
	if n, err := strconv.Atoi(os.Getenv("WAITINGROOM_FLEET_SECONDS")); err == nil && n > 0 {
		seconds = n
	}
	for _, be := range fleetStores() {
		for _, n := range fleetSizes() {
			b.Run(fmt.Sprintf("store=%s/instances=%d", be.name, n), func(b *testing.B) {
				f := runFleet(b, be, n, time.Duration(seconds)*time.Second)
				syncs := len(f.durations)
				b.ReportMetric(float64(syncs)/float64(seconds), "syncs/s")
				b.ReportMetric(float64(f.errors), "errors")
				slices.Sort(f.durations)
				q := func(p float64) float64 {
					if syncs == 0 {
						return 0
					}
					return float64(f.durations[int(p*float64(syncs-1))].Microseconds()) / 1000
				}
				b.ReportMetric(q(0.5), "p50-ms")
				b.ReportMetric(q(0.99), "p99-ms")
				b.ReportMetric(q(1), "max-ms")
				if syncs > 0 {
					b.ReportMetric(float64(f.attempts.Load())/float64(syncs), "trips/sync")
					b.ReportMetric(float64(f.bytes.Load())/float64(syncs), "bytes/sync")
				}
				b.ReportMetric(float64(f.size.Load()), "state-bytes")
				for m, n := range f.logs {
					b.Logf("%6d %s", n, m)
				}
				b.ReportMetric(float64(f.stateUpdates.Load())/float64(seconds), "state-updates/s")
				if f.pool != nil && syncs > 0 {
					b.ReportMetric(float64(f.poolWaits)/float64(syncs), "poolwaits/sync")
					b.ReportMetric(float64(f.poolWait.Microseconds())/1000/float64(syncs), "poolwait-ms/sync")
				}
			})
		}
	}
}

// runFleet runs n instances of one room on be for d after a warm-up and
// returns what was recorded.
func runFleet(b *testing.B, be fleetBackend, n int, d time.Duration) *fleetFigures {
	f := &fleetFigures{}
	open := be.open(b, f)
	name := randomName("fleet-")
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "app") })
	rooms := make([]*waitingroom.Room, n)
	handlers := make([]http.Handler, n)
	for i := range n {
		rm, err := waitingroom.New(waitingroom.Config{
			Name: name,
			Settings: waitingroom.Settings{
				TotalActiveUsers:  100,
				NewUsersPerMinute: 100,
			},
			Keys:         [][]byte{[]byte(hexKey)},
			SyncInterval: -1,
			Logger:       slog.New(&countingHandler{f: f}),
		}, recorder(&fleetRecorder{Store: open(), name: name, f: f}))
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
			// Instances start spread over the first second and sync
			// every second from then on.
			time.Sleep(time.Duration(i) * time.Second / time.Duration(n))
			visit := time.NewTicker(time.Second / 3)
			defer visit.Stop()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-visit.C:
					w := httptest.NewRecorder()
					handlers[i].ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil))
				case <-tick.C:
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					start := time.Now()
					err := rooms[i].Sync(ctx)
					took := time.Since(start)
					cancel()
					if f.measuring.Load() {
						f.mu.Lock()
						f.durations = append(f.durations, took)
						if err != nil {
							f.errors++
						}
						f.mu.Unlock()
					}
				}
			}
		})
	}
	warmup := 5*time.Second + time.Duration(n/100)*time.Second
	if s, err := strconv.Atoi(os.Getenv("WAITINGROOM_FLEET_WARMUP")); err == nil && s >= 0 {
		warmup = time.Duration(s) * time.Second
	}
	if warmup > 0 {
		time.Sleep(warmup)
	}
	b.ResetTimer()
	var pool sql.DBStats
	if f.pool != nil {
		pool = f.pool.Stats()
	}
	redis := pidOf("redis-server")
	cpu0, wait0, rwait0 := cpuTime(), runWait("self"), runWait(redis)
	f.measuring.Store(true)
	time.Sleep(d)
	f.measuring.Store(false)
	if f.pool != nil {
		end := f.pool.Stats()
		f.poolWaits = end.WaitCount - pool.WaitCount
		f.poolWait = end.WaitDuration - pool.WaitDuration
	}
	b.StopTimer()
	// The machine is shared: how much CPU the instances had, and how long
	// their threads and the Redis server's waited for one, in cores.
	s := d.Seconds()
	b.ReportMetric((cpuTime()-cpu0).Seconds()/s, "cpu-cores")
	b.ReportMetric((runWait("self")-wait0).Seconds()/s, "cpu-wait-cores")
	if redis != "" {
		b.ReportMetric((runWait(redis)-rwait0).Seconds()/s, "redis-cpu-wait-cores")
	}
	close(stop)
	wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f
}

// countingHandler counts the rooms' log records by message while the
// measurement runs.
type countingHandler struct{ f *fleetFigures }

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if h.f.measuring.Load() {
		h.f.mu.Lock()
		if h.f.logs == nil {
			h.f.logs = map[string]int{}
		}
		h.f.logs[r.Message]++
		h.f.mu.Unlock()
	}
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

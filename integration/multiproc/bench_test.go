package multiproc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
	"github.com/go-waitingroom/waitingroom/store/storetest"
)

// backend opens a store of one kind for a test or benchmark, or skips it
// (fails with WAITINGROOM_REQUIRE_SERVICES=1) when its server is
// unreachable. Everything it creates is removed at cleanup.
type backend struct {
	name string
	open func(tb testing.TB) store.Store
}

var backends = []backend{
	{"memory", func(tb testing.TB) store.Store { return closing(tb, memstore.New()) }},
	{"redis", func(tb testing.TB) store.Store {
		opts, err := redis.ParseURL(redisURL())
		require.NoError(tb, err)
		c := redis.NewClient(opts)
		tb.Cleanup(func() { _ = c.Close() })
		if err := c.Ping(context.Background()).Err(); err != nil {
			servicetest.Unavailable(tb, servicetest.Redis, err)
		}
		prefix := randomName("wrbench:") + ":"
		tb.Cleanup(func() {
			keys, _ := c.Keys(context.Background(), prefix+"*").Result()
			if len(keys) > 0 {
				_ = c.Del(context.Background(), keys...).Err()
			}
		})
		return closing(tb, redisstore.New(c, redisstore.Options{KeyPrefix: prefix}))
	}},
	{"postgres", func(tb testing.TB) store.Store {
		return openSQL(tb, servicetest.PostgreSQL, "pgx", postgresURL(), sqlstore.Postgres)
	}},
	{"mariadb", func(tb testing.TB) store.Store {
		return openSQL(tb, servicetest.MariaDB, "mysql", servicetest.MariaDB.URL(), sqlstore.MySQL)
	}},
	{"sqlite", func(tb testing.TB) store.Store {
		dsn := "file:" + filepath.Join(tb.TempDir(), "bench.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"
		return openSQL(tb, servicetest.Service{Name: "SQLite"}, "sqlite", dsn, sqlstore.SQLite)
	}},
}

func closing(tb testing.TB, s store.Store) store.Store {
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// openSQL opens a sqlstore on a table of its own, dropped at cleanup.
func openSQL(tb testing.TB, service servicetest.Service, driver, dsn string, d sqlstore.Dialect) store.Store {
	db, err := sql.Open(driver, dsn)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		servicetest.Unavailable(tb, service, err)
	}
	table := randomName("wrbench_")
	s, err := sqlstore.New(db, d, sqlstore.Options{Table: table})
	require.NoError(tb, err)
	require.NoError(tb, s.CreateSchema(ctx))
	tb.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })
	return closing(tb, s)
}

// counting counts the Update calls that reach a store.
type counting struct {
	store.Store
	updates atomic.Int64
}

func (c *counting) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	c.updates.Add(1)
	return c.Store.Update(ctx, room, fn)
}

// virtualClock is a clock tests and benchmarks move by hand.
type virtualClock = testclock.Clock

// largeStateTime is the instant storetest.LargeState is built around.
var largeStateTime = time.Unix(1_790_000_000, 0)

// BenchmarkSync measures one Room.Sync against every store, with the room's
// state preloaded with storetest.LargeState: a queue of 60 and of 1,440
// arrival minutes. The clock stands still at the state's time, so nothing
// in it expires and every sync reads and writes a state of the same size.
func BenchmarkSync(b *testing.B) {
	for _, be := range backends {
		for _, buckets := range []int{60, 1440} {
			b.Run(fmt.Sprintf("store=%s/buckets=%d", be.name, buckets), func(b *testing.B) {
				st := be.open(b)
				name := randomName("bench-")
				ctx := context.Background()
				require.NoError(b, st.Update(ctx, name, func(s *store.State) error {
					*s = *storetest.LargeState(buckets)
					return nil
				}))
				clk := testclock.New(largeStateTime)
				rm, err := waitingroom.New(waitingroom.Config{
					Name: name,
					Settings: waitingroom.Settings{
						TotalActiveUsers:  10_000,
						NewUsersPerMinute: 2_000,
					},
					// Every waiting cell of LargeState (the last minute's
					// check-ins) keeps counting.
					RefreshInterval: 5 * time.Minute,
					QueueHold:       15 * time.Minute,
					Keys:            [][]byte{[]byte(hexKey)},
					SyncInterval:    -1,
					Now:             clk.Now,
					Logger:          slog.New(slog.DiscardHandler),
				}, st)
				require.NoError(b, err)
				b.Cleanup(func() { _ = rm.Close() })
				require.NoError(b, rm.Sync(ctx))

				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if err := rm.Sync(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()

				errRead := errors.New("read only")
				var size, waiting int
				err = st.Update(ctx, name, func(s *store.State) error {
					size, waiting = len(store.MarshalState(s)), len(s.Waiting)
					return errRead
				})
				require.ErrorIs(b, err, errRead)
				require.Equal(b, buckets*6, waiting, "the queue kept its size")
				b.ReportMetric(float64(size), "state-bytes")
			})
		}
	}
}

// loadBase is the number of requests per sync interval at 1× load.
const loadBase = 10

// loadRoom is a room on a virtual clock over a store that counts its
// updates, with a handler that serves every request it is given.
type loadRoom struct {
	*waitingroom.Room
	clk     *virtualClock
	st      *counting
	h       http.Handler
	cookies []*http.Cookie // returning visitors
	next    int
}

func newLoadRoom(tb testing.TB, st store.Store) *loadRoom {
	tb.Helper()
	lr := &loadRoom{clk: testclock.New(testclock.Start), st: &counting{Store: st}}
	rm, err := waitingroom.New(waitingroom.Config{
		Name: randomName("load-"),
		Settings: waitingroom.Settings{
			TotalActiveUsers:  100,
			NewUsersPerMinute: 100,
		},
		Keys:         [][]byte{[]byte(hexKey)},
		SyncInterval: -1,
		Now:          lr.clk.Now,
		Logger:       slog.New(slog.DiscardHandler),
	}, lr.st)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = rm.Close() })
	lr.Room = rm
	lr.h = rm.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "app") }))
	return lr
}

// serve pushes n requests through the room: every other one from a new
// visitor, the rest from visitors coming back with their cookie.
func (lr *loadRoom) serve(n int) {
	for i := range n {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
		if i%2 == 1 && len(lr.cookies) > 0 {
			r.AddCookie(lr.cookies[lr.next%len(lr.cookies)])
			lr.next++
		}
		w := httptest.NewRecorder()
		lr.h.ServeHTTP(w, r)
		if cs := w.Result().Cookies(); len(cs) > 0 && i%2 == 0 && len(lr.cookies) < 1000 {
			lr.cookies = append(lr.cookies, cs[0])
		}
	}
}

// interval is one sync interval under load: n requests, then the clock
// moves on by a second and the room syncs.
func (lr *loadRoom) interval(tb testing.TB, n int) {
	lr.serve(n)
	lr.clk.Add(time.Second)
	if err := lr.Sync(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkLoad pushes 1×, 10× and 100× more requests per sync interval
// through a room on every store and reports the store updates per second
// (of the virtual clock, at a sync interval of one second): it stays at one
// whatever the request rate. ns/op is one interval: its requests and its
// sync.
func BenchmarkLoad(b *testing.B) {
	for _, be := range backends {
		for _, mult := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("store=%s/load=%dx", be.name, mult), func(b *testing.B) {
				lr := newLoadRoom(b, be.open(b))
				n := loadBase * mult
				lr.interval(b, n)
				start := lr.st.updates.Load()
				b.ReportAllocs()
				b.ResetTimer()
				intervals := 0
				for b.Loop() {
					lr.interval(b, n)
					intervals++
				}
				b.ReportMetric(float64(lr.st.updates.Load()-start)/float64(intervals), "store-updates/s")
				b.ReportMetric(float64(n), "requests/s")
			})
		}
	}
}

// TestStoreOpsFlat checks that store traffic does not grow with the request
// rate: over the same number of sync intervals, 1×, 10× and 100× more
// requests cost exactly the same number of store updates, one per sync.
func TestStoreOpsFlat(t *testing.T) {
	const intervals = 30
	var counts []int64
	for _, mult := range []int{1, 10, 100} {
		lr := newLoadRoom(t, memstore.New())
		before := lr.st.updates.Load()
		for range intervals {
			lr.interval(t, loadBase*mult)
		}
		counts = append(counts, lr.st.updates.Load()-before)
		st := lr.Stats()
		assert.LessOrEqual(t, st.Active, 100, "the limits hold at %d×", mult)
		assert.Positive(t, st.Waiting, "at %d× the room is full and visitors wait", mult)
	}
	// An Update a sync, and the first sync's two reads (the store has no
	// Read): no fleet's view, and no fleet forming in the state.
	assert.Equal(t, []int64{intervals + 2, intervals + 2, intervals + 2}, counts, "store updates at 1×, 10×, 100× the requests")
}

// TestStoreOpsFlatBackground is TestStoreOpsFlat with the room's own
// background sync on a virtual clock: the jittered loop syncs about once a
// second however many requests arrive.
func TestStoreOpsFlatBackground(t *testing.T) {
	const seconds = 30
	for _, mult := range []int{1, 10, 100} {
		t.Run(fmt.Sprintf("%dx", mult), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := &counting{Store: memstore.New()}
				rm, err := waitingroom.New(waitingroom.Config{
					Name: "flat",
					Settings: waitingroom.Settings{
						TotalActiveUsers:  100,
						NewUsersPerMinute: 100,
					},
					Keys:         [][]byte{[]byte(hexKey)},
					SyncInterval: time.Second,
					Logger:       slog.New(slog.DiscardHandler),
				}, st)
				require.NoError(t, err)
				lr := &loadRoom{Room: rm, st: st, h: rm.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))}
				synctest.Wait() // the first sync, at once
				before := st.updates.Load()
				for range seconds {
					lr.serve(loadBase * mult)
					time.Sleep(time.Second)
				}
				n := st.updates.Load() - before
				require.NoError(t, rm.Close())
				t.Logf("%d store updates in %d s at %d requests/s", n, seconds, loadBase*mult)
				// The loop waits 0.9 to 1.1 intervals between syncs.
				assert.InDelta(t, seconds, n, seconds*0.1+1, "store updates in %d s at %d× the requests", seconds, mult)
			})
		})
	}
}

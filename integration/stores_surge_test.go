package integration

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/sim"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
)

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// realStores opens each real store the tests can reach, each with its own
// key prefix or table, cleaned up when the test ends.
func realStores(t *testing.T) map[string]func(t *testing.T) store.Store {
	return map[string]func(t *testing.T) store.Store{
		"redis": func(t *testing.T) store.Store {
			opts, err := redis.ParseURL(servicetest.Redis.URL())
			require.NoError(t, err)
			client := redis.NewClient(opts)
			if err := client.Ping(context.Background()).Err(); err != nil {
				_ = client.Close()
				servicetest.Unavailable(t, servicetest.Redis, err)
			}
			prefix := "wrsurge:" + randomSuffix() + ":"
			t.Cleanup(func() {
				keys, _ := client.Keys(context.Background(), prefix+"*").Result()
				if len(keys) > 0 {
					client.Del(context.Background(), keys...)
				}
				_ = client.Close()
			})
			return redisstore.New(client, redisstore.Options{KeyPrefix: prefix})
		},
		"postgres": func(t *testing.T) store.Store {
			return sqlSurgeStore(t, "pgx", servicetest.PostgreSQL.URL(), sqlstore.Postgres, servicetest.PostgreSQL)
		},
		"mariadb": func(t *testing.T) store.Store {
			return sqlSurgeStore(t, "mysql", servicetest.MariaDB.URL(), sqlstore.MySQL, servicetest.MariaDB)
		},
		"sqlite": func(t *testing.T) store.Store {
			dsn := "file:" + filepath.Join(t.TempDir(), "rooms.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"
			return sqlSurgeStore(t, "sqlite", dsn, sqlstore.SQLite, servicetest.Service{Name: "SQLite"})
		},
	}
}

func sqlSurgeStore(t *testing.T, driver, dsn string, d sqlstore.Dialect, s servicetest.Service) store.Store {
	db, err := sql.Open(driver, dsn)
	require.NoError(t, err)
	if err := db.PingContext(context.Background()); err != nil {
		_ = db.Close()
		servicetest.Unavailable(t, s, err)
	}
	table := "wrsurge_" + randomSuffix()
	st, err := sqlstore.New(db, d, sqlstore.Options{Table: table})
	require.NoError(t, err)
	require.NoError(t, st.CreateSchema(context.Background()))
	t.Cleanup(func() {
		_ = st.Close()
		_, _ = db.Exec("DROP TABLE " + table)
		_ = db.Close()
	})
	return st
}

// TestSurgeOnRealStores runs four instances on each real store, under one
// virtual clock (the simulator, package sim), through a surge: the limits
// hold exactly, admissions reach the limits while demand exceeds them, and
// FIFO order holds across the instances.
func TestSurgeOnRealStores(t *testing.T) {
	if testing.Short() {
		t.Skip("a surge against every real store takes a while")
	}
	for name, open := range realStores(t) {
		t.Run(name, func(t *testing.T) {
			res, err := sim.Run(context.Background(), sim.Options{
				Visitors: 600, Arrivals: 2 * time.Minute, Browse: time.Minute,
				Duration: 12 * time.Minute, Abandon: 0.01, Seed: 21,
				Instances: 4, Store: open(t),
				TotalActiveUsers: 1000, NewUsersPerMinute: 60, SessionDuration: time.Minute,
			})
			require.NoError(t, err)
			assert.LessOrEqual(t, res.MaxAdmittedPerMinute, 60)
			assert.LessOrEqual(t, res.PeakActive, 1000)
			require.Positive(t, res.SaturatedMinutes)
			assert.GreaterOrEqual(t, res.Utilization, 0.95, "utilization while demand exceeds the limits")
			n := inversions(res.VisitorRecords, 40*time.Second)
			assert.Zero(t, n, "FIFO order across instances")
			t.Logf("%s: utilization %.3f over %d saturated minutes; %d admitted; inversions %d",
				name, res.Utilization, res.SaturatedMinutes, res.Admitted, n)
		})
	}
}

// inversions counts the pairs of arrival minutes (the minute of a visitor's
// first request) in which a visitor of the older minute was let in more
// than slack after one of the newer minute.
func inversions(vs []sim.Visitor, slack time.Duration) int {
	latest := map[time.Duration]time.Duration{}
	earliest := map[time.Duration]time.Duration{}
	for _, v := range vs {
		if !v.WasAdmitted {
			continue
		}
		m := v.Arrival.Truncate(time.Minute)
		if l, ok := latest[m]; !ok || v.Admitted > l {
			latest[m] = v.Admitted
		}
		if e, ok := earliest[m]; !ok || v.Admitted < e {
			earliest[m] = v.Admitted
		}
	}
	n := 0
	for m1, l := range latest {
		for m2, e := range earliest {
			if m1 < m2 && l-e > slack {
				n++
			}
		}
	}
	return n
}

// TestFleetSurgeOnRealStores runs a fleet of 200 instances syncing
// through an aggregator on each real server store,
// under one virtual clock, through a surge: the limits hold exactly,
// admissions reach the limits while demand exceeds them, and FIFO order
// holds across the instances; at 500 admissions a minute (2.5 slots an
// instance: every slot by pick) and 2,000 (10: grants). The store's
// speed does not change what the virtual clock sees: this is the
// accounting on each real store at that size, not its latency
// (BenchmarkFleet in multiproc). WAITINGROOM_FLEET_SURGE=1 runs it
// (WAITINGROOM_FLEET_SURGE_STORES names the stores): about a minute a
// case on Redis, four to six on PostgreSQL and MariaDB.
func TestFleetSurgeOnRealStores(t *testing.T) {
	if os.Getenv("WAITINGROOM_FLEET_SURGE") != "1" {
		t.Skip("200 instances through a surge on each real store take minutes: WAITINGROOM_FLEET_SURGE=1 runs it")
	}
	stores := realStores(t)
	delete(stores, "sqlite")
	if only := os.Getenv("WAITINGROOM_FLEET_SURGE_STORES"); only != "" {
		for name := range stores {
			if !strings.Contains(only, name) {
				delete(stores, name)
			}
		}
	}
	for name, open := range stores {
		for _, perMinute := range []int{500, 2000} {
			t.Run(fmt.Sprintf("%s/%d a minute", name, perMinute), func(t *testing.T) {
				started := time.Now()
				res, err := sim.Run(context.Background(), sim.Options{
					Visitors: 5 * perMinute, Arrivals: time.Minute, Browse: time.Minute,
					Duration: 7 * time.Minute, Abandon: 0.01, Seed: 21,
					Instances: 200, Store: open(t),
					TotalActiveUsers: 100 * perMinute, NewUsersPerMinute: perMinute, SessionDuration: time.Minute,
				})
				require.NoError(t, err)
				assert.LessOrEqual(t, res.MaxAdmittedPerMinute, perMinute)
				require.Positive(t, res.SaturatedMinutes)
				assert.GreaterOrEqual(t, res.Utilization, 0.95, "utilization while demand exceeds the limits")
				n := inversions(res.VisitorRecords, 40*time.Second)
				assert.Zero(t, n, "FIFO order across instances")
				t.Logf("%s, %d a minute: utilization %.3f over %d saturated minutes; %d admitted; inversions %d; %v",
					name, perMinute, res.Utilization, res.SaturatedMinutes, res.Admitted, n, time.Since(started).Round(time.Second))
			})
		}
	}
}

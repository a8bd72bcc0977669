package integration

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/go-waitingroom/waitingroom"
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
			n := inversions(res.VisitorRecords, 2*waitingroom.DefaultRefreshInterval)
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

package waitingroom

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

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
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

// TestSurgeOnRealStores runs four instances with their own grants on each
// real store, under one virtual clock, through a surge: the limits hold
// exactly, admissions reach the limits while demand exceeds them, and FIFO
// order holds across the instances.
func TestSurgeOnRealStores(t *testing.T) {
	if testing.Short() {
		t.Skip("a surge against every real store takes a while")
	}
	for name, open := range realStores(t) {
		t.Run(name, func(t *testing.T) {
			clk := newClock()
			rooms := instances(t, clk, open(t), 4, func(c *Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 1000, 60
				c.SessionDuration = time.Minute
			})
			res := surge{visitors: 600, arrivals: 2 * time.Minute, browse: time.Minute,
				duration: 12 * time.Minute, abandon: 0.01, seed: 21}.run(t, clk, rooms)
			got, minutes := 0, 0
			for m, n := range res.admittedPerMinute {
				require.LessOrEqual(t, n, 60, "minute %d", m)
				if res.backlog[m] >= 60 {
					got += n
					minutes++
				}
			}
			require.Positive(t, minutes)
			util := float64(got) / float64(minutes*60)
			assert.GreaterOrEqual(t, util, 0.95, "utilization while demand exceeds the limits")
			assert.Zero(t, res.inversions, "FIFO order across instances")
			assert.LessOrEqual(t, res.maxActive, 1000)
			t.Logf("%s: utilization %.3f over %d saturated minutes; inversions %d", name, util, minutes, res.inversions)
		})
	}
}

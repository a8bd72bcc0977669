package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/cmd/waitingroom/internal/demoapp"
	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/store"
)

func TestParseStore(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		kind     storeKind
		dsn      string   // SQL stores
		addr     string   // Redis
		db       int      // Redis
		addrs    []string // Redis Cluster
		redacted string
	}{
		{name: "memory", in: "memory", kind: kindMemory, redacted: "memory"},
		{name: "redis", in: "redis://127.0.0.1:6379/0", kind: kindRedis, addr: "127.0.0.1:6379", redacted: "redis://127.0.0.1:6379/0"},
		{name: "redis db and password", in: "redis://:s3cret@cache.internal:6380/2", kind: kindRedis, addr: "cache.internal:6380", db: 2, redacted: "redis://:xxxxx@cache.internal:6380/2"},
		{name: "redis default port", in: "redis://cache.internal", kind: kindRedis, addr: "cache.internal:6379", redacted: "redis://cache.internal"},
		{name: "rediss", in: "rediss://cache.internal:6379/1", kind: kindRedis, addr: "cache.internal:6379", db: 1, redacted: "rediss://cache.internal:6379/1"},
		{name: "redis cluster", in: "redis+cluster://10.0.0.1:7000", kind: kindRedis, addrs: []string{"10.0.0.1:7000"}, redacted: "redis+cluster://10.0.0.1:7000"},
		{name: "redis cluster nodes and password", in: "redis+cluster://app:s3cret@10.0.0.1:7000?addr=10.0.0.2:7001&addr=[::1]:7002",
			kind: kindRedis, addrs: []string{"10.0.0.1:7000", "10.0.0.2:7001", "[::1]:7002"}, redacted: "redis+cluster://app:xxxxx@10.0.0.1:7000?addr=10.0.0.2:7001&addr=[::1]:7002"},
		{name: "redis cluster default port", in: "redis+cluster://cache.internal/", kind: kindRedis, addrs: []string{"cache.internal:6379"}, redacted: "redis+cluster://cache.internal/"},
		{name: "redis cluster database 0", in: "redis+cluster://cache.internal:7000/0", kind: kindRedis, addrs: []string{"cache.internal:7000"}, redacted: "redis+cluster://cache.internal:7000/0"},
		{name: "redis cluster options", in: "REDIS+CLUSTER://cache.internal:7000?max_redirects=5&read_only=false",
			kind: kindRedis, addrs: []string{"cache.internal:7000"}, redacted: "redis+cluster://cache.internal:7000?max_redirects=5&read_only=false"},
		{name: "rediss cluster", in: "rediss+cluster://:s3cret@cache.internal:7000?addr=cache2.internal:7000", kind: kindRedis,
			addrs: []string{"cache.internal:7000", "cache2.internal:7000"}, redacted: "rediss+cluster://:xxxxx@cache.internal:7000?addr=cache2.internal:7000"},
		{name: "postgres", in: "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", kind: kindPostgres,
			dsn: "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", redacted: "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"},
		{name: "postgresql", in: "postgresql://app:pw@db:5432/rooms", kind: kindPostgres,
			dsn: "postgresql://app:pw@db:5432/rooms", redacted: "postgresql://app:xxxxx@db:5432/rooms"},
		{name: "mysql", in: "mysql://root@127.0.0.1:3306/test", kind: kindMySQL,
			dsn: "root@tcp(127.0.0.1:3306)/test", redacted: "mysql://root@127.0.0.1:3306/test"},
		{name: "mysql default port and escaped password", in: "mysql://app:p%40ss%2Fw@db.internal/rooms", kind: kindMySQL,
			dsn: "app:p@ss/w@tcp(db.internal:3306)/rooms", redacted: "mysql://app:xxxxx@db.internal/rooms"},
		{name: "mysql driver parameters", in: "mysql://root@127.0.0.1:3306/test?timeout=5s&tls=false", kind: kindMySQL,
			dsn: "root@tcp(127.0.0.1:3306)/test?timeout=5s&tls=false", redacted: "mysql://root@127.0.0.1:3306/test?timeout=5s&tls=false"},
		{name: "mariadb", in: "mariadb://root@[::1]:3307/test", kind: kindMySQL,
			dsn: "root@tcp([::1]:3307)/test", redacted: "mariadb://root@[::1]:3307/test"},
		{name: "sqlite", in: "sqlite:///var/lib/waitingroom/rooms.db", kind: kindSQLite,
			dsn: "file:/var/lib/waitingroom/rooms.db?" + sqliteParams, redacted: "sqlite:///var/lib/waitingroom/rooms.db"},
		{name: "sqlite parameters", in: "sqlite:///tmp/rooms.db?_pragma=synchronous(NORMAL)", kind: kindSQLite,
			dsn: "file:/tmp/rooms.db?" + sqliteParams + "&_pragma=synchronous(NORMAL)", redacted: "sqlite:///tmp/rooms.db?_pragma=synchronous(NORMAL)"},
		{name: "surrounding spaces", in: "  memory\n", kind: kindMemory, redacted: "memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := parseStore("-store", tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.kind, spec.kind)
			assert.Equal(t, tc.redacted, spec.redacted)
			tls := strings.HasPrefix(strings.ToLower(tc.in), "rediss")
			switch {
			case tc.addrs != nil:
				require.NotNil(t, spec.cluster)
				assert.Nil(t, spec.redis)
				assert.Equal(t, tc.addrs, spec.cluster.Addrs)
				assert.Equal(t, tls, spec.cluster.TLSConfig != nil)
				if tls {
					assert.Equal(t, "cache.internal", spec.cluster.TLSConfig.ServerName)
				}
				u, err := url.Parse(tc.in)
				require.NoError(t, err)
				pw, _ := u.User.Password()
				assert.Equal(t, pw, spec.cluster.Password)
			case tc.kind == kindRedis:
				require.NotNil(t, spec.redis)
				assert.Nil(t, spec.cluster)
				assert.Equal(t, tc.addr, spec.redis.Addr)
				assert.Equal(t, tc.db, spec.redis.DB)
				assert.Equal(t, tls, spec.redis.TLSConfig != nil)
			default:
				assert.Nil(t, spec.redis)
				assert.Nil(t, spec.cluster)
			}
			assert.Equal(t, tc.dsn, spec.dsn)
			assert.Equal(t, spec.sql(), tc.kind != kindMemory && tc.kind != kindRedis)
		})
	}
}

func TestParseStoreErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "-store is empty"},
		{"blank", "   ", "-store is empty"},
		{"no scheme", "localhost:6379", "unknown store"},
		{"unknown scheme", "http://127.0.0.1:8080", "unknown store"},
		{"not a URL", "redis://[::1", "not a URL"},
		{"redis no host", "redis:///0", "no host"},
		{"redis bad db", "redis://127.0.0.1:6379/zero", "invalid database"},
		{"redis two path parts", "redis://127.0.0.1:6379/0/1", "invalid URL path"},
		{"redis cluster no host", "redis+cluster:///", "no host"},
		{"redis cluster opaque", "redis+cluster:127.0.0.1:7000", "no host"},
		{"redis cluster database", "redis+cluster://127.0.0.1:7000/1", "only database 0"},
		{"redis cluster db parameter", "redis+cluster://127.0.0.1:7000?db=0", "only database 0"},
		{"redis cluster read_only", "redis+cluster://127.0.0.1:7000?read_only=true", "read_only=true does not apply"},
		{"redis cluster route_by_latency", "redis+cluster://127.0.0.1:7000?route_by_latency=1", "route_by_latency=1 does not apply"},
		{"redis cluster route_randomly", "redis+cluster://127.0.0.1:7000?route_randomly=true", "route_randomly=true does not apply"},
		{"redis cluster skip_verify", "rediss+cluster://127.0.0.1:7000?skip_verify=true", "unexpected option: skip_verify"},
		{"redis cluster unknown parameter", "redis+cluster://127.0.0.1:7000?sentinel=x", "unexpected option: sentinel"},
		{"redis cluster bad parameter", "redis+cluster://127.0.0.1:7000?pool_size=many", "pool_size"},
		{"redis cluster bad addr", "redis+cluster://127.0.0.1:7000?addr=127.0.0.2", "addr param"},
		{"postgres no host", "postgres:///test", "no host"},
		{"postgres bad port", "postgres://postgres@127.0.0.1:port/test", "not a URL"},
		{"postgres bad parameter", "postgres://postgres@127.0.0.1:5432/test?sslmode=sometimes", "sslmode"},
		{"mysql no host", "mysql:///test", "no host"},
		{"mysql no database", "mysql://root@127.0.0.1:3306", "one database name"},
		{"mysql two path parts", "mysql://root@127.0.0.1:3306/a/b", "one database name"},
		{"mysql bad parameter", "mysql://root@127.0.0.1:3306/test?allowAllFiles=maybe", "invalid bool"},
		{"sqlite relative", "sqlite://rooms.db", "must be absolute"},
		{"sqlite opaque", "sqlite:rooms.db", "not an absolute path"},
		{"sqlite no path", "sqlite://", "no file path"},
		{"sqlite directory", "sqlite:///var/lib/", "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseStore("-store", tc.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseStoreKeepsPasswordsOutOfErrors(t *testing.T) {
	for _, in := range []string{
		"redis://:hunter2@127.0.0.1:6379/zero",
		"redis+cluster://:hunter2@127.0.0.1:7000/1",
		"rediss+cluster://app:hunter2@127.0.0.1:7000?pool_size=many",
		"redis+cluster://app:hunter2@127.0.0.1:7000?addr=127.0.0.2",
		"redis+cluster://app:hunter2@/",
		"postgres://app:hunter2@127.0.0.1:5432/test?sslmode=sometimes",
		"mysql://app:hunter2@127.0.0.1:3306/test?allowAllFiles=maybe",
		"mysql://app:hunter2@127.0.0.1:3306",
		"ftp://app:hunter2@127.0.0.1/",
	} {
		_, err := parseStore("-store", in)
		require.Error(t, err, in)
		assert.NotContains(t, err.Error(), "hunter2", in)
	}
}

func TestStoreUsageErrors(t *testing.T) {
	t.Setenv("WAITINGROOM_STORE", "")
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"bad store", []string{"-demo", "-store", "redis://127.0.0.1:6379/zero"}, "", "invalid database"},
		{"unknown store", []string{"-demo", "-store", "etcd://127.0.0.1:2379"}, "", "unknown store"},
		{"empty store", []string{"-demo", "-store", ""}, "", "-store is empty"},
		{"bad store from the environment", []string{"-demo"}, "sqlite:rooms.db", "not an absolute path"},
		{"prefix without redis", []string{"-demo", "-store-prefix", "x:"}, "", "-store-prefix applies to Redis"},
		{"table without SQL", []string{"-demo", "-store", "redis://127.0.0.1:6379/0", "-store-table", "t"}, "", "apply to SQL stores only"},
		{"create-schema without SQL", []string{"-demo", "-create-schema"}, "", "apply to SQL stores only"},
		{"bad table", []string{"-demo", "-store", "sqlite:///tmp/x.db", "-store-table", "rooms; DROP TABLE x"}, "", "not a plain identifier"},
		{"zero sync interval", []string{"-demo", "-sync-interval", "0s"}, "", "-sync-interval must be > 0"},
		{"negative sync interval", []string{"-demo", "-sync-interval", "-1s"}, "", "-sync-interval must be > 0"},
		{"relative health path", []string{"-demo", "-health-path", "healthz"}, "", "must start with /"},
		{"relative lottery path", []string{"-demo", "-lottery-path", "lottery"}, "", `-lottery-path "lottery" must start with /`},
		// The Config is checked before any connection is tried.
		{"bad limits before connecting", []string{"-demo", "-key", hexKey, "-store", "redis://127.0.0.1:1/0", "-total-active-users", "0"}, "", "TotalActiveUsers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("WAITINGROOM_STORE", tc.env)
			var stderr bytes.Buffer
			code := run(context.Background(), tc.args, io.Discard, &stderr, nil)
			assert.Equal(t, 2, code, stderr.String())
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}

// TestStoreFailsStart: a store that cannot be reached, refuses the
// credentials or lacks its table makes the proxy exit with status 1 at
// start-up, with the store's error and what to do in the proxy's terms.
func TestStoreFailsStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close()) // nothing listens there now
	for _, tc := range []struct {
		name string
		// args returns the store's arguments, or skips.
		args func(t *testing.T) []string
		want []string
	}{
		{
			name: "redis, closed port",
			args: func(t *testing.T) []string {
				return []string{"-store", "redis://127.0.0.1:" + strconv.Itoa(port) + "/0"}
			},
			want: []string{"waitingroom/store: unavailable", "connection refused", "the store cannot be reached"},
		},
		{
			name: "redis, unknown user",
			args: func(t *testing.T) []string {
				u, err := url.Parse(servicetest.Redis.URL())
				require.NoError(t, err)
				pingRedis(t, u.String())
				u.User = url.UserPassword(randomName("nobody_"), "secret")
				return []string{"-store", u.String()}
			},
			want: []string{"waitingroom/store: access denied", "WRONGPASS", "the store refused the credentials"},
		},
		{
			name: "redis cluster, a single server",
			args: func(t *testing.T) []string {
				u, err := url.Parse(servicetest.Redis.URL())
				require.NoError(t, err)
				pingRedis(t, u.String())
				u.Scheme += "+cluster"
				u.Path, u.RawQuery = "", ""
				return []string{"-store", u.String()}
			},
			want: []string{"cluster support disabled", "the server is not a Redis Cluster: name it with redis://"},
		},
		{
			name: "sqlite, missing table",
			args: func(t *testing.T) []string {
				return []string{"-store", "sqlite://" + filepath.Join(t.TempDir(), "bare.db"), "-create-schema=false", "-store-table", "rooms"}
			},
			want: []string{"waitingroom/store: no schema", `the table "rooms" does not exist: run once with -create-schema`, `CREATE TABLE IF NOT EXISTS "rooms"`},
		},
		{
			name: "postgres, missing table",
			args: func(t *testing.T) []string {
				u := servicetest.PostgreSQL.URL()
				pingSQL(t, servicetest.PostgreSQL, "pgx", u)
				return []string{"-store", u, "-store-table", randomName("wrcmd_")}
			},
			want: []string{"waitingroom/store: no schema", "SQLSTATE 42P01", "run once with -create-schema", "CREATE TABLE IF NOT EXISTS"},
		},
		{
			name: "mysql, wrong password",
			args: func(t *testing.T) []string {
				dsn := servicetest.MariaDB.URL()
				pingSQL(t, servicetest.MariaDB, "mysql", dsn)
				cfg, err := mysql.ParseDSN(dsn)
				require.NoError(t, err)
				u := url.URL{Scheme: "mysql", User: url.UserPassword(cfg.User, "not-the-password"), Host: cfg.Addr, Path: "/" + cfg.DBName}
				return []string{"-store", u.String()}
			},
			want: []string{"waitingroom/store: access denied", "Error 1045", "the store refused the credentials"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"-demo", "-key", hexKey, "-listen", "127.0.0.1:0"}, tc.args(t)...)
			code := run(context.Background(), args, io.Discard, &stderr, nil)
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr.String(), "first sync failed")
			for _, w := range tc.want {
				assert.Contains(t, stderr.String(), w)
			}
			assert.NotContains(t, stderr.String(), "not-the-password", "the password stays out of the output")
		})
	}
}

// pingRedis skips the test (fails it in CI) when Redis is unreachable.
func pingRedis(t *testing.T, u string) {
	opts, err := redis.ParseURL(u)
	require.NoError(t, err)
	c := redis.NewClient(opts)
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		servicetest.Unavailable(t, servicetest.Redis, err)
	}
}

// pingSQL skips the test (fails it in CI) when the database is
// unreachable.
func pingSQL(t *testing.T, service servicetest.Service, driver, dsn string) {
	db, err := sql.Open(driver, dsn)
	require.NoError(t, err)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		servicetest.Unavailable(t, service, err)
	}
}

func TestSQLiteSchema(t *testing.T) {
	dir := t.TempDir()
	t.Run("missing table without -create-schema", func(t *testing.T) {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"-demo", "-key", hexKey, "-listen", "127.0.0.1:0",
			"-store", "sqlite://" + filepath.Join(dir, "bare.db"), "-create-schema=false"}, io.Discard, &stderr, nil)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr.String(), "first sync failed")
		assert.Contains(t, stderr.String(), "-create-schema")
	})
	t.Run("created by default", func(t *testing.T) {
		base := start(t, "-demo", "-key", hexKey, "-store", "sqlite://"+filepath.Join(dir, "rooms.db"), "-store-table", "rooms",
			"-total-active-users", "1", "-new-users-per-minute", "1")
		_, body := get(t, browser(t), base+"/")
		assert.Contains(t, body, "You're in")
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "rooms.db"))
		require.NoError(t, err)
		defer db.Close()
		var n int
		require.NoError(t, db.QueryRow(`SELECT count(*) FROM "rooms"`).Scan(&n))
		assert.Equal(t, 1, n, "one row for the room")
	})
}

func TestHealthz(t *testing.T) {
	base := start(t, "-demo", "-key", hexKey, "-total-active-users", "1", "-new-users-per-minute", "1")
	_, body := get(t, browser(t), base+"/")
	require.Contains(t, body, "You're in")
	_, body = get(t, browser(t), base+"/")
	require.NotContains(t, body, "You're in", "the room is full")

	c := browser(t)
	resp, body := get(t, c, base+"/healthz")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok\n", body)
	assert.Empty(t, resp.Header.Values("Set-Cookie"), "the health check is outside the room")

	resp, err := c.Head(base + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	resp, err = c.Post(base+"/healthz", "text/plain", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestHealthPathDisabled(t *testing.T) {
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("upstream " + r.URL.Path)) })
	srv := &http.Server{Handler: up}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := start(t, "-upstream", "http://"+ln.Addr().String(), "-key", hexKey, "-health-path", "")
	_, body := get(t, browser(t), base+"/healthz")
	assert.Equal(t, "upstream /healthz", body)
}

// report is the JSON form of /active, as a client decodes it.
type report struct {
	Active              int            `json:"active"`
	SessionDuration     string         `json:"sessionDuration"`
	AdmissionsPerMinute map[string]int `json:"admissionsPerMinute"`
	Sessions            []struct {
		Visitor    string    `json:"visitor"`
		AcceptedAt time.Time `json:"acceptedAt"`
		LastSeen   time.Time `json:"lastSeen"`
	} `json:"sessions"`
}

func TestActiveReport(t *testing.T) {
	base := start(t, "-demo", "-key", hexKey, "-total-active-users", "2", "-new-users-per-minute", "2", "-session-duration", "1m")
	var visitors []string
	for range 2 {
		c := browser(t)
		_, body := get(t, c, base+"/")
		require.Contains(t, body, "You're in")
		_, body = get(t, c, base+"/")
		require.Contains(t, body, "Visitors active in the last 1m0s")
		u, _ := url.Parse(base)
		for _, ck := range c.Jar.Cookies(u) {
			if ck.Name == demoapp.VisitorCookie {
				visitors = append(visitors, ck.Value)
			}
		}
	}
	require.Len(t, visitors, 2, "each admitted browser got a demo visitor id")

	_, body := get(t, browser(t), base+"/active")
	assert.Equal(t, "2\n", body)
	for _, req := range []func() (*http.Response, error){
		func() (*http.Response, error) { return http.Get(base + "/active?format=json") },
		func() (*http.Response, error) {
			r, _ := http.NewRequest(http.MethodGet, base+"/active", nil)
			r.Header.Set("Accept", "application/json")
			return http.DefaultClient.Do(r)
		},
	} {
		resp, err := req()
		require.NoError(t, err)
		var rep report
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&rep))
		resp.Body.Close()
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		assert.Equal(t, 2, rep.Active)
		assert.Equal(t, "1m0s", rep.SessionDuration)
		require.Len(t, rep.Sessions, 2)
		total := 0
		for _, n := range rep.AdmissionsPerMinute {
			total += n
		}
		assert.Equal(t, 2, total)
		for _, s := range rep.Sessions {
			assert.Contains(t, visitors, s.Visitor)
			assert.False(t, s.LastSeen.Before(s.AcceptedAt))
		}
	}
}

// sharedStore is a store two proxies can share in a test, or a reason to
// skip.
type sharedStore struct {
	name string
	// setup returns the -store arguments of the two proxies, or calls
	// servicetest.Unavailable.
	setup func(t *testing.T) (a, b []string)
}

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// sqlShared creates a table of its own in a server database and drops it at
// cleanup; the first proxy runs with -create-schema, the second with the
// default (false), so it relies on the table being there.
func sqlShared(t *testing.T, service servicetest.Service, driver, dsn, storeURL string) (a, b []string) {
	db, err := sql.Open(driver, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		servicetest.Unavailable(t, service, err)
	}
	table := randomName("wrcmd_")
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })
	a = []string{"-store", storeURL, "-store-table", table, "-create-schema"}
	b = []string{"-store", storeURL, "-store-table", table}
	return a, b
}

var sharedStores = []sharedStore{
	{"sqlite", func(t *testing.T) (a, b []string) {
		s := []string{"-store", "sqlite://" + filepath.Join(t.TempDir(), "rooms.db")}
		return s, s
	}},
	{"redis", func(t *testing.T) (a, b []string) {
		u := servicetest.Redis.URL()
		opts, err := redis.ParseURL(u)
		require.NoError(t, err)
		c := redis.NewClient(opts)
		t.Cleanup(func() { _ = c.Close() })
		if err := c.Ping(context.Background()).Err(); err != nil {
			servicetest.Unavailable(t, servicetest.Redis, err)
		}
		prefix := randomName("wrcmd:") + ":"
		t.Cleanup(func() {
			keys, _ := c.Keys(context.Background(), prefix+"*").Result()
			if len(keys) > 0 {
				_ = c.Del(context.Background(), keys...).Err()
			}
		})
		s := []string{"-store", u, "-store-prefix", prefix}
		return s, s
	}},
	{"postgres", func(t *testing.T) (a, b []string) {
		u := servicetest.PostgreSQL.URL()
		return sqlShared(t, servicetest.PostgreSQL, "pgx", u, u)
	}},
	{"mysql", func(t *testing.T) (a, b []string) {
		dsn := servicetest.MariaDB.URL()
		cfg, err := mysql.ParseDSN(dsn)
		require.NoError(t, err)
		u := url.URL{Scheme: "mysql", User: url.UserPassword(cfg.User, cfg.Passwd), Host: cfg.Addr, Path: "/" + cfg.DBName}
		if cfg.Passwd == "" {
			u.User = url.User(cfg.User)
		}
		return sqlShared(t, servicetest.MariaDB, "mysql", dsn, u.String())
	}},
}

// getHonouringRefresh requests url until it is admitted or the deadline
// passes, waiting as long as each waiting page's Refresh header says. It
// returns whether the browser got in.
func getHonouringRefresh(t *testing.T, c *http.Client, urls []string, deadline time.Time) bool {
	t.Helper()
	for i := 0; time.Now().Before(deadline); i++ {
		resp, body := get(t, c, urls[i%len(urls)])
		require.Less(t, resp.StatusCode, 500)
		if strings.Contains(body, "You're in") {
			return true
		}
		secs, err := strconv.Atoi(resp.Header.Get("Refresh"))
		require.NoError(t, err, "a waiting page has a Refresh header")
		time.Sleep(time.Duration(secs) * time.Second)
	}
	return false
}

// TestSharedStore runs two proxies on one store with room for a single
// visitor: whichever proxy a browser reaches, the second one waits while
// the first passes on both.
func TestSharedStore(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: starts proxies on real stores")
	}
	for _, st := range sharedStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			a, b := st.setup(t)
			common := []string{"-demo", "-key", hexKey, "-name", randomName("shared"), "-total-active-users", "1", "-new-users-per-minute", "1",
				"-refresh-interval", "1s", "-sync-interval", "100ms"}
			baseA := start(t, append(common, a...)...)
			baseB := start(t, append(common, b...)...)
			both := []string{baseA + "/", baseB + "/"}

			oneBetweenTwoProxies(t, both)
		})
	}
}

// TestCreateSchemaConcurrently starts several proxies with -create-schema
// on a new PostgreSQL table at the same moment: all of them start, although
// PostgreSQL's CREATE TABLE IF NOT EXISTS can fail when run concurrently.
func TestCreateSchemaConcurrently(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: needs PostgreSQL")
	}
	u := servicetest.PostgreSQL.URL()
	args, _ := sqlShared(t, servicetest.PostgreSQL, "pgx", u, u)
	args = append(args, "-demo", "-key", hexKey, "-listen", "127.0.0.1:0")
	const n = 6
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		code   int
		stderr string
	}
	results := make(chan result, n)
	ready := make(chan string, n)
	for range n {
		go func() {
			var stderr bytes.Buffer
			code := run(ctx, args, io.Discard, &stderr, ready)
			results <- result{code, stderr.String()}
		}()
	}
	started := 0
	timeout := time.After(30 * time.Second)
	for started < n {
		select {
		case <-ready:
			started++
		case r := <-results:
			cancel()
			t.Fatalf("a proxy exited with %d: %s", r.code, r.stderr)
		case <-timeout:
			cancel()
			t.Fatalf("only %d of %d proxies started", started, n)
		}
	}
	cancel()
	for range n {
		r := <-results
		assert.Equal(t, 0, r.code, r.stderr)
	}
}

// oneBetweenTwoProxies checks two proxies of one room with room for one
// visitor (both, their URLs): the first browser gets in and passes on
// both, the second waits on both.
func oneBetweenTwoProxies(t *testing.T, both []string) {
	t.Helper()
	first := browser(t)
	require.True(t, getHonouringRefresh(t, first, both, time.Now().Add(10*time.Second)), "the first browser gets in")
	for _, u := range both {
		_, body := get(t, first, u)
		assert.Contains(t, body, "You're in", "the first browser passes on both proxies")
	}
	second := browser(t)
	assert.False(t, getHonouringRefresh(t, second, both, time.Now().Add(3*time.Second)), "the second browser waits on both proxies")
}

// TestStoreHintNamesRefusal: a first sync that ran out of time while the
// Redis client retried a refused connection says only that the time ran
// out; the hint adds what a dial to the store's address says.
func TestStoreHintNamesRefusal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	timedOut := fmt.Errorf("update: %w: %w", store.ErrUnavailable, context.DeadlineExceeded)
	for _, tc := range []struct {
		name string
		spec storeSpec
		want string
	}{
		{"redis", storeSpec{kind: kindRedis, redis: &redis.Options{Addr: addr}}, "connection refused"},
		{"redis cluster", storeSpec{kind: kindRedis, cluster: &redis.ClusterOptions{Addrs: []string{addr}}}, "connection refused"},
		{"postgres", storeSpec{kind: kindPostgres}, "the store cannot be reached: check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hint := storeHint(tc.spec, storeOptions{}, timedOut)
			assert.Contains(t, hint, "the store cannot be reached")
			assert.Contains(t, hint, tc.want)
		})
	}
}

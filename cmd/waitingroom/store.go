package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
)

// storeKind is the kind of store a -store value names.
type storeKind string

const (
	kindMemory   storeKind = "memory"
	kindRedis    storeKind = "redis"
	kindPostgres storeKind = "postgres"
	kindMySQL    storeKind = "mysql"
	kindSQLite   storeKind = "sqlite"
)

// sqliteParams are added to every SQLite DSN: writers wait for the lock
// inside SQLite (sqlstore needs a busy timeout), and WAL lets readers go on
// while a writer holds it. Parameters in the -store URL come after them, so
// they can override these.
const sqliteParams = "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"

// storeSpec is a parsed -store value: what to connect to, nothing opened.
type storeSpec struct {
	kind storeKind
	// redis is the client configuration of a redis:// or rediss:// URL.
	redis *redis.Options
	// cluster is the client configuration of a redis+cluster:// or
	// rediss+cluster:// URL; redis is nil then.
	cluster *redis.ClusterOptions
	// dsn is what the SQL driver is opened with: the URL itself for
	// PostgreSQL, the go-sql-driver DSN for MySQL, a file: DSN for SQLite.
	dsn string
	// redacted is the store's URL without its password, for logs.
	redacted string
}

// sql reports whether the store is one of the SQL stores.
func (s storeSpec) sql() bool {
	return s.kind == kindPostgres || s.kind == kindMySQL || s.kind == kindSQLite
}

// dialect is the sqlstore dialect of a SQL store.
func (s storeSpec) dialect() sqlstore.Dialect {
	switch s.kind {
	case kindPostgres:
		return sqlstore.Postgres
	case kindMySQL:
		return sqlstore.MySQL
	case kindSQLite:
		return sqlstore.SQLite
	}
	return 0
}

// storeHelp lists the accepted -store values.
const storeHelp = "memory, redis://[user:password@]host:port/db, rediss://..., " +
	"redis+cluster://[user:password@]host:port[?addr=host2:port2&addr=...], rediss+cluster://..., " +
	"postgres://user:password@host:port/db?sslmode=disable, mysql://user:password@host:port/db or sqlite:///absolute/path.db"

// parseStore parses a store URL; label names where it comes from
// ("-store", "WAITINGROOM_STORE" or the config file's field) in errors. It
// only parses: it opens nothing and does no I/O, so every error it returns
// is a usage error.
func parseStore(label, raw string) (storeSpec, error) {
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
		// Most likely an unset environment variable: falling back to
		// memory would silently give every process limits of its own.
		return storeSpec{}, fmt.Errorf("%s is empty; want %s", label, storeHelp)
	case raw == string(kindMemory):
		return storeSpec{kind: kindMemory, redacted: raw}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the raw URL, password included: keep only its
		// cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return storeSpec{}, fmt.Errorf("%s: not a URL: %v; want %s", label, err, storeHelp)
	}
	spec := storeSpec{redacted: u.Redacted()}
	label += " " + spec.redacted
	switch strings.ToLower(u.Scheme) {
	case "redis", "rediss":
		spec.kind = kindRedis
		if u.Host == "" {
			return storeSpec{}, fmt.Errorf("%s: no host; want redis://host:port/db", label)
		}
		if spec.redis, err = redis.ParseURL(raw); err != nil {
			return storeSpec{}, fmt.Errorf("%s: %v", label, err)
		}
	case "redis+cluster", "rediss+cluster":
		spec.kind = kindRedis
		if spec.cluster, err = clusterOptions(u); err != nil {
			return storeSpec{}, fmt.Errorf("%s: %v", label, redactErr(err, u))
		}
	case "postgres", "postgresql":
		spec.kind = kindPostgres
		if u.Host == "" {
			return storeSpec{}, fmt.Errorf("%s: no host; want postgres://user@host:port/db", label)
		}
		if _, err := pgx.ParseConfig(raw); err != nil {
			return storeSpec{}, fmt.Errorf("%s: %v", label, redactErr(err, u))
		}
		spec.dsn = raw
	case "mysql", "mariadb":
		spec.kind = kindMySQL
		if spec.dsn, err = mysqlDSN(u); err != nil {
			return storeSpec{}, fmt.Errorf("%s: %v", label, redactErr(err, u))
		}
	case "sqlite", "sqlite3":
		spec.kind = kindSQLite
		if spec.dsn, err = sqliteDSN(u); err != nil {
			return storeSpec{}, fmt.Errorf("%s: %v", label, err)
		}
	default:
		return storeSpec{}, fmt.Errorf("%s: unknown store; want %s", label, storeHelp)
	}
	return spec, nil
}

// clusterOptions parses redis+cluster://[user:password@]host:port?params
// (rediss+cluster:// for TLS) with redis.ParseClusterURL: host:port and
// every addr parameter are nodes the client asks for the cluster's layout.
// The other parameters are go-redis's ClusterOptions, but for those that
// send reads to replicas.
func clusterOptions(u *url.URL) (*redis.ClusterOptions, error) {
	const want = "want redis+cluster://host:port[?addr=host2:port2&addr=...]"
	if u.Opaque != "" || u.Host == "" {
		return nil, errors.New("no host; " + want)
	}
	q := u.Query()
	if (u.Path != "" && u.Path != "/" && u.Path != "/0") || q.Has("db") {
		return nil, errors.New("a Redis Cluster has only database 0: leave out the /db path and the db parameter; " + want)
	}
	// A replica may answer with a state older than the room's latest
	// write, which the room would take for a store that went back.
	for _, p := range []string{"read_only", "route_by_latency", "route_randomly"} {
		if v := q.Get(p); v != "" && v != "false" && v != "0" {
			return nil, fmt.Errorf("%s=%s does not apply: it sends reads to replicas, which may not have the room's latest write yet; the store reads from the primaries", p, v)
		}
	}
	c := *u
	c.Scheme = strings.TrimSuffix(strings.ToLower(u.Scheme), "+cluster")
	c.Path, c.RawPath = "", ""
	return redis.ParseClusterURL(c.String())
}

// redactErr keeps u's password out of an error message from a driver's
// parser.
func redactErr(err error, u *url.URL) error {
	if p, ok := u.User.Password(); ok && p != "" && strings.Contains(err.Error(), p) {
		return errors.New(strings.ReplaceAll(err.Error(), p, "xxxxx"))
	}
	return err
}

// mysqlDSN translates mysql://user:password@host:port/db?params into the
// DSN of github.com/go-sql-driver/mysql, user:password@tcp(host:port)/db?params.
// The port defaults to 3306; params are the driver's own.
func mysqlDSN(u *url.URL) (string, error) {
	if u.Opaque != "" || u.Host == "" {
		return "", errors.New("no host; want mysql://user:password@host:port/db")
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return "", errors.New("want exactly one database name in the path: mysql://user:password@host:port/db")
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "3306"
	}
	cfg := mysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort(host, port)
	cfg.DBName = db
	dsn := cfg.FormatDSN()
	if u.RawQuery != "" {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + u.RawQuery
	}
	parsed, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", err
	}
	return parsed.FormatDSN(), nil
}

// sqliteDSN translates sqlite:///absolute/path?params into a
// modernc.org/sqlite DSN with a busy timeout and WAL (sqliteParams).
func sqliteDSN(u *url.URL) (string, error) {
	const want = "want sqlite:///absolute/path.db"
	switch {
	case u.Opaque != "":
		return "", fmt.Errorf("%q is not an absolute path; %s", u.Opaque, want)
	case u.Host != "":
		return "", fmt.Errorf("the path must be absolute (sqlite://%s... names a host); %s", u.Host, want)
	case u.Path == "" || !path.IsAbs(u.Path):
		return "", errors.New("no file path; " + want)
	case strings.HasSuffix(u.Path, "/"):
		return "", fmt.Errorf("%q is a directory; %s", u.Path, want)
	case strings.ContainsAny(u.Path, "?#"):
		return "", fmt.Errorf("the path %q holds '?' or '#', which SQLite DSNs cannot carry", u.Path)
	}
	dsn := "file:" + u.Path + "?" + sqliteParams
	if u.RawQuery != "" {
		dsn += "&" + u.RawQuery
	}
	return dsn, nil
}

// storeOptions are the flags that shape a store besides its URL.
type storeOptions struct {
	prefix       string // Redis key prefix
	table        string // SQL table
	createSchema bool   // create the SQL table if missing
}

// openStore connects to the store spec names. It returns the store and a
// function that closes it and the client under it. For SQL stores with
// createSchema it creates the table if it does not exist. Connection errors
// surface at the first sync, not here: database/sql and go-redis connect
// lazily.
func openStore(ctx context.Context, spec storeSpec, o storeOptions) (store.Store, func(), error) {
	switch spec.kind {
	case kindMemory:
		s := memstore.New()
		return s, func() { _ = s.Close() }, nil
	case kindRedis:
		// ContextTimeoutEnabled: a stalled server must not hold a sync
		// past its deadline.
		var c redis.UniversalClient
		if spec.cluster != nil {
			spec.cluster.ContextTimeoutEnabled = true
			c = redis.NewClusterClient(spec.cluster)
		} else {
			spec.redis.ContextTimeoutEnabled = true
			c = redis.NewClient(spec.redis)
		}
		s := redisstore.New(c, redisstore.Options{KeyPrefix: o.prefix})
		return s, func() { _ = s.Close(); _ = c.Close() }, nil
	}
	var db *sql.DB
	switch spec.kind {
	case kindPostgres:
		cfg, err := pgx.ParseConfig(spec.dsn)
		if err != nil {
			return nil, nil, err
		}
		db = stdlib.OpenDB(*cfg)
	case kindMySQL:
		cfg, err := mysql.ParseDSN(spec.dsn)
		if err != nil {
			return nil, nil, err
		}
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, nil, err
		}
		db = sql.OpenDB(conn)
	case kindSQLite:
		var err error
		if db, err = sql.Open("sqlite", spec.dsn); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, fmt.Errorf("unknown store kind %q", spec.kind)
	}
	s, err := sqlstore.New(db, spec.dialect(), sqlstore.Options{Table: o.table})
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	closeAll := func() { _ = s.Close(); _ = db.Close() }
	if o.createSchema {
		if err := s.CreateSchema(ctx); err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	return s, closeAll, nil
}

// storeHint says what to do about err, a failed first sync, in the terms of
// this command's flags, or returns "" when the store did not say what is
// wrong. The store's own error names the library's fix.
func storeHint(spec storeSpec, o storeOptions, err error) string {
	switch {
	case spec.redis != nil && isMoved(err):
		return "the server is a node of a Redis Cluster, which keeps the room's key on another node: " +
			"name the cluster with redis+cluster://host:port (rediss+cluster:// for TLS), host:port any of its nodes"
	case spec.cluster != nil && redis.HasErrorPrefix(err, "This instance has cluster support disabled"):
		return "the server is not a Redis Cluster: name it with redis://host:port/db (rediss:// for TLS)"
	case errors.Is(err, store.ErrNoSchema) && spec.sql():
		table := cmp.Or(o.table, sqlstore.DefaultTable)
		return fmt.Sprintf("the table %q does not exist: run once with -create-schema (createSchema: true in a config file), "+
			"or create it with:\n%s;", table, sqlstore.Schema(spec.dialect(), table))
	case errors.Is(err, store.ErrAuth):
		return "the store refused the credentials or a permission: check the user and password of -store (or WAITINGROOM_STORE) and the user's grants"
	case errors.Is(err, store.ErrUnavailable):
		reached := "the store cannot be reached"
		if derr := dialStore(spec); derr != nil {
			reached += " (" + derr.Error() + ")"
		}
		return reached + ": check that it runs and listens at the address of -store (or WAITINGROOM_STORE)"
	}
	return ""
}

// dialStore opens and closes a TCP connection to a Redis store's address
// (a Cluster's first), within a second, and returns the error if it
// failed: the client retries a refused connection until the sync's
// deadline, whose error then says only that the time ran out. It returns
// nil for the SQL stores, whose drivers report the dial's own error.
func dialStore(spec storeSpec) error {
	var addr string
	switch {
	case spec.redis != nil:
		addr = spec.redis.Addr
	case spec.cluster != nil && len(spec.cluster.Addrs) > 0:
		addr = spec.cluster.Addrs[0]
	default:
		return nil
	}
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// isMoved reports whether err holds a MOVED reply: a node of a Redis
// Cluster saying that another node serves the key.
func isMoved(err error) bool {
	_, ok := redis.IsMovedError(err)
	return ok
}

// Command waitingroom is a standalone reverse proxy that puts a virtual
// waiting room in front of any web application, whatever it is written in.
//
//	waitingroom -upstream http://127.0.0.1:3000 -total-active-users 200 -new-users-per-minute 200
//
// With -demo it serves a small built-in application instead of an
// upstream, so the queue can be seen with a few browsers:
//
//	go run ./cmd/waitingroom -demo -total-active-users 3 -new-users-per-minute 3
//
// The cookie key comes from -key or the WAITINGROOM_KEY environment variable
// (hex or base64, at least 32 bytes). Every instance of a room needs the
// same key. Without one, -demo generates a key for this process only.
//
// # Stores
//
// -store (default $WAITINGROOM_STORE, else memory) selects where the room's
// shared state lives. With memory, each process has a queue and limits of
// its own; every other store is shared by all the processes pointed at it,
// which then keep one queue and exact global limits:
//
//	memory                                   this process only (the default)
//	redis://[user:password@]host:port/db     Redis (rediss:// for TLS); -store-prefix sets the key prefix
//	postgres://user:password@host:port/db    PostgreSQL (pgx; URL parameters such as sslmode=disable are pgx's)
//	mysql://user:password@host:port/db       MySQL or MariaDB (URL parameters are go-sql-driver/mysql's)
//	sqlite:///absolute/path.db               SQLite, processes on one host
//
// SQL stores keep one row per room in the table -store-table. The proxy
// creates that table only when asked: -create-schema is true by default for
// SQLite (a file the proxy owns) and false for PostgreSQL and MySQL, whose
// schema is usually managed by migrations (sqlstore.Schema prints the
// statement). At start-up the proxy syncs once with the store and exits with
// status 1 if that fails, so a wrong address, a wrong password or a missing
// table shows at once; later outages follow the room's policy (fail-closed:
// admitted visitors keep passing, everyone else waits).
//
// A malformed -store URL, or a flag that does not apply to the chosen store,
// exits with status 2.
//
// # Endpoints outside the room
//
// -health-path (default /healthz) answers 200 "ok" to GET and HEAD without
// going through the room, so load balancers and orchestrators can probe the
// proxy even when the room is full. It reports that the process serves, not
// that the store is reachable: during a store outage the proxy still serves
// admitted visitors, and taking it out of rotation would not help. Set it
// to "" to pass that path to the upstream. With -demo, /active reports the
// sessions the demo application has seen (see the demo's documentation in
// demo.go).
//
// # Admin address
//
// -admin-listen (default off) serves, on its own address, the room's admin
// API and status page (Room.AdminHandler: GET /, /status, /history,
// /settings; PATCH /settings) and /metrics in the Prometheus text format,
// all behind the bearer token of -admin-token or WAITINGROOM_ADMIN_TOKEN
// (at least 16 bytes; the command refuses -admin-listen without one).
// Keep that address off the public network.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	redis.SetLogger(redisLog{slog.New(slog.NewTextHandler(os.Stderr, nil))})
	os.Exit(run(ctx, os.Args[1:], os.Stderr, nil))
}

// redisLog sends go-redis's own messages (one per failed dial, many a
// second during an outage) to the debug level: the room reports an outage
// itself, once when it starts and once when it ends.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}

// options are the command's flags.
type options struct {
	listen, upstream, name, method, key string
	demo                                bool
	total, perMinute, statusCode        int
	session, refresh, syncInterval      time.Duration
	healthPath                          string
	adminListen, adminToken             string
	store                               storeSpec
	storeOpts                           storeOptions
}

// errUsage marks errors in the command line: exit status 2.
var errUsage = errors.New("usage")

func parse(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("waitingroom", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to serve on")
	fs.StringVar(&o.upstream, "upstream", "", "URL of the application to protect")
	fs.BoolVar(&o.demo, "demo", false, "serve a built-in demo application instead of an upstream")
	fs.StringVar(&o.name, "name", "default", "room name (letters, digits, - and _)")
	fs.IntVar(&o.total, "total-active-users", 200, "most visitors active at once")
	fs.IntVar(&o.perMinute, "new-users-per-minute", 200, "most visitors let in per minute")
	fs.DurationVar(&o.session, "session-duration", waitingroom.DefaultSessionDuration, "how long an admitted visitor stays active after their latest request")
	fs.StringVar(&o.method, "queueing-method", "fifo", "fifo, random, passthrough or reject")
	fs.DurationVar(&o.refresh, "refresh-interval", waitingroom.DefaultRefreshInterval, "how often waiting visitors get a chance")
	fs.IntVar(&o.statusCode, "queueing-status-code", 200, "status of waiting responses: 200, 202 or 429")
	fs.StringVar(&o.key, "key", "", "cookie key, hex or base64, ≥ 32 bytes (default $WAITINGROOM_KEY)")
	fs.DurationVar(&o.syncInterval, "sync-interval", waitingroom.DefaultSyncInterval, "how often the room syncs with the store (> 0)")
	fs.StringVar(&o.healthPath, "health-path", "/healthz", `path answered with 200 "ok" outside the room ("" for none)`)
	fs.StringVar(&o.adminListen, "admin-listen", "", "address of the admin API, status page and /metrics (default off)")
	fs.StringVar(&o.adminToken, "admin-token", "", "bearer token for the admin address, ≥ 16 bytes (default $WAITINGROOM_ADMIN_TOKEN)")
	storeURL := fs.String("store", "", "where the shared state lives: "+storeHelp+" (default $WAITINGROOM_STORE, else memory)")
	fs.StringVar(&o.storeOpts.prefix, "store-prefix", redisstore.DefaultKeyPrefix, "Redis key prefix")
	fs.StringVar(&o.storeOpts.table, "store-table", sqlstore.DefaultTable, "SQL table")
	fs.BoolVar(&o.storeOpts.createSchema, "create-schema", false, "create the SQL table if it does not exist (default true for sqlite, false otherwise)")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if o.demo == (o.upstream != "") {
		return nil, fmt.Errorf("%w: give exactly one of -upstream URL and -demo", errUsage)
	}
	if o.key == "" {
		o.key = os.Getenv("WAITINGROOM_KEY")
	}
	if o.syncInterval <= 0 {
		return nil, fmt.Errorf("%w: -sync-interval must be > 0, got %v", errUsage, o.syncInterval)
	}
	if o.adminToken == "" {
		o.adminToken = os.Getenv("WAITINGROOM_ADMIN_TOKEN")
	}
	if o.adminListen != "" && o.adminToken == "" {
		return nil, fmt.Errorf("%w: -admin-listen needs -admin-token or WAITINGROOM_ADMIN_TOKEN: the admin API never runs without authentication", errUsage)
	}
	if o.healthPath != "" && !strings.HasPrefix(o.healthPath, "/") {
		return nil, fmt.Errorf("%w: -health-path %q must start with /", errUsage, o.healthPath)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["store"] {
		if *storeURL = os.Getenv("WAITINGROOM_STORE"); *storeURL == "" {
			*storeURL = string(kindMemory)
		}
	}
	var err error
	if o.store, err = parseStore(*storeURL); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if set["store-prefix"] && o.store.kind != kindRedis {
		return nil, fmt.Errorf("%w: -store-prefix applies to Redis stores only", errUsage)
	}
	if (set["store-table"] || set["create-schema"]) && !o.store.sql() {
		return nil, fmt.Errorf("%w: -store-table and -create-schema apply to SQL stores only", errUsage)
	}
	if o.store.sql() && sqlstore.Schema(o.store.dialect(), o.storeOpts.table) == "" {
		return nil, fmt.Errorf("%w: -store-table %q is not a plain identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63)", errUsage, o.storeOpts.table)
	}
	if !set["create-schema"] {
		o.storeOpts.createSchema = o.store.kind == kindSQLite
	}
	return o, nil
}

// decodeKey reads a key in hex or standard/URL base64.
func decodeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("the key is neither hex nor base64")
}

// run runs the command until ctx is done. ready, if not nil, receives the
// address served once listening (for tests). It returns the exit status.
func run(ctx context.Context, args []string, stderr io.Writer, ready chan<- string) int {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	o, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "waitingroom:", strings.TrimPrefix(err.Error(), "usage: "))
		}
		return 2
	}
	var key []byte
	switch {
	case o.key != "":
		if key, err = decodeKey(o.key); err != nil {
			fmt.Fprintln(stderr, "waitingroom: -key:", err)
			return 2
		}
	case o.demo:
		key = make([]byte, 32)
		_, _ = rand.Read(key)
		log.Warn("NO KEY GIVEN: using a random cookie key for this process only. " +
			"Visitors lose their place when it restarts, and other instances cannot read its cookies. " +
			"Set -key or WAITINGROOM_KEY (32+ random bytes, hex or base64) for anything but a demo.")
	default:
		fmt.Fprintln(stderr, "waitingroom: a cookie key is required: -key or WAITINGROOM_KEY (32+ random bytes, hex or base64)")
		return 2
	}

	var (
		app http.Handler
		dem *demo
	)
	if o.demo {
		dem = newDemo(o.session, time.Now)
		app = dem
	} else {
		u, err := url.Parse(o.upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fmt.Fprintf(stderr, "waitingroom: -upstream %q is not an http(s) URL\n", o.upstream)
			return 2
		}
		app = httputil.NewSingleHostReverseProxy(u)
	}

	cfg := waitingroom.Config{
		Name:               o.name,
		TotalActiveUsers:   o.total,
		NewUsersPerMinute:  o.perMinute,
		SessionDuration:    o.session,
		QueueingMethod:     waitingroom.QueueingMethod(strings.ToLower(o.method)),
		RefreshInterval:    o.refresh,
		QueueingStatusCode: o.statusCode,
		Keys:               [][]byte{key},
		SyncInterval:       o.syncInterval,
		Logger:             log,
	}
	// Validate the Config before connecting to anything: a bad flag is a
	// usage error whatever the store.
	check, err := waitingroom.New(withoutSync(cfg), nopStore{})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	_ = check.Close()

	startCtx, cancelStart := context.WithTimeout(ctx, startupTimeout)
	defer cancelStart()
	st, closeStore, err := openStore(startCtx, o.store, o.storeOpts)
	if err != nil {
		fmt.Fprintf(stderr, "waitingroom: store %s: %v\n", o.store.redacted, err)
		return 1
	}
	defer closeStore()
	room, err := waitingroom.New(cfg, st)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	defer room.Close()
	// The background sync has started; this one makes a store that cannot
	// be reached (or a missing table) fail the start-up, and gives the
	// room its first grant before the first visitor.
	if err := room.Sync(startCtx); err != nil {
		fmt.Fprintf(stderr, "waitingroom: store %s: first sync failed: %v\n", o.store.redacted, err)
		if o.store.sql() && !o.storeOpts.createSchema {
			fmt.Fprintf(stderr, "waitingroom: if the table %q does not exist, create it (-create-schema, or the statement of sqlstore.Schema)\n", o.storeOpts.table)
		}
		return 1
	}
	cancelStart()

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		fmt.Fprintln(stderr, "waitingroom:", err)
		return 1
	}
	srv := &http.Server{Handler: routes(o.healthPath, dem, room.Handler(app)), ReadHeaderTimeout: 10 * time.Second}
	log.Info("waitingroom: serving", "addr", "http://"+ln.Addr().String(), "demo", o.demo, "upstream", o.upstream,
		"store", o.store.redacted, "total_active_users", o.total, "new_users_per_minute", o.perMinute)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	if o.adminListen != "" {
		adminSrv, addr, err := serveAdmin(o.adminListen, o.adminToken, room, errc)
		if err != nil {
			fmt.Fprintln(stderr, "waitingroom: admin:", err)
			_ = srv.Close()
			return 1
		}
		defer adminSrv.Close()
		log.Info("waitingroom: admin API", "addr", "http://"+addr)
		if ready != nil {
			ready <- addr
		}
	}
	select {
	case err := <-errc:
		fmt.Fprintln(stderr, "waitingroom:", err)
		return 1
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintln(stderr, "waitingroom: shutdown:", err)
		return 1
	}
	return 0
}

// startupTimeout bounds connecting to the store, creating its table and the
// first sync.
const startupTimeout = 15 * time.Second

// routes serves the paths that stay outside the room (the health check and,
// with the demo, its /active report) and sends every other request through
// the room.
func routes(healthPath string, dem *demo, room http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case healthPath != "" && r.URL.Path == healthPath:
			health(w, r)
		case dem != nil && r.URL.Path == activePath:
			dem.report(w, r)
		default:
			room.ServeHTTP(w, r)
		}
	})
}

// health answers the health check: 200 "ok" while the process serves.
func health(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, "ok\n")
}

// withoutSync returns cfg with the background sync disabled, to validate it
// with a room that never runs.
func withoutSync(cfg waitingroom.Config) waitingroom.Config {
	cfg.SyncInterval = -1
	return cfg
}

// nopStore is a store that is never called: it only lets New validate a
// Config before the real store is opened.
type nopStore struct{}

func (nopStore) Update(context.Context, string, func(*store.State) error) error {
	return errors.New("nopStore: not a store")
}
func (nopStore) Close() error { return nil }

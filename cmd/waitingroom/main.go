// Command waitingroom is a standalone reverse proxy that puts a virtual
// waiting room in front of any web application, whatever it is written in.
//
//	waitingroom -upstream http://127.0.0.1:3000 -total-active-users 200 -new-users-per-minute 200
//	waitingroom -config /etc/waitingroom/room.yaml
//
// With -demo it serves a small built-in application instead of an
// upstream, so the queue can be seen with a few browsers:
//
//	go run ./cmd/waitingroom -demo -total-active-users 3 -new-users-per-minute 3
//
// waitingroom -h (or -help, --help) prints every flag with its default to
// standard output and exits with status 0; README.md in this directory is
// the manual.
//
// # Secrets
//
// The cookie keys come from -key, WAITINGROOM_KEYS or WAITINGROOM_KEY,
// never from the config file: each is a comma-separated list of keys (hex
// or base64, at least 32 bytes each, read by waitingroom.ParseKeys). The
// first key encrypts and every key decrypts, so keys rotate by putting a
// new key first and dropping the old one once the sessions it sealed have
// ended. Every instance of a room needs the same keys. Without any, -demo generates a key for this process
// only. The admin token comes from -admin-token or WAITINGROOM_ADMIN_TOKEN.
//
// # Config file
//
// -config names a JSON (.json) or YAML (.yaml, .yml) file holding any of
// the settings the flags give, under the flag's name in camelCase
// (totalActiveUsers for -total-active-users), durations as Go durations
// ("90s", "5m"), and the settings only a file gives: language,
// negotiateLanguage, cookieDomain, cookiePath, queueHold, trustedProxies,
// bypass and events. cmd/waitingroom/testdata/example.yaml in the
// repository documents every field. A flag
// given on the command line overrides the file. Relative paths in the file
// (templates) are relative to the file's directory. An unknown field, a
// value of the wrong type or a secret in the file exits with status 2 and
// a message naming the file, the line, the field and the reason.
//
// # Proxying
//
// The upstream gets X-Forwarded-For, X-Forwarded-Host and
// X-Forwarded-Proto (https with -https, which says the site is served over
// HTTPS even when TLS ends in front of this proxy; it also makes the
// room's cookie Secure and SameSite=None). A client's own X-Forwarded-*
// headers are dropped unless it connects from one of trustedProxies, in
// which case the proxy appends to them. -host original (the default)
// passes the client's Host header on; -host upstream sends the upstream's.
// Responses without a Content-Length (streams) and text/event-stream are
// flushed as they arrive; WebSocket and other upgrades pass through for
// admitted visitors, while waiting visitors get the waiting page. An
// upstream that cannot be reached gives 502 with no details; the log has
// them (at most one line a second). -template replaces the waiting page
// with a Mustache file.
//
// # Forward-auth
//
// With -forward-auth the command proxies nothing: it answers the auth
// requests of the server in front of the application (nginx
// auth_request, Caddy forward_auth, Traefik ForwardAuth, Envoy ext_authz,
// ingress-nginx auth-url) with package forwardauth: 200 to let a request
// through, the waiting page otherwise. -front-door (frontDoor in a file)
// names that server, and so the headers that describe the original
// request, which it sets itself: nginx, caddy, traefik and generic read
// X-Forwarded-Method, -Uri, -Host and -Proto, ingress-nginx reads
// X-Original-Method and X-Original-URL, envoy the auth request itself.
// It has no default: each server passes the visitor's own headers on, and
// the room must read only those the server overwrites. The server's
// address belongs in -trusted-proxies (trustedProxies in a file): those
// headers are read only from it. docs/forward-auth.md in the repository
// has each server's configuration. With $WAITINGROOM_PASS_SECRET set, an
// admitted visitor also gets a pass that nginx checks itself for
// -pass-duration (default 2s), sparing it most auth requests
// (forwardauth.Pass; the secret is the one in nginx's secure_link_md5).
//
// # Connections
//
// Both addresses (-listen and -admin-listen) bound what a client's
// connection can hold the proxy for, so that clients that connect and
// stall cannot use up its file descriptors:
//
//	-read-header-timeout  10s   a request's line and headers must arrive within it (> 0)
//	-idle-timeout         2m    a keep-alive connection waits this long for its next request (> 0)
//	-body-timeout         1m    a request body may pause this long before the connection is closed (0: none)
//	-read-timeout         0     a whole request, body included, must arrive within it (0: none)
//	-max-header-bytes     65536 larger request headers get 431
//
// -body-timeout, not -read-timeout, is what bounds bodies by default: it
// closes the connection of a client that stops sending, whether or not the
// body is forwarded (a waiting visitor's is not), and never cuts off an
// upload that keeps moving, however large. -read-timeout cuts off any
// request that takes longer to arrive, so set it only if the application
// takes no large uploads over slow links. The config file takes them as
// readHeaderTimeout, idleTimeout, bodyTimeout, readTimeout and
// maxHeaderBytes.
//
// # Stores
//
// -store (default $WAITINGROOM_STORE, else memory) selects where the room's
// shared state lives. With memory, each process has a queue and limits of
// its own; every other store is shared by all the processes pointed at it,
// which then keep one queue and exact global limits:
//
//	memory                                      this process only (the default)
//	redis://[user:password@]host:port/db        Redis (rediss:// for TLS); -store-prefix sets the key prefix
//	redis+cluster://[user:password@]host:port   Redis Cluster (rediss+cluster:// for TLS); -store-prefix as for Redis
//	postgres://user:password@host:port/db       PostgreSQL (pgx; URL parameters such as sslmode=disable are pgx's)
//	mysql://user:password@host:port/db          MySQL or MariaDB (URL parameters are go-sql-driver/mysql's)
//	sqlite:///absolute/path.db                  SQLite, processes on one host
//
// A Redis Cluster URL names one of the cluster's nodes, and more with
// addr parameters (redis+cluster://10.0.0.1:6379?addr=10.0.0.2:6379): the
// client learns the others from the first that answers. The other URL
// parameters are those of go-redis's ParseClusterURL (dial_timeout,
// pool_size, ...), but for read_only, route_by_latency and route_randomly,
// which would read the room's state from replicas that may lag behind its
// latest write. A Cluster has only database 0, so the URL has no /db. All
// of a room's keys share one hash slot (package redisstore's
// documentation), so a room lives on one primary and rooms spread over the
// primaries by name. With rediss+cluster://, every node's certificate is
// checked against the host name of the URL.
//
// A store URL in the config file comes before $WAITINGROOM_STORE; leave
// it out of the file to keep a password in the environment.
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
// /settings; PATCH /settings) and /metrics for Prometheus, all behind the
// bearer token of -admin-token or WAITINGROOM_ADMIN_TOKEN (at least 16
// bytes; the command refuses -admin-listen without one). Keep that address
// off the public network. /metrics carries the room's series exactly as
// the metrics module (github.com/go-waitingroom/waitingroom/metrics) gives
// them to a program embedding a room, and the Go runtime's (go_*) and the
// process's (process_*) series.
//
// # Stopping
//
// SIGINT or SIGTERM stops accepting connections at once and lets requests
// in flight finish (for up to 30 seconds) before the command exits with
// status 0.
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/forwardauth"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
	"github.com/go-waitingroom/waitingroom/template"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	redis.SetLogger(redisLog{slog.New(slog.NewTextHandler(os.Stderr, nil))})
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil))
}

// redisLog sends go-redis's own messages (one per failed dial, many a
// second during an outage) to the debug level: the room reports an outage
// itself, once when it starts and once when it ends.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}

// options are the command's settings: its flags, and the config file.
type options struct {
	configPath                          string
	listen, upstream, name, method, key string
	demo, https, forwardAuth            bool
	frontDoor                           string
	host                                string
	total, perMinute, statusCode        int
	session, refresh, syncInterval      time.Duration
	passDuration                        time.Duration
	passSecret                          string // $WAITINGROOM_PASS_SECRET
	healthPath                          string
	adminListen, adminToken             string
	storeURL                            string
	store                               storeSpec
	storeOpts                           storeOptions
	templatePath                        string
	limits                              connLimits

	// Settings only the config file gives.
	language                 string
	negotiateLanguage        bool
	cookieDomain, cookiePath string
	queueHold                time.Duration
	trustedProxies           []netip.Prefix
	bypass                   []waitingroom.Rule
	events                   []waitingroom.Event

	// Worked out from the settings.
	upstreamURL *url.URL
	template    string // the waiting page's source, read from templatePath

	// from says where the settings that the config file gave are in it,
	// by flag name (or, for the settings only the file gives, by field).
	from map[string]string
}

// label names where a setting comes from, for messages: the flag
// ("-total-active-users") or the file's position and field
// ("room.yaml:4:20: totalActiveUsers").
func (o *options) label(id string) string {
	if w, ok := o.from[id]; ok {
		return w
	}
	return "-" + id
}

// errUsage marks errors in the command line or the config file: exit
// status 2.
var errUsage = errors.New("usage")

func usage(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

// defaultLimit is the default of -total-active-users and
// -new-users-per-minute.
const defaultLimit = 200

// frontDoors are the values of -front-door, the servers in front, and
// the headers each describes the original request in.
var frontDoors = map[string]forwardauth.FrontDoor{
	"nginx":         forwardauth.Forwarded,
	"caddy":         forwardauth.Forwarded,
	"traefik":       forwardauth.Forwarded,
	"generic":       forwardauth.Forwarded,
	"ingress-nginx": forwardauth.IngressNginx,
	"envoy":         forwardauth.Envoy,
}

// frontDoorNames are the values of -front-door, for messages.
var frontDoorNames = []string{"nginx", "caddy", "traefik", "envoy", "ingress-nginx", "generic"}

// Values of -host.
const (
	hostOriginal = "original"
	hostUpstream = "upstream"
)

// newFlagSet returns the command's flags, which set o. The flag set
// prints nothing itself: parse and writeUsage do.
func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("waitingroom", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&o.configPath, "config", "", "JSON or YAML file of settings (.json, .yaml, .yml); flags given on the command line override it")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to serve on")
	fs.StringVar(&o.upstream, "upstream", "", "URL of the application to protect")
	fs.BoolVar(&o.demo, "demo", false, "serve a built-in demo application instead of an upstream")
	fs.BoolVar(&o.forwardAuth, "forward-auth", false, "answer the auth requests of a server in front of the application (nginx auth_request, Caddy forward_auth, Traefik, Envoy, ingress-nginx) instead of proxying to an upstream; needs -front-door")
	fs.StringVar(&o.frontDoor, "front-door", "", "with -forward-auth, the server in front, whose own headers describe the original request: "+strings.Join(frontDoorNames, ", ")+" (no default)")
	fs.DurationVar(&o.passDuration, "pass-duration", forwardauth.DefaultPassDuration, "with -forward-auth and $WAITINGROOM_PASS_SECRET: how long an admitted visitor's pass lasts, whole seconds, 1s to "+forwardauth.MaxPassDuration.String())
	fs.Var(prefixList{&o.trustedProxies}, "trusted-proxies", "comma-separated `networks` (CIDR) of the proxies in front, whose X-Forwarded-For (and, with -forward-auth, the headers of -front-door) is believed (default none)")
	fs.StringVar(&o.name, "name", "default", "room name (letters, digits, - and _)")
	fs.IntVar(&o.total, "total-active-users", defaultLimit, fmt.Sprintf("most visitors active at once, at most %d; given -new-users-per-minute alone, the default rises to it", waitingroom.MaxLimit))
	fs.IntVar(&o.perMinute, "new-users-per-minute", defaultLimit, "most visitors let in per minute, at most -total-active-users; given -total-active-users alone, the default falls to it")
	fs.DurationVar(&o.session, "session-duration", waitingroom.DefaultSessionDuration, "how long an admitted visitor stays active after their latest request")
	fs.StringVar(&o.method, "queueing-method", "fifo", "fifo, random, passthrough or reject")
	fs.DurationVar(&o.refresh, "refresh-interval", waitingroom.DefaultRefreshInterval, "how often waiting visitors get a chance")
	fs.IntVar(&o.statusCode, "queueing-status-code", 200, "status of waiting responses: 200, 202 or 429")
	fs.StringVar(&o.key, "key", "", "cookie keys, comma-separated, hex or base64, ≥ 32 bytes each; the first encrypts (default $WAITINGROOM_KEYS or $WAITINGROOM_KEY)")
	fs.DurationVar(&o.syncInterval, "sync-interval", waitingroom.DefaultSyncInterval, "how often the room syncs with the store (> 0)")
	fs.StringVar(&o.healthPath, "health-path", "/healthz", `path answered with 200 "ok" outside the room ("" for none)`)
	fs.StringVar(&o.adminListen, "admin-listen", "", "address of the admin API, status page and /metrics (default off)")
	fs.StringVar(&o.adminToken, "admin-token", "", "bearer token for the admin address, ≥ 16 bytes (default $WAITINGROOM_ADMIN_TOKEN)")
	fs.StringVar(&o.storeURL, "store", "", "where the shared state lives: "+storeHelp+" (default: the config file's store, else $WAITINGROOM_STORE, else memory)")
	fs.StringVar(&o.storeOpts.prefix, "store-prefix", redisstore.DefaultKeyPrefix, "Redis key prefix")
	fs.StringVar(&o.storeOpts.table, "store-table", sqlstore.DefaultTable, "SQL table")
	fs.BoolVar(&o.storeOpts.createSchema, "create-schema", false, "create the SQL table if it does not exist (default true for sqlite, false otherwise)")
	fs.BoolVar(&o.https, "https", false, "visitors reach the site over HTTPS, even if TLS ends before this proxy: Secure, SameSite=None cookie; X-Forwarded-Proto: https")
	fs.StringVar(&o.host, "host", hostOriginal, "Host header sent upstream: original (the client's) or upstream (the upstream URL's)")
	fs.StringVar(&o.templatePath, "template", "", "Mustache file of the waiting page (default: the built-in page)")
	fs.DurationVar(&o.limits.readHeader, "read-header-timeout", defaultReadHeaderTimeout, "the longest a client may take to send a request's headers; > 0")
	fs.DurationVar(&o.limits.idle, "idle-timeout", defaultIdleTimeout, "how long a keep-alive connection stays open waiting for its next request; > 0")
	fs.DurationVar(&o.limits.body, "body-timeout", defaultBodyTimeout, "the longest a request body may stall before the connection is closed (0: none); an upload that keeps moving is never cut off")
	fs.DurationVar(&o.limits.read, "read-timeout", 0, "the longest a whole request, body included, may take to arrive (0: none); it cuts off uploads that take longer")
	fs.IntVar(&o.limits.maxHeaderBytes, "max-header-bytes", defaultMaxHeaderBytes, "the most bytes of a request's line and headers, > 0; larger get 431")
	return fs
}

// usageHeader comes before the flags in the usage text.
const usageHeader = `Usage:
  waitingroom -upstream URL [flags]   put a waiting room in front of URL
  waitingroom -demo [flags]           the same, in front of a built-in demo application
  waitingroom -forward-auth -front-door SERVER [flags]
                                      the auth service of the server in front: nginx, caddy,
                                      traefik, envoy, ingress-nginx or generic
  waitingroom -config FILE [flags]    with the settings in a JSON or YAML file

The cookie keys come from -key, $WAITINGROOM_KEYS or $WAITINGROOM_KEY
(hex or base64, 32+ random bytes each, the same on every instance).

Flags:
`

// writeUsage writes the usage text of -h: how to run the command and
// every flag with its default.
func writeUsage(w io.Writer) {
	fs := newFlagSet(&options{})
	fs.SetOutput(w)
	_, _ = io.WriteString(w, usageHeader)
	fs.PrintDefaults()
}

// flagError is an error in the flags themselves (an unknown flag, a value
// that does not parse), after which the usage is worth a look. It is a
// usage error.
type flagError struct{ err error }

func (e flagError) Error() string   { return errUsage.Error() + ": " + e.err.Error() }
func (e flagError) Unwrap() []error { return []error{errUsage, e.err} }

// parse reads the flags of args and the config file they name. With -h,
// -help or --help it writes the usage to help and returns flag.ErrHelp.
func parse(args []string, help io.Writer) (*options, error) {
	o := &options{from: map[string]string{}}
	fs := newFlagSet(o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeUsage(help)
			return nil, flag.ErrHelp
		}
		return nil, flagError{err}
	}
	if fs.NArg() > 0 {
		return nil, usage("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.configPath != "" {
		vals, err := loadConfigFile(o.configPath)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		for _, v := range vals {
			if v.flag && set[v.id] {
				continue // the command line overrides the file
			}
			v.set(o)
			set[v.id] = true
			o.from[v.id] = v.where
		}
	}
	if err := o.check(set); err != nil {
		return nil, err
	}
	return o, nil
}

// check validates the settings, whether they came from flags or from the
// file, and works out what follows from them. set holds the flags given
// on the command line or in the file.
func (o *options) check(set map[string]bool) error {
	modes := 0
	for _, on := range []bool{o.demo, o.upstream != "", o.forwardAuth} {
		if on {
			modes++
		}
	}
	if modes != 1 {
		if modes > 1 {
			var given []string
			for _, m := range []struct {
				id string
				on bool
			}{{"upstream", o.upstream != ""}, {"demo", o.demo}, {"forward-auth", o.forwardAuth}} {
				if m.on {
					given = append(given, o.label(m.id))
				}
			}
			if len(given) == 2 {
				return usage("give exactly one of %s and %s, not both", given[0], given[1])
			}
			return usage("give exactly one of %s, not all three", strings.Join(given, ", "))
		}
		return usage("give exactly one of -upstream URL, -demo and -forward-auth (or upstream, demo or forwardAuth in a config file)")
	}
	switch _, ok := frontDoors[o.frontDoor]; {
	case o.forwardAuth && o.frontDoor == "":
		return usage("%s needs -front-door (frontDoor in a config file), the server in front: %s", o.label("forward-auth"), strings.Join(frontDoorNames, ", "))
	case o.forwardAuth && !ok:
		return usage("%s %q: want one of %s", o.label("front-door"), o.frontDoor, strings.Join(frontDoorNames, ", "))
	case !o.forwardAuth && set["front-door"]:
		return usage("%s applies to -forward-auth only", o.label("front-door"))
	}
	if o.upstream != "" {
		u, err := url.Parse(o.upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usage("%s %q is not an http(s) URL", o.label("upstream"), o.upstream)
		}
		o.upstreamURL = u
	}
	switch {
	case o.host != hostOriginal && o.host != hostUpstream:
		return usage("%s %q: want %s or %s", o.label("host"), o.host, hostOriginal, hostUpstream)
	case o.upstream == "" && set["host"]:
		return usage("%s applies to an upstream only, not to -demo or -forward-auth", o.label("host"))
	}
	if o.syncInterval <= 0 {
		return usage("%s must be > 0, got %v", o.label("sync-interval"), o.syncInterval)
	}
	if err := o.checkLimits(); err != nil {
		return err
	}
	if o.adminToken == "" {
		o.adminToken = os.Getenv("WAITINGROOM_ADMIN_TOKEN")
	}
	if o.adminListen != "" && o.adminToken == "" {
		return usage("%s needs -admin-token or WAITINGROOM_ADMIN_TOKEN: the admin API never runs without authentication", o.label("admin-listen"))
	}
	o.passSecret = os.Getenv("WAITINGROOM_PASS_SECRET")
	switch {
	case o.passSecret != "" && !o.forwardAuth:
		return usage("WAITINGROOM_PASS_SECRET is for -forward-auth: only a server in front can check a pass")
	case o.passSecret == "" && set["pass-duration"]:
		return usage("%s needs WAITINGROOM_PASS_SECRET, the secret of nginx's secure_link_md5", o.label("pass-duration"))
	}
	if err := o.pass().Validate(); err != nil {
		return usage("%s or WAITINGROOM_PASS_SECRET: %v", o.label("pass-duration"), err)
	}
	if o.healthPath != "" && !strings.HasPrefix(o.healthPath, "/") {
		return usage("%s %q must start with /", o.label("health-path"), o.healthPath)
	}
	storeLabel := o.label("store")
	if !set["store"] {
		storeLabel = "WAITINGROOM_STORE"
		if o.storeURL = os.Getenv("WAITINGROOM_STORE"); o.storeURL == "" {
			o.storeURL = string(kindMemory)
		}
	}
	var err error
	if o.store, err = parseStore(storeLabel, o.storeURL); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if set["store-prefix"] && o.store.kind != kindRedis {
		return usage("%s applies to Redis stores only", o.label("store-prefix"))
	}
	for _, id := range []string{"store-table", "create-schema"} {
		if set[id] && !o.store.sql() {
			return usage("%s: -store-table and -create-schema apply to SQL stores only", o.label(id))
		}
	}
	if o.store.sql() && sqlstore.Schema(o.store.dialect(), o.storeOpts.table) == "" {
		return usage("%s %q is not a plain identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63)", o.label("store-table"), o.storeOpts.table)
	}
	if !set["create-schema"] {
		o.storeOpts.createSchema = o.store.kind == kindSQLite
	}
	if o.templatePath != "" {
		src, err := readLimited(o.templatePath)
		if err != nil {
			return usage("%s: %v", o.label("template"), err)
		}
		if _, err := template.Parse(string(src)); err != nil {
			return usage("%s %s does not parse: %v", o.label("template"), o.templatePath, err)
		}
		o.template = string(src)
	}
	return o.checkRoom(set)
}

// checkLimits checks the connection limits.
func (o *options) checkLimits() error {
	for _, c := range []struct {
		id string
		d  time.Duration
		// why 0 is refused; "" if 0 means none
		why string
	}{
		{"read-header-timeout", o.limits.readHeader, "a client that never finishes its headers would hold its connection for ever"},
		{"idle-timeout", o.limits.idle, "an idle keep-alive connection would stay open for ever"},
		{"body-timeout", o.limits.body, ""},
		{"read-timeout", o.limits.read, ""},
	} {
		switch {
		case c.why != "" && c.d <= 0:
			return usage("%s must be > 0, got %v: %s", o.label(c.id), c.d, c.why)
		case c.d < 0:
			return usage("%s must be ≥ 0 (0 for none), got %v", o.label(c.id), c.d)
		}
	}
	if o.limits.maxHeaderBytes <= 0 {
		return usage("%s must be > 0, got %d", o.label("max-header-bytes"), o.limits.maxHeaderBytes)
	}
	return nil
}

// checkRoom checks the room's settings one by one, so that an error names
// the flag or the field of the file at fault, and then the two that
// depend on each other. set holds the flags given on the command line or
// in the file.
func (o *options) checkRoom(set map[string]bool) error {
	for _, c := range []struct {
		id  string
		set func(*waitingroom.Config)
	}{
		{"name", func(c *waitingroom.Config) { c.Name = o.name }},
		{"total-active-users", func(c *waitingroom.Config) { c.TotalActiveUsers = o.total }},
		{"new-users-per-minute", func(c *waitingroom.Config) { c.NewUsersPerMinute = o.perMinute }},
		{"session-duration", func(c *waitingroom.Config) { c.SessionDuration = o.session }},
		{"queueing-method", func(c *waitingroom.Config) { c.QueueingMethod = o.queueingMethod() }},
		{"refresh-interval", func(c *waitingroom.Config) { c.RefreshInterval = o.refresh }},
		{"queueing-status-code", func(c *waitingroom.Config) { c.QueueingStatusCode = o.statusCode }},
		{"language", func(c *waitingroom.Config) { c.Language = o.language }},
		{"queueHold", func(c *waitingroom.Config) { c.QueueHold = o.queueHold }},
	} {
		if err := probe(c.set); err != nil {
			return usage("%s: %s", o.label(c.id), reason(err))
		}
	}
	// A limit given alone keeps the other at its default where that fits,
	// and otherwise moves it as far as the pair needs: -total-active-users
	// 100 alone lets in at most 100 a minute, -new-users-per-minute 500
	// alone lets 500 be active at once.
	switch {
	case set["total-active-users"] && !set["new-users-per-minute"]:
		o.perMinute = min(o.perMinute, o.total)
	case set["new-users-per-minute"] && !set["total-active-users"]:
		o.total = max(o.total, o.perMinute)
	}
	if o.perMinute > o.total {
		return usage("%s (%d) must not exceed %s (%d)", o.label("new-users-per-minute"), o.perMinute, o.label("total-active-users"), o.total)
	}
	refresh := cmp.Or(o.refresh, waitingroom.DefaultRefreshInterval)
	if hold := cmp.Or(o.queueHold, waitingroom.DefaultQueueHold); hold < 2*refresh {
		if _, ok := o.from["queueHold"]; !ok {
			return usage("%s (%v) is more than half the default queue hold (%v): set queueHold in a config file to at least twice it",
				o.label("refresh-interval"), refresh, hold)
		}
		return usage("%s (%v) must be at least twice %s (%v)", o.label("queueHold"), hold, o.label("refresh-interval"), refresh)
	}
	return nil
}

func (o *options) queueingMethod() waitingroom.QueueingMethod {
	return waitingroom.QueueingMethod(strings.ToLower(o.method))
}

// roomConfig is the room's Config.
func (o *options) roomConfig(keys [][]byte, log *slog.Logger) waitingroom.Config {
	return waitingroom.Config{
		Name:               o.name,
		TotalActiveUsers:   o.total,
		NewUsersPerMinute:  o.perMinute,
		SessionDuration:    o.session,
		QueueingMethod:     o.queueingMethod(),
		Events:             o.events,
		RefreshInterval:    o.refresh,
		QueueHold:          o.queueHold,
		QueueingStatusCode: o.statusCode,
		HTTPS:              o.https,
		CookieDomain:       o.cookieDomain,
		CookiePath:         o.cookiePath,
		Keys:               keys,
		Template:           o.template,
		Language:           o.language,
		NegotiateLanguage:  o.negotiateLanguage,
		Bypass:             o.bypass,
		TrustedProxies:     o.trustedProxies,
		SyncInterval:       o.syncInterval,
		Logger:             log,
	}
}

// forwardAuthOptions are the forward-auth handler's options: the server
// in front, and passes when there is a secret.
func (o *options) forwardAuthOptions() forwardauth.Options {
	return forwardauth.Options{FrontDoor: frontDoors[o.frontDoor], Pass: o.pass()}
}

// pass is the forward-auth handler's Pass: none without a secret.
func (o *options) pass() forwardauth.Pass {
	if o.passSecret == "" {
		return forwardauth.Pass{}
	}
	return forwardauth.Pass{Secret: o.passSecret, Duration: o.passDuration}
}

// run runs the command until ctx is done. The usage of -h goes to stdout,
// everything else to stderr. ready, if not nil, receives the address
// served once listening (for tests). It returns the exit status: 0 after
// -h or a clean stop, 1 when serving fails, 2 for a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) int {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	o, err := parse(args, stdout)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "waitingroom:", strings.TrimPrefix(err.Error(), "usage: "))
		if errors.As(err, new(flagError)) {
			fmt.Fprintln(stderr, "Run waitingroom -h for the flags.")
		}
		return 2
	}
	keys, err := cookieKeys(o.key)
	switch {
	case err != nil:
		fmt.Fprintln(stderr, err)
		return 2
	case keys == nil && o.demo:
		keys = [][]byte{make([]byte, 32)}
		_, _ = rand.Read(keys[0])
		log.Warn("NO KEY GIVEN: using a random cookie key for this process only. " +
			"Visitors lose their place when it restarts, and other instances cannot read its cookies. " +
			"Set -key or WAITINGROOM_KEY (32+ random bytes, hex or base64) for anything but a demo.")
	case keys == nil:
		fmt.Fprintln(stderr, "waitingroom: a cookie key is required: -key, WAITINGROOM_KEY or WAITINGROOM_KEYS (32+ random bytes, hex or base64)")
		return 2
	}

	var (
		app http.Handler
		dem *demo
	)
	switch {
	case o.demo:
		dem = newDemo(o.session, time.Now)
		app = dem
	case o.upstreamURL != nil:
		p := newProxy(o.upstreamURL, o.host == hostUpstream, o.https, o.trustedProxies, log)
		defer p.Transport.(*http.Transport).CloseIdleConnections()
		app = p
	}

	cfg := o.roomConfig(keys, log)
	// Validate the Config before connecting to anything: a bad setting is
	// a usage error whatever the store.
	check, err := waitingroom.New(withoutSync(cfg), nopStore{})
	if err != nil {
		if o.configPath != "" {
			fmt.Fprintf(stderr, "waitingroom: %s and the command line: %v\n", o.configPath, err)
		} else {
			fmt.Fprintln(stderr, err)
		}
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
	var gate http.Handler
	if o.forwardAuth {
		// The passes' hold is checked against the room's SyncInterval: a
		// usage error, as the Config's.
		fa := o.forwardAuthOptions()
		if gate, err = forwardauth.New(room, fa); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		if len(o.trustedProxies) == 0 && fa.FrontDoor != forwardauth.Envoy {
			log.Warn("waitingroom: -forward-auth without -trusted-proxies: the headers of the server in front are ignored, so bypass rules see the auth request's own path", "front_door", o.frontDoor)
		}
	} else {
		gate = room.Handler(app)
	}
	// The background sync has started: its first sync makes a store that
	// cannot be reached, refuses the credentials or lacks its table fail
	// the start-up, and gives the room its first grant before the first
	// visitor.
	if err := room.Ready(startCtx); err != nil {
		fmt.Fprintf(stderr, "waitingroom: store %s: first sync failed: %v\n", o.store.redacted, err)
		if hint := storeHint(o.store, o.storeOpts, err); hint != "" {
			fmt.Fprintln(stderr, "waitingroom:", hint)
		}
		return 1
	}
	cancelStart()

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		fmt.Fprintln(stderr, "waitingroom:", err)
		return 1
	}
	srv := o.limits.server(routes(o.healthPath, dem, gate), log)
	log.Info("waitingroom: serving", "addr", "http://"+ln.Addr().String(), "demo", o.demo, "forward_auth", o.forwardAuth, "front_door", o.frontDoor, "upstream", o.upstream,
		"store", o.store.redacted, "total_active_users", o.total, "new_users_per_minute", o.perMinute, "config", o.configPath)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	if o.adminListen != "" {
		adminSrv, addr, err := serveAdmin(o.adminListen, o.adminToken, room, o.limits, log, errc)
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
	// Shutdown closes the listener at once, so new connections are
	// refused, and waits for the requests in flight.
	log.Info("waitingroom: stopping; finishing the requests in flight")
	shutdown, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintln(stderr, "waitingroom: shutdown:", err)
		return 1
	}
	return 0
}

// shutdownTimeout bounds how long requests in flight may take to finish
// once the command is asked to stop.
const shutdownTimeout = 30 * time.Second

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

// prefixList is the value of -trusted-proxies: comma-separated networks.
type prefixList struct{ p *[]netip.Prefix }

func (l prefixList) String() string {
	if l.p == nil {
		return ""
	}
	s := make([]string, len(*l.p))
	for i, p := range *l.p {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func (l prefixList) Set(v string) error {
	var out []netip.Prefix
	for c := range strings.SplitSeq(v, ",") {
		if c = strings.TrimSpace(c); c == "" {
			continue
		}
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return fmt.Errorf("want networks such as 10.0.0.0/8,2001:db8::/32, got %q", c)
		}
		out = append(out, p)
	}
	*l.p = out
	return nil
}

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
// The demo command (cmd/waitingroom/demo) is that demo alone, without the
// stores' drivers, the metrics and the rest of the proxy, so that its
// first build is a fraction of the proxy's, which compiles every driver.
//
// waitingroom -h (or -help, --help) prints every flag with its default to
// standard output and exits with status 0, as -version does with the
// version the binary was built as; README.md in this directory is the
// manual. The exit status is 0 after -h, -version or a clean stop, 1 when
// the store cannot be reached at start-up or serving fails, and 2 for
// anything wrong in what was given (flags, keys, token, secret, file).
//
// The built-in page speaks each visitor's language (Accept-Language)
// unless -negotiate-language=false.
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
// cookieDomain, cookiePath, queueHold, bypass and events. cmd/waitingroom/testdata/example.yaml in the
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
// to "" to pass that path to the upstream.
//
// -lottery-path (default "", off) serves the room's lottery records to
// anyone, without credentials, as admin.Records does: GET without a
// query answers the current, next and latest revealed periods' records
// ({"current","next","revealed"}), and ?at= (RFC 3339 or Unix seconds)
// the record of the period that holds that time, so visitors can check
// their draws with waitingroom verify. Where admission is a draw, the
// waiting page links to the record of the period in progress (the path
// with ?at= its start; lotteryRecords in its JSON). Off, the path goes
// through the room. It is matched exactly, and must differ from
// -health-path.
// With -forward-auth, the server in front must send that path to this
// address for visitors to reach it.
//
// With -demo, /active reports the sessions the demo application has seen
// (see package internal/demoapp).
//
// # Admin address
//
// -admin-listen (default off) serves, on its own address, the room's admin
// API and status page (Room.AdminHandler: GET /, /status, /history,
// /settings; PATCH /settings) and /metrics for Prometheus, all behind the
// bearer token of -admin-token or WAITINGROOM_ADMIN_TOKEN (at least 16
// bytes; -admin-listen without one, or with a shorter one, exits with
// status 2). Keep that address
// off the public network. /metrics carries the room's series exactly as
// the metrics module (github.com/go-waitingroom/waitingroom/metrics) gives
// them to a program embedding a room, and the Go runtime's (go_*) and the
// process's (process_*) series.
//
// # Checking the lottery
//
// waitingroom verify -id IDENTITY [-waited ...] [-shown ...] [-admitted N]
// [-shuffled [-rank N]] [RECORD] proxies nothing: it checks a visitor's
// draws, place and rank against a room's lottery record (package
// lottery), read as JSON from the file RECORD or from standard input,
// prints them and "kept" with status 0, or what the room broke with
// status 1; status 2 for a bad flag or record. waitingroom verify -h
// lists its flags.
//
// # Stopping
//
// SIGINT or SIGTERM stops accepting connections at once and lets requests
// in flight finish (for up to 30 seconds) before the command exits with
// status 0.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
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

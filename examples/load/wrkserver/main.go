// Command wrkserver serves a 12-byte body on a loopback address, bare or
// behind a waiting room, as the target of load generators (wrk, ../load):
//
//	go run ./load/wrkserver -mode bare   # the application alone
//	go run ./load/wrkserver -mode memory # behind a room, store/memstore
//	go run ./load/wrkserver -mode redis  # behind a room, store/redisstore at -redis
//
// To measure the admitted path, get a cookie once and send it with every
// request:
//
//	cookie=$(curl -si http://127.0.0.1:8090/ | sed -n 's/^Set-Cookie: \([^;]*\).*/\1/p')
//	wrk -t2 -c64 -d10s -H "Cookie: $cookie" http://127.0.0.1:8090/
//
// The room's limits default to 100,000 visitors, so that every visitor of
// a benchmark is let in; lower them (-total-active-users,
// -new-users-per-minute) to watch visitors queue. A cookie is re-issued at
// most once a minute: get a fresh one for each run, or the room re-issues
// it on every request of a client that never stores it (as wrk does not).
//
// With -upstream URL the application is a reverse proxy to URL instead of
// the 12-byte body, set up like cmd/waitingroom's: -mode bare -upstream URL
// is the same proxy without a room, the baseline for cmd/waitingroom
// -upstream.
//
// # Flags
//
//	-listen ADDR                a loopback address to serve on (default 127.0.0.1:8090)
//	-mode bare|memory|redis     what stands in front of the application (default bare)
//	-redis URL                  the Redis of -mode redis (default $WAITINGROOM_REDIS_URL, else redis://127.0.0.1:6379/0)
//	-name NAME                  the room's name (default wrkserver-<random>, so runs never share state)
//	-total-active-users N       most visitors active at once (default 100000)
//	-new-users-per-minute N     most visitors let in per minute (default 100000)
//	-upstream URL               proxy to URL instead of serving the 12-byte body
//	-cpuprofile FILE            write a CPU profile of the whole run to FILE (on SIGINT or SIGTERM)
//
// The cookie key comes from WAITINGROOM_KEY (hex, 32+ bytes); without it
// the program makes one up for the process and says so.
package main

import (
	"context"
	"crypto/rand"
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
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/demo"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
)

func main() {
	o, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wrkserver:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, log); err != nil {
		log.Error("wrkserver: " + err.Error())
		os.Exit(1)
	}
}

// body is what the application answers: 12 bytes.
var body = []byte("hello world\n")

// Modes of the server.
const (
	modeBare   = "bare"
	modeMemory = "memory"
	modeRedis  = "redis"
)

// redisKeyPrefix starts the Redis keys of this program's rooms.
const redisKeyPrefix = "waitingroom:wrkserver:"

// options are the command's flags.
type options struct {
	listen, mode, redisURL, name, upstream, cpuprofile string
	total, perMinute                                   int
}

// parse reads the command line; errors are usage errors.
func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("wrkserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	defaultRedis := os.Getenv("WAITINGROOM_REDIS_URL")
	if defaultRedis == "" {
		defaultRedis = "redis://127.0.0.1:6379/0"
	}
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8090", "a loopback address to serve on")
	fs.StringVar(&o.mode, "mode", modeBare, "what stands in front of the application: bare, memory or redis")
	fs.StringVar(&o.redisURL, "redis", defaultRedis, "the Redis of -mode redis")
	fs.StringVar(&o.name, "name", "", "the room's name (default wrkserver-<random>)")
	fs.IntVar(&o.total, "total-active-users", 100_000, "most visitors active at once")
	fs.IntVar(&o.perMinute, "new-users-per-minute", 100_000, "most visitors let in per minute")
	fs.StringVar(&o.upstream, "upstream", "", "proxy to this URL instead of serving the 12-byte body")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file (on SIGINT or SIGTERM)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch o.mode {
	case modeBare, modeMemory, modeRedis:
	default:
		return o, fmt.Errorf("-mode %q: want bare, memory or redis", o.mode)
	}
	host, _, err := net.SplitHostPort(o.listen)
	if err != nil {
		return o, fmt.Errorf("-listen: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return o, fmt.Errorf("-listen %q: serve on a loopback address only", o.listen)
	}
	if o.name == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.name = "wrkserver-" + hex.EncodeToString(b[:])
	}
	return o, nil
}

// newApp returns the application: the 12-byte body, or a reverse proxy to
// upstream when it is set.
func newApp(upstream string) (http.Handler, error) {
	if upstream == "" {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }), nil
	}
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("-upstream %q is not an http(s) URL", upstream)
	}
	// Built as cmd/waitingroom builds its proxy, so that the two differ
	// only by the room: X-Forwarded-* headers, the client's Host, and
	// enough idle connections to the upstream that a busy proxy does not
	// dial for most requests (the default transport keeps 2).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 512, 512
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host
		},
		Transport: tr,
	}, nil
}

// newHandler returns the server's handler for o's mode, and a function
// that releases what it holds. In the room modes it syncs once with the
// store, so that a store that cannot be reached fails the start.
func newHandler(ctx context.Context, o options, key []byte, log *slog.Logger) (http.Handler, func(), error) {
	app, err := newApp(o.upstream)
	if err != nil {
		return nil, nil, err
	}
	if o.mode == modeBare {
		return app, func() {}, nil
	}
	var (
		st      store.Store
		release = func() {}
	)
	switch o.mode {
	case modeMemory:
		st = memstore.New()
	case modeRedis:
		ropts, err := redis.ParseURL(o.redisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("-redis: %w", err)
		}
		client := redis.NewClient(ropts)
		st = redisstore.New(client, redisstore.Options{KeyPrefix: redisKeyPrefix, TTL: 10 * time.Minute})
		release = func() { _ = client.Close() }
	}
	room, err := waitingroom.New(waitingroom.Config{
		Name: o.name,
		Settings: waitingroom.Settings{
			TotalActiveUsers:  o.total,
			NewUsersPerMinute: o.perMinute,
		},
		Keys:   [][]byte{key},
		Logger: log,
	}, st)
	if err != nil {
		release()
		return nil, nil, err
	}
	closeAll := func() { _ = room.Close(); _ = st.Close(); release() }
	syncCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := room.Sync(syncCtx); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("first sync with the %s store: %w", o.mode, err)
	}
	return room.Handler(app), closeAll, nil
}

// run serves until ctx is done.
func run(ctx context.Context, o options, log *slog.Logger) error {
	key, err := demo.Key(log)
	if err != nil {
		return err
	}
	h, release, err := newHandler(ctx, o, key, log)
	if err != nil {
		return err
	}
	defer release()
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	log.Info("wrkserver", "mode", o.mode, "room", o.name, "upstream", o.upstream)
	return demo.Serve(ctx, o.listen, h, log)
}

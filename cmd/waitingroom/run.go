package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/cmd/waitingroom/internal/demoapp"
	"github.com/go-waitingroom/waitingroom/forwardauth"
)

// The exit statuses of run, as the manual's table (README.md, "Exit
// status and signals") gives them.
const (
	// exitOK: after -h or -version, or a clean stop.
	exitOK = 0
	// exitFailure: the store cannot be reached (or its table is
	// missing) at start-up, an address cannot be listened on, serving
	// fails.
	exitFailure = 1
	// exitUsage: a bad flag, URL, key, token, secret or config file,
	// found before anything is served.
	exitUsage = 2
)

// run runs the command until ctx is done. The usage of -h and the version
// of -version go to stdout, everything else to stderr. ready, if not nil,
// receives the address served once listening (for tests). It returns the
// exit status: exitOK, exitFailure or exitUsage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) int {
	if len(args) > 0 && args[0] == "verify" {
		return runVerify(args[1:], os.Stdin, stdout, stderr)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	o, err := parse(args, stdout)
	switch {
	case errors.Is(err, flag.ErrHelp), errors.Is(err, errVersion):
		return exitOK
	case err != nil:
		fmt.Fprintln(stderr, "waitingroom:", strings.TrimPrefix(err.Error(), "usage: "))
		if errors.As(err, new(flagError)) {
			fmt.Fprintln(stderr, "Run waitingroom -h for the flags.")
		}
		return exitUsage
	}
	return o.serve(ctx, log, stderr, ready)
}

// serve starts the room the settings describe, in front of its
// application, and serves it until ctx is done. It returns run's exit
// status, and writes why it fails to stderr.
func (o *options) serve(ctx context.Context, log *slog.Logger, stderr io.Writer, ready chan<- string) int {
	keys, err := o.keys(log)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	app, dem, closeApp := o.app(log)
	defer closeApp()
	cfg := o.roomConfig(keys, log)
	// Validate the Config before connecting to anything: a bad setting is
	// a usage error whatever the store.
	if err := o.validate(cfg); err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}

	startCtx, cancelStart := context.WithTimeout(ctx, startupTimeout)
	defer cancelStart()
	st, closeStore, err := openStore(startCtx, o.store, o.storeOpts)
	if err != nil {
		if ctx.Err() != nil {
			log.Info("waitingroom: stopped before serving")
			return exitOK
		}
		fmt.Fprintf(stderr, "waitingroom: store %s: %v\n", o.store.redacted, err)
		return exitFailure
	}
	defer closeStore()
	room, err := waitingroom.New(cfg, st)
	if err != nil {
		fmt.Fprintln(stderr, "waitingroom:", reason(err))
		return exitUsage
	}
	defer room.Close()
	gate, err := o.gate(room, app, log)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	o.warnUnchecked(log)
	// The background sync has started: its first sync makes a store that
	// cannot be reached, refuses the credentials or lacks its table fail
	// the start-up, and gives the room its first grant before the first
	// visitor.
	err = room.Ready(startCtx)
	if ctx.Err() != nil {
		// SIGINT or SIGTERM during the start-up, whether or not the first
		// sync was over by then: a clean stop, before serving.
		log.Info("waitingroom: stopped before serving")
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "waitingroom: store %s: first sync failed: %v\n", o.store.redacted, err)
		if hint := storeHint(o.store, o.storeOpts, err); hint != "" {
			fmt.Fprintln(stderr, "waitingroom:", hint)
		}
		return exitFailure
	}
	cancelStart()

	out := outside{healthPath: o.healthPath, lotteryPath: o.lotteryPath, lottery: admin.Records(room), demo: dem}
	return o.listenAndServe(ctx, routes(out, gate), room, log, stderr, ready)
}

// keys returns the cookie keys given (cookieKeys). With -demo and none
// given, it makes a random key for this process only, and warns.
func (o *options) keys(log *slog.Logger) ([][]byte, error) {
	keys, err := cookieKeys(o.key)
	switch {
	case err != nil:
		return nil, err
	case keys == nil && o.demo:
		keys = [][]byte{make([]byte, 32)}
		_, _ = rand.Read(keys[0])
		log.Warn("NO KEY GIVEN: using a random cookie key for this process only. " +
			"Visitors lose their place when it restarts, and other instances cannot read its cookies. " +
			"Set -key or WAITINGROOM_KEY (32+ random bytes, hex or base64) for anything but a demo.")
	case keys == nil:
		return nil, errors.New("waitingroom: a cookie key is required: -key, WAITINGROOM_KEY or WAITINGROOM_KEYS (32+ random bytes, hex or base64)")
	}
	return keys, nil
}

// warnUnchecked warns, at start, of a lottery whose visitors cannot
// check it: a random room, or an event that shuffles its pre-queue,
// without -lottery-path. Its pages show the commitment, and nothing
// serves the record with the seed revealed (docs/lottery.md).
func (o *options) warnUnchecked(log *slog.Logger) {
	if o.lotteryPath != "" {
		return
	}
	shuffles := slices.ContainsFunc(o.events, func(e waitingroom.Event) bool { return e.ShuffleAtStart })
	if o.queueingMethod() == waitingroom.Random || shuffles {
		log.Warn("waitingroom: a lottery without -lottery-path: the waiting page shows the commitment to its seed, but nothing serves the record that reveals it, so visitors cannot check their draw; set -lottery-path to a path beside the application's", "method", o.method, "shuffled_event", shuffles)
	}
}

// app returns the application the room is in front of: with -demo, the
// demo (dem too, for its report), with -upstream the proxy to it, and
// with -forward-auth none, as the command proxies nothing. closeApp
// closes the proxy's idle connections.
func (o *options) app(log *slog.Logger) (app http.Handler, dem *demoapp.App, closeApp func()) {
	switch {
	case o.demo:
		dem = demoapp.New(o.session, time.Now)
		return dem, dem, func() {}
	case o.upstreamURL != nil:
		p := newProxy(o.upstreamURL, o.host == hostUpstream, o.https, o.trustedProxies, log)
		return p, nil, p.Transport.(*http.Transport).CloseIdleConnections
	}
	return nil, nil, func() {}
}

// validate checks cfg with a room that never runs and has no store. Its
// error names the config file, if there is one.
func (o *options) validate(cfg waitingroom.Config) error {
	check, err := waitingroom.New(withoutSync(cfg), nopStore{})
	if err != nil {
		if o.configPath != "" {
			return fmt.Errorf("waitingroom: %s and the command line: %s", o.configPath, reason(err))
		}
		return fmt.Errorf("waitingroom: %s", reason(err))
	}
	_ = check.Close()
	return nil
}

// gate returns what requests go through: with -forward-auth, the handler
// of the auth requests, else the room in front of app.
func (o *options) gate(room *waitingroom.Room, app http.Handler, log *slog.Logger) (http.Handler, error) {
	if !o.forwardAuth {
		return room.Handler(app), nil
	}
	// The passes' hold is checked against the room's SyncInterval: a
	// usage error, as the Config's.
	fa := o.forwardAuthOptions()
	gate, err := forwardauth.New(room, fa)
	if err != nil {
		return nil, fmt.Errorf("waitingroom: %s and %s: %s", o.label("pass-duration"), o.label("sync-interval"), reason(err))
	}
	if o.frontDoor == "nginx" && strings.Contains(o.name, "-") {
		// nginx reads "$cookie___waitingroom_a-b" as "$cookie___waitingroom_a"
		// and "-b": the cookie maps of docs/forward-auth/nginx would see
		// no cookie, or every visitor's as one.
		log.Warn("waitingroom: nginx cannot read a cookie whose name has '-' in a $cookie_ variable: name the room with letters, digits and _ if nginx reads the room's cookies (a pass, or the answers it keeps: docs/forward-auth/nginx.md)", "name", o.name)
	}
	if len(o.trustedProxies) == 0 && fa.FrontDoor != forwardauth.Envoy {
		log.Warn("waitingroom: -forward-auth without -trusted-proxies: the headers of the server in front are ignored, so bypass rules see the auth request's own path", "front_door", o.frontDoor)
	}
	return gate, nil
}

// listenAndServe serves h on -listen, and the admin address on
// -admin-listen if given, until ctx is done or serving fails, and then
// stops. It returns run's exit status, and writes why it fails to stderr.
func (o *options) listenAndServe(ctx context.Context, h http.Handler, room *waitingroom.Room, log *slog.Logger, stderr io.Writer, ready chan<- string) int {
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		fmt.Fprintln(stderr, "waitingroom:", err)
		return exitFailure
	}
	srv := o.limits.server(h, log)
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
			return exitFailure
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
		return exitFailure
	case <-ctx.Done():
	}
	return stop(srv, log, stderr)
}

// stop stops srv: Shutdown closes the listener at once, so new
// connections are refused, and waits for the requests in flight. It
// returns run's exit status.
func stop(srv *http.Server, log *slog.Logger, stderr io.Writer) int {
	log.Info("waitingroom: stopping; finishing the requests in flight")
	shutdown, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintln(stderr, "waitingroom: shutdown:", err)
		return exitFailure
	}
	return exitOK
}

// shutdownTimeout bounds how long requests in flight may take to finish
// once the command is asked to stop.
const shutdownTimeout = 30 * time.Second

// startupTimeout bounds connecting to the store, creating its table and the
// first sync.
const startupTimeout = 15 * time.Second

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
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/forwardauth"
)

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

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

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr, nil))
}

// options are the command's flags.
type options struct {
	listen, upstream, name, method, key string
	demo                                bool
	total, perMinute, statusCode        int
	session, refresh                    time.Duration
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

	var app http.Handler
	if o.demo {
		app = newDemo(o.session)
	} else {
		u, err := url.Parse(o.upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fmt.Fprintf(stderr, "waitingroom: -upstream %q is not an http(s) URL\n", o.upstream)
			return 2
		}
		app = httputil.NewSingleHostReverseProxy(u)
	}

	room, err := waitingroom.New(waitingroom.Config{
		Name:               o.name,
		TotalActiveUsers:   o.total,
		NewUsersPerMinute:  o.perMinute,
		SessionDuration:    o.session,
		QueueingMethod:     waitingroom.QueueingMethod(strings.ToLower(o.method)),
		RefreshInterval:    o.refresh,
		QueueingStatusCode: o.statusCode,
		Keys:               [][]byte{key},
		Logger:             log,
	}, memstore.New())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	defer room.Close()

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		fmt.Fprintln(stderr, "waitingroom:", err)
		return 1
	}
	srv := &http.Server{Handler: room.Handler(app), ReadHeaderTimeout: 10 * time.Second}
	log.Info("waitingroom: serving", "addr", "http://"+ln.Addr().String(), "demo", o.demo, "upstream", o.upstream,
		"total_active_users", o.total, "new_users_per_minute", o.perMinute)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
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

// Command demo shows the waiting room in a browser: the room, in memory,
// in front of the demo application of the proxy's -demo. Open
// http://127.0.0.1:8080 in four browsers or private windows; the fourth
// waits:
//
//	go run ./cmd/waitingroom/demo -total-active-users 3 -new-users-per-minute 3
//
// It is waitingroom -demo (cmd/waitingroom) without the rest of the
// proxy: no store but memory, no config file, no admin address, no
// forward-auth. It links none of the stores' drivers (SQLite's alone is
// most of the proxy's first build) and none of the metrics, so that its
// first build, on a machine that has never built the project, takes a
// third of the proxy's: 60 CPU-seconds against 180 on this project's
// 2-core machine, most of it the standard library's (a program of
// net/http alone takes 54).
//
// The cookie key is random, for this process only. The built-in page
// speaks each visitor's language (Accept-Language). /active, outside the
// room, reports the sessions the demo application has seen. SIGINT or
// SIGTERM stops it, letting requests in flight finish. The exit status is
// 0 after -h or a stop, 1 when it cannot serve, 2 for a bad flag.
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
	"os/signal"
	"syscall"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/cmd/waitingroom/internal/demoapp"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/template"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil))
}

// settings are the demo's flags: those of the proxy that shape what the
// demo shows, with the proxy's defaults.
type settings struct {
	listen            string
	total, perMinute  int
	session, refresh  time.Duration
	method            string
	negotiateLanguage bool
}

func flags(s *settings) *flag.FlagSet {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.StringVar(&s.listen, "listen", "127.0.0.1:8080", "address to serve on")
	fs.IntVar(&s.total, "total-active-users", 200, "most visitors active at once")
	fs.IntVar(&s.perMinute, "new-users-per-minute", 200, "most visitors let in per minute, at most -total-active-users")
	fs.DurationVar(&s.session, "session-duration", 5*time.Minute, "how long an admitted visitor stays active after their latest request")
	fs.DurationVar(&s.refresh, "refresh-interval", 20*time.Second, "how often waiting visitors get a chance")
	fs.StringVar(&s.method, "queueing-method", "fifo", "fifo, random, passthrough or reject")
	fs.BoolVar(&s.negotiateLanguage, "negotiate-language", true, "let each visitor's Accept-Language choose the page's language")
	return fs
}

// run runs the demo until ctx is done and returns the exit status. The
// usage of -h goes to stdout, everything else to stderr. ready, if not
// nil, receives the address served once listening (for tests).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) int {
	var s settings
	fs := flags(&s)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			_, _ = io.WriteString(stdout, "Usage: demo [flags]   the waiting room, in memory, in front of a demo application\n\nFlags:\n")
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintln(stderr, "demo:", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "demo: unexpected arguments %q\n", fs.Args())
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	room, err := waitingroom.New(waitingroom.Config{
		Name: "default",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  s.total,
			NewUsersPerMinute: s.perMinute,
			SessionDuration:   s.session,
			QueueingMethod:    waitingroom.QueueingMethod(s.method),
		},
		RefreshInterval: s.refresh,
		Page:            template.Options{NegotiateLanguage: s.negotiateLanguage},
		Keys:            [][]byte{key},
		Logger:          log,
	}, memstore.New())
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 2
	}
	defer room.Close()
	// The first sync gives the room its first admissions.
	if err := room.Ready(ctx); err != nil {
		if ctx.Err() != nil {
			return 0
		}
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}

	app := demoapp.New(s.session, time.Now)
	mux := http.NewServeMux()
	mux.HandleFunc(demoapp.ActivePath, app.Report)
	mux.Handle("/", room.Handler(app))
	ln, err := net.Listen("tcp", s.listen)
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	log.Info("demo: serving; the cookie key is random, for this process only",
		"addr", "http://"+ln.Addr().String(), "total_active_users", s.total, "new_users_per_minute", s.perMinute)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintln(stderr, "demo: shutdown:", err)
		return 1
	}
	return 0
}

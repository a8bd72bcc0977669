// Package demo holds what every example program needs besides its
// framework: the cookie key and a server that stops cleanly on Ctrl-C.
package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// KeyEnv is the environment variable holding the cookie key, in hex.
const KeyEnv = "WAITINGROOM_KEY"

// ErrNoKey is returned by KeyFromEnv when KeyEnv is unset.
var ErrNoKey = errors.New(KeyEnv + " is not set: give 32 or more random bytes in hex, e.g. from `openssl rand -hex 32`")

// KeyFromEnv returns the cookie key from KeyEnv, which must hold at least
// 32 bytes in hex. It returns ErrNoKey when the variable
// is unset or empty.
func KeyFromEnv() ([]byte, error) {
	s := strings.TrimSpace(os.Getenv(KeyEnv))
	if s == "" {
		return nil, ErrNoKey
	}
	key, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%s is not hex: %w", KeyEnv, err)
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("%s holds %d bytes; the key needs at least 32", KeyEnv, len(key))
	}
	return key, nil
}

// Key returns the cookie key from KeyEnv or, when it is unset, a random key
// for this process only, with a warning on log: visitors then lose their
// place when the process restarts, and no other instance can read its
// cookies. A key that is set but invalid is an error, never replaced.
func Key(log *slog.Logger) ([]byte, error) {
	key, err := KeyFromEnv()
	if !errors.Is(err, ErrNoKey) {
		return key, err
	}
	key = make([]byte, 32)
	_, _ = rand.Read(key)
	log.Warn("NO KEY GIVEN: using a random cookie key for this process only, FOR A DEMO. " +
		"Visitors lose their place when it restarts and other instances cannot read its cookies. " +
		"Set " + KeyEnv + " (32+ random bytes in hex) for anything else.")
	return key, nil
}

// Greeting is what the example applications answer: to an admitted visitor
// (ok), the time their ticket says they were let in, in UTC and RFC 3339;
// to a request the room let through uncounted (not ok, the room is
// suspended), that the room is off.
func Greeting(t waitingroom.Ticket, ok bool) string {
	if !ok {
		return "Welcome! The waiting room is off.\n"
	}
	return fmt.Sprintf("Welcome! You were let in at %s.\n", t.AcceptedAt.UTC().Format(time.RFC3339))
}

// Serve serves h on addr until ctx is done, then shuts down, letting
// requests in flight finish for up to five seconds. It logs the address it
// listens on (useful with port 0).
func Serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Info("listening", "url", "http://"+ln.Addr().String()+"/")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Main is the whole main function of an example program: it reads the
// -listen, -total-active-users and -new-users-per-minute flags, builds a
// room on the in-memory store with the key from Key, serves
// newServer(room) until SIGINT or SIGTERM, and exits 1 on an error. name
// prefixes its log lines.
func Main(name string, newServer func(room *waitingroom.Room) http.Handler) {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	total := flag.Int("total-active-users", 3, "most visitors active at once")
	perMinute := flag.Int("new-users-per-minute", 3, "most visitors let in per minute")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *listen, *total, *perMinute, newServer, log); err != nil {
		log.Error(name + ": " + err.Error())
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, listen string, total, perMinute int, newServer func(*waitingroom.Room) http.Handler, log *slog.Logger) error {
	key, err := Key(log)
	if err != nil {
		return err
	}
	room, err := waitingroom.New(waitingroom.Config{
		Name: "demo",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  total,
			NewUsersPerMinute: perMinute,
		},
		Keys:   [][]byte{key},
		Logger: log,
	}, memstore.New())
	if err != nil {
		return err
	}
	defer room.Close()
	return Serve(ctx, listen, newServer(room), log)
}

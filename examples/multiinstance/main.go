// Command multiinstance is one instance of a site whose waiting room is
// shared through Redis: start it twice, on two ports or two machines, and
// both instances let visitors in from one queue, within one pair of limits.
//
//	export WAITINGROOM_KEY=$(openssl rand -hex 32) # the same on every instance
//	go run ./multiinstance -listen 127.0.0.1:8081 -id A &
//	go run ./multiinstance -listen 127.0.0.1:8082 -id B &
//
// watch.sh does this and shows with curl that the instances share the
// queue. Every instance needs the same cookie key, so that a visitor let in
// by one is known to the others: this program refuses to start without
// WAITINGROOM_KEY.
//
// Each instance answers with an X-Instance header naming it. /healthz
// (ready once the instance has synced with Redis) and /stats (the room's
// shared counts, as JSON) are outside the room; keep /stats internal on a
// real site.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/demo"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, os.Args[1:], log); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage, printed
		}
		log.Error("multiinstance: " + err.Error())
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	listen, redisURL, name, id, keyPrefix string
	total, perMinute                      int
	ttl, syncInterval                     time.Duration
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("multiinstance", flag.ContinueOnError)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8081", "address to serve on")
	fs.StringVar(&o.id, "id", "", "name of this instance in the X-Instance header (default: the -listen address)")
	fs.StringVar(&o.redisURL, "redis", "redis://127.0.0.1:6379/0", "Redis URL, shared by every instance")
	fs.StringVar(&o.name, "name", "shared", "room name (letters, digits, - and _), the same on every instance")
	fs.StringVar(&o.keyPrefix, "key-prefix", redisstore.DefaultKeyPrefix, "prefix of the room's Redis key")
	fs.IntVar(&o.total, "total-active-users", 1, "most visitors active at once, over all instances")
	fs.IntVar(&o.perMinute, "new-users-per-minute", 1, "most visitors let in per minute, over all instances")
	fs.DurationVar(&o.ttl, "ttl", redisstore.DefaultTTL, "how long Redis keeps the room's state after its latest update")
	fs.DurationVar(&o.syncInterval, "sync-interval", time.Second, "how often the instance syncs with Redis")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.id == "" {
		o.id = o.listen
	}
	return o, nil
}

func run(ctx context.Context, args []string, log *slog.Logger) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	key, err := demo.KeyFromEnv()
	if err != nil {
		return fmt.Errorf("every instance needs the same cookie key: %w", err)
	}
	ropts, err := redis.ParseURL(o.redisURL)
	if err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	ropts.ContextTimeoutEnabled = true // a stalled server must not hold a sync past its deadline
	client := redis.NewClient(ropts)
	defer client.Close()
	ping, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := client.Ping(ping).Err(); err != nil {
		return fmt.Errorf("redis at %s: %w", o.redisURL, err)
	}
	room, st, err := newRoom(o, key, client, log.With("instance", o.id))
	if err != nil {
		return err
	}
	defer st.Close()
	defer room.Close()
	return demo.Serve(ctx, o.listen, newServer(room, o.id), log.With("instance", o.id))
}

// newRoom returns the instance's room, keeping its state in Redis through
// client, and the store (to close after the room).
func newRoom(o options, key []byte, client redis.UniversalClient, log *slog.Logger) (*waitingroom.Room, *redisstore.Store, error) {
	st := redisstore.New(client, redisstore.Options{KeyPrefix: o.keyPrefix, TTL: o.ttl})
	room, err := waitingroom.New(waitingroom.Config{
		Name: o.name,
		Settings: waitingroom.Settings{
			TotalActiveUsers:  o.total,
			NewUsersPerMinute: o.perMinute,
		},
		Keys:         [][]byte{key},
		SyncInterval: o.syncInterval,
		Logger:       log,
	}, st)
	if err != nil {
		_ = st.Close()
		return nil, nil, err
	}
	return room, st, nil
}

// stats is what /stats shows: the room as this instance last saw it.
type stats struct {
	Instance  string `json:"instance"`
	Instances int    `json:"instances"`
	Active    int    `json:"active"`
	Waiting   int    `json:"waiting"`
}

// newServer returns the instance's site: /healthz and /stats outside the
// room, everything else behind it, and an X-Instance header on every
// response.
func newServer(room *waitingroom.Room, id string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if room.Stats().Synced.IsZero() {
			http.Error(w, "not synced with Redis yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		s := room.Stats()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(stats{Instance: id, Instances: s.Instances, Active: s.Active, Waiting: s.Waiting})
	})
	mux.Handle("/", room.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, ok := waitingroom.TicketFrom(w)
		_, _ = io.WriteString(w, demo.Greeting(t, ok))
	})))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Instance", id)
		mux.ServeHTTP(w, r)
	})
}

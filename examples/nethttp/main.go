// Command nethttp puts a waiting room in front of a plain net/http
// application. /healthz stays outside the room, so load balancers always
// reach it.
//
//	go run ./nethttp -listen 127.0.0.1:8080
//
// Open http://127.0.0.1:8080 in four private windows: the fourth waits.
// The cookie key comes from WAITINGROOM_KEY (hex, 32+ bytes); without it
// the program makes one up for a demo and says so.
package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/examples/internal/demo"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	total := flag.Int("total-active-users", 3, "most visitors active at once")
	perMinute := flag.Int("new-users-per-minute", 3, "most visitors let in per minute")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *listen, *total, *perMinute, log); err != nil {
		log.Error("nethttp: " + err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, listen string, total, perMinute int, log *slog.Logger) error {
	key, err := demo.Key(log)
	if err != nil {
		return err
	}
	room, err := waitingroom.New(waitingroom.Config{
		Name:              "demo",
		TotalActiveUsers:  total,
		NewUsersPerMinute: perMinute,
		Keys:              [][]byte{key},
		Logger:            log,
	}, memstore.New())
	if err != nil {
		return err
	}
	defer room.Close()
	return demo.Serve(ctx, listen, newServer(room), log)
}

// newServer returns the site: /healthz outside the room, everything else
// behind it.
func newServer(room *waitingroom.Room) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.Handle("/", room.Handler(http.HandlerFunc(home)))
	return mux
}

// home is the application: it greets the admitted visitor with their ticket.
func home(w http.ResponseWriter, r *http.Request) {
	t, ok := waitingroom.TicketFromContext(r.Context())
	_, _ = io.WriteString(w, demo.Greeting(t, ok))
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	_, _ = io.WriteString(w, "ok\n")
}

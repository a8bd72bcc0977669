// Command echo puts a waiting room in front of an Echo application:
// echo.WrapMiddleware(room.Handler) is Echo middleware, for e.Use or, as
// here, for a group, so that /healthz stays outside the room.
//
//	go run ./echo -listen 127.0.0.1:8080
//
// The cookie key comes from WAITINGROOM_KEY (hex, 32+ bytes); without it
// the program makes one up for a demo and says so.
package main

import (
	"context"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/labstack/echo/v4"

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
		log.Error("echo: " + err.Error())
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
// behind it. With no route to keep outside, e.Use(...) does the same for
// the whole application.
func newServer(room *waitingroom.Room) http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/healthz", healthz)
	site := e.Group("")
	site.Use(echo.WrapMiddleware(room.Handler))
	site.GET("/", home)
	return e
}

// home is the application: it greets the admitted visitor with their ticket.
func home(c echo.Context) error {
	t, ok := waitingroom.TicketFromContext(c.Request().Context())
	return c.String(http.StatusOK, demo.Greeting(t, ok))
}

func healthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

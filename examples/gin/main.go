// Command gin puts a waiting room in front of a gin application through
// the small adapter package wrgin. /healthz is routed outside the group the
// room guards.
//
//	go run ./gin -listen 127.0.0.1:8080
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

	"github.com/gin-gonic/gin"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/examples/internal/demo"
	"github.com/go-waitingroom/waitingroom/examples/wrgin"
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
		log.Error("gin: " + err.Error())
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
	r := gin.New()
	r.Use(gin.Recovery())
	r.GET("/healthz", healthz)
	site := r.Group("/", wrgin.Middleware(room))
	site.GET("/", home)
	return r
}

// home is the application: it greets the admitted visitor with their ticket.
func home(c *gin.Context) {
	t, ok := waitingroom.TicketFromContext(c.Request.Context())
	c.String(http.StatusOK, demo.Greeting(t, ok))
}

func healthz(c *gin.Context) {
	c.String(http.StatusOK, "ok\n")
}

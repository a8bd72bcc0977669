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
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/demo"
)

func main() { demo.Main("echo", newServer) }

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
	t, ok := waitingroom.TicketFrom(c.Response())
	return c.String(http.StatusOK, demo.Greeting(t, ok))
}

func healthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

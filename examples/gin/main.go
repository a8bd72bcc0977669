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
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/demo"
	"github.com/go-waitingroom/waitingroom/wrgin"
)

func main() { demo.Main("gin", newServer) }

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
	t, ok := waitingroom.TicketFrom(c.Writer)
	c.String(http.StatusOK, demo.Greeting(t, ok))
}

func healthz(c *gin.Context) {
	c.String(http.StatusOK, "ok\n")
}

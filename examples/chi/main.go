// Command chi puts a waiting room in front of a chi router. The room's
// Handler method is chi middleware as it is: r.Use(room.Handler).
// /healthz is routed outside the group the room guards.
//
//	go run ./chi -listen 127.0.0.1:8080
//
// The cookie key comes from WAITINGROOM_KEY (hex, 32+ bytes); without it
// the program makes one up for a demo and says so.
package main

import (
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/demo"
)

func main() { demo.Main("chi", newServer) }

// newServer returns the site: /healthz outside the room, everything else
// behind it.
func newServer(room *waitingroom.Room) http.Handler {
	r := chi.NewRouter()
	r.Get("/healthz", healthz)
	r.Group(func(r chi.Router) {
		r.Use(room.Handler)
		r.Get("/", home)
	})
	return r
}

// home is the application: it greets the admitted visitor with their ticket.
func home(w http.ResponseWriter, r *http.Request) {
	t, ok := waitingroom.TicketFrom(w)
	_, _ = io.WriteString(w, demo.Greeting(t, ok))
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	_, _ = io.WriteString(w, "ok\n")
}

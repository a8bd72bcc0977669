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
	"io"
	"net/http"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/demo"
)

func main() { demo.Main("nethttp", newServer) }

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
	t, ok := waitingroom.TicketFrom(w)
	_, _ = io.WriteString(w, demo.Greeting(t, ok))
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	_, _ = io.WriteString(w, "ok\n")
}

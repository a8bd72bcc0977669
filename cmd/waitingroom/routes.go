package main

import (
	"io"
	"net/http"

	"github.com/go-waitingroom/waitingroom/cmd/waitingroom/internal/demoapp"
)

// outside are the handlers of the paths that stay outside the room, each
// matched exactly; an empty path is not served.
type outside struct {
	healthPath  string
	lotteryPath string
	lottery     http.Handler // the room's lottery records (admin.Records)
	demo        *demoapp.App // with -demo, for its /active report
}

// routes serves the paths that stay outside the room (the health check,
// the lottery's records and, with the demo, its /active report) and sends
// every other request through the room: with -forward-auth, to the
// handler of the auth requests.
func routes(out outside, room http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case out.healthPath != "" && r.URL.Path == out.healthPath:
			health(w, r)
		case out.lotteryPath != "" && r.URL.Path == out.lotteryPath:
			out.lottery.ServeHTTP(w, r)
		case out.demo != nil && r.URL.Path == demoapp.ActivePath:
			out.demo.Report(w, r)
		default:
			room.ServeHTTP(w, r)
		}
	})
}

// health answers the health check: 200 "ok" while the process serves.
func health(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, "ok\n")
}

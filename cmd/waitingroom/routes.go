package main

import (
	"io"
	"net/http"

	"github.com/go-waitingroom/waitingroom/cmd/waitingroom/internal/demoapp"
)

// routes serves the paths that stay outside the room (the health check and,
// with the demo, its /active report) and sends every other request through
// the room.
func routes(healthPath string, dem *demoapp.App, room http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case healthPath != "" && r.URL.Path == healthPath:
			health(w, r)
		case dem != nil && r.URL.Path == demoapp.ActivePath:
			dem.Report(w, r)
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

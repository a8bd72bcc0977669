package main

import (
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/metrics"
)

// serveAdmin serves the room's admin API and status page, and /metrics, on
// their own address, all behind the bearer token, with the connection
// limits of the public address. Serve errors go to errc.
func serveAdmin(addr, token string, room *waitingroom.Room, limits connLimits, log *slog.Logger, errc chan<- error) (*http.Server, string, error) {
	h, err := adminHandler(token, room, log)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	srv := limits.server(h, log)
	go func() {
		if err := srv.Serve(ln); err != http.ErrServerClosed {
			errc <- err
		}
	}()
	return srv, ln.Addr().String(), nil
}

// adminHandler serves the room's admin API and status page
// (admin.Handler) and, at /metrics, metricsHandler, all behind the bearer
// token; a browser signs in to the status page with it (admin.SignIn).
func adminHandler(token string, room *waitingroom.Room, log *slog.Logger) (http.Handler, error) {
	auth, err := admin.BearerToken(token)
	if err != nil {
		return nil, err
	}
	ah, err := admin.Handler(room, auth, admin.SignIn(token))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", ah)
	mux.Handle("/metrics", metricsHandler(auth, room, log))
	return mux, nil
}

// metricsHandler serves, in the Prometheus formats, the room's figures as
// the metrics module's collector gives them to every program that embeds
// a room (the same series, names and meanings), and the figures of this
// process: the Go runtime's (go_*) and the process's own (process_*, such
// as open file descriptors and resident memory), which a standalone proxy
// has nobody else to export. It uses a registry of its own, never the
// global one.
func metricsHandler(auth admin.Authenticator, room *waitingroom.Room, log *slog.Logger) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		metrics.NewCollector(room),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError),
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if !auth(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="waitingroom"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

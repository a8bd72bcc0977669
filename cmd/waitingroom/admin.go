package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
)

// serveAdmin serves the room's admin API and status page, and /metrics, on
// their own address, all behind the bearer token, with the connection
// limits of the public address. Serve errors go to errc.
func serveAdmin(addr, token string, room *waitingroom.Room, limits connLimits, log *slog.Logger, errc chan<- error) (*http.Server, string, error) {
	auth, err := admin.BearerToken(token)
	if err != nil {
		return nil, "", err
	}
	ah, err := admin.Handler(room, auth)
	if err != nil {
		return nil, "", err
	}
	mux := http.NewServeMux()
	mux.Handle("/", ah)
	mux.Handle("/metrics", metricsHandler(auth, room))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	srv := limits.server(mux, log)
	go func() {
		if err := srv.Serve(ln); err != http.ErrServerClosed {
			errc <- err
		}
	}()
	return srv, ln.Addr().String(), nil
}

// metricsHandler writes the room's figures in the Prometheus text format
// (version 0.0.4). It carries the figures of the metrics module's
// collector that a scrape of one process needs; a Go service embedding the
// room registers that collector instead.
func metricsHandler(auth admin.Authenticator, room *waitingroom.Room) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !auth(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="waitingroom"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		writeMetrics(w, room)
	})
}

func writeMetrics(w io.Writer, room *waitingroom.Room) {
	s, c := room.Stats(), room.Counters()
	label := fmt.Sprintf(`{room=%q}`, room.Name())
	metric := func(name, kind, help string, v float64) {
		fmt.Fprintf(w, "# HELP waitingroom_%s %s\n# TYPE waitingroom_%s %s\nwaitingroom_%s%s %s\n",
			name, help, name, kind, name, label, strings.TrimSuffix(fmt.Sprintf("%.6f", v), ".000000"))
	}
	wait := -1.0
	if s.Estimate.Known {
		wait = s.Estimate.Wait.Seconds()
	}
	metric("active_visitors", "gauge", "Admitted visitors whose session is alive, in the whole room.", float64(s.Active))
	metric("waiting_visitors", "gauge", "Visitors waiting and refreshing, in the whole room.", float64(s.Waiting))
	metric("admitted_this_minute", "gauge", "Visitors let in this minute, in the whole room.", float64(s.AdmittedThisMinute))
	metric("outflow_per_minute", "gauge", "Recent admissions per minute.", s.OutflowPerMinute)
	metric("estimated_wait_seconds", "gauge", "Estimated wait of a visitor arriving now; -1 when unknown.", wait)
	metric("instances", "gauge", "Instances sharing the room.", float64(s.Instances))
	metric("admitted_total", "counter", "Visitors this instance let in.", float64(c.Admitted))
	metric("queued_total", "counter", "Visitors who joined the queue at this instance.", float64(c.Queued))
	metric("revoked_total", "counter", "Sessions the application ended at this instance.", float64(c.Revoked))
	metric("bypassed_total", "counter", "Requests a bypass rule let through at this instance.", float64(c.Bypassed))
	metric("syncs_total", "counter", "Syncs with the store this instance attempted.", float64(c.Syncs))
	metric("sync_errors_total", "counter", "Syncs with the store that failed.", float64(c.SyncErrors))
	metric("last_sync_duration_seconds", "gauge", "How long the latest sync took.", c.LastSyncSeconds)
}

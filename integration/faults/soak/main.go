// Command soak runs the waiting room for minutes under churn and reports
// whether it stays healthy: memory and goroutines flat, the limits held,
// no 5xx. scripts/soak.sh builds cmd/waitingroom and runs it; it talks to
// 127.0.0.1 only.
//
// It starts -procs cmd/waitingroom processes (-bin) in front of an
// upstream application of its own, sharing the Redis at -redis under a key
// prefix of their own (deleted at the end), and sends -visitors virtual
// visitors at them, arriving over the first 80 % of the run. Visitors keep
// their cookies and pick a process at random for every request; waiting
// ones come back when the page says, or give up (-abandon per page);
// admitted ones browse for 10 to 60 s, then half of them end their
// session through the application's "Waiting-Room-Command: revoke"
// response header and half just leave. Along the way the room switches to
// random queueing and back and lowers then restores its limits (Room.Update
// of a room that shares the store and never syncs), and one process is
// restarted.
//
// Every 10 s it prints the visitors' figures and, per process, the live
// heap after the latest GC and the goroutines (from the Go runtime's
// gctrace and schedtrace output), the resident memory and threads, and
// the shared clock's lead over this host's clock. At the end it checks the
// limits from the visitors' side and from the room's own counts, and
// exits with status 1 if they were exceeded or a visitor got a 5xx.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	minutes      float64
	visitors     int
	bin, redis   string
	procs        int
	total, perMn int
	refresh      time.Duration
	syncInterval time.Duration
	session      time.Duration
	abandon      float64
}

// main reads the flags, runs the soak until its end or an interrupt, and
// exits with its status: 1 if it failed, 2 for bad flags.
func main() {
	var o options
	flag.Float64Var(&o.minutes, "minutes", 10, "how long to run")
	flag.IntVar(&o.visitors, "visitors", 10_000, "virtual visitors, arriving over the first 80 % of the run")
	flag.StringVar(&o.bin, "bin", "", "path of the cmd/waitingroom binary (required)")
	flag.StringVar(&o.redis, "redis", "127.0.0.1:6379", "Redis host:port on loopback")
	flag.IntVar(&o.procs, "procs", 3, "waiting-room processes")
	flag.IntVar(&o.total, "total-active-users", 300, "TotalActiveUsers")
	flag.IntVar(&o.perMn, "new-users-per-minute", 300, "NewUsersPerMinute")
	flag.DurationVar(&o.refresh, "refresh-interval", 5*time.Second, "RefreshInterval")
	flag.DurationVar(&o.syncInterval, "sync-interval", 200*time.Millisecond, "SyncInterval")
	flag.DurationVar(&o.session, "session-duration", time.Minute, "SessionDuration")
	flag.Float64Var(&o.abandon, "abandon", 0.08, "chance that a waiting visitor gives up at each waiting page")
	flag.Parse()
	if o.bin == "" || o.minutes <= 0 || o.procs < 1 || o.visitors < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if host, _, err := net.SplitHostPort(o.redis); err != nil || (host != "127.0.0.1" && host != "localhost") {
		fmt.Fprintln(os.Stderr, "soak: -redis must be a loopback host:port")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
	}
	os.Exit(code)
}

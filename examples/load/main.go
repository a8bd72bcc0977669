// Command load puts a crowd of visitors in front of a site behind a waiting
// room, on this machine only, and reports what they got: throughput,
// latency percentiles, status codes, and how many were let in or waited.
//
//	go run ./load -url http://127.0.0.1:8080/ -clients 64 -duration 10s
//
// Each of the -clients goroutines is one visitor at a time, with a cookie
// jar of its own (its place in the queue) and a keep-alive connection:
//
//   - While the room makes it wait, it comes back when the room says
//     (refreshIntervalSeconds of a JSON answer, else the Refresh header),
//     never earlier.
//   - Once let in, it browses: a request every -interval for -browse, then
//     it leaves, and a new visitor (an empty cookie jar) takes its place.
//   - A request that fails (no answer) ends the visit after a 100 ms pause,
//     and a new visitor takes its place.
//
// With -interval 0 an admitted visitor sends its next request as soon as
// the previous one is answered: the site's throughput on the admitted
// path.
//
// The run ends after -duration or -requests requests, whichever comes
// first; requests cut off by the end are not counted. The target must be
// on a loopback address (127.0.0.0/8, ::1 or localhost): every connection
// is checked, redirects included.
//
// # Flags
//
//	-url URL            the page to request (default http://127.0.0.1:8080/)
//	-clients N          visitors at once (default 64)
//	-duration D         the longest run (default 10s)
//	-requests N         the most requests in all (default 1000000)
//	-interval D         an admitted visitor's pause between requests (default 1s; 0: none)
//	-browse D           how long an admitted visitor keeps browsing before leaving (default 30s)
//	-accept html|json   what visitors ask for: a browser's Accept, or application/json (default html)
//	-json-key KEY       top-level key of the room's JSON answers (default waitingRoom)
//	-timeout D          the longest a request may take (default 10s)
//
// # What counts as what
//
// A response with a Refresh header is the room's waiting page, HTML or
// JSON ("waiting"). A JSON answer of a room that takes no one
// (isRejectQueue), or a response without Refresh that carries both
// "Cache-Control: no-store" and "Vary: Accept" (the room's closed page),
// is "closed". Every other answer came from the application ("admitted"),
// whatever its status; the status counts show those separately. A
// visitor counts as admitted once, at their first such answer.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	o, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
	res.print(os.Stdout, o)
}

// options are the command's flags.
type options struct {
	url      string
	clients  int
	duration time.Duration
	requests int
	interval time.Duration
	browse   time.Duration
	json     bool
	jsonKey  string
	timeout  time.Duration
}

// parse reads the command line; errors are usage errors.
func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var accept string
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080/", "the page to request (a loopback address only)")
	fs.IntVar(&o.clients, "clients", 64, "visitors at once")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "the longest run")
	fs.IntVar(&o.requests, "requests", 1_000_000, "the most requests in all")
	fs.DurationVar(&o.interval, "interval", time.Second, "an admitted visitor's pause between requests (0: none)")
	fs.DurationVar(&o.browse, "browse", 30*time.Second, "how long an admitted visitor keeps browsing before leaving")
	fs.StringVar(&accept, "accept", "html", "what visitors ask for: html (a browser's Accept) or json (application/json)")
	fs.StringVar(&o.jsonKey, "json-key", "waitingRoom", "top-level key of the room's JSON answers")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "the longest a request may take")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.clients < 1:
		return o, errors.New("-clients must be at least 1")
	case o.requests < 1:
		return o, errors.New("-requests must be at least 1")
	case o.duration <= 0 || o.timeout <= 0:
		return o, errors.New("-duration and -timeout must be > 0")
	case o.interval < 0 || o.browse < 0:
		return o, errors.New("-interval and -browse must not be negative")
	}
	switch accept {
	case "html":
	case "json":
		o.json = true
	default:
		return o, fmt.Errorf("-accept %q: want html or json", accept)
	}
	if _, err := checkTarget(o.url); err != nil {
		return o, err
	}
	return o, nil
}

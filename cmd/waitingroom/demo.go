package main

import (
	"fmt"
	"html"
	"net/http"
	"sync"
	"time"

	"github.com/go-waitingroom/waitingroom"
)

// demo is the built-in application of -demo: one page that greets admitted
// visitors and counts the sessions it has seen lately, so the limits can be
// watched from the application's side too.
type demo struct {
	session time.Duration
	mu      sync.Mutex
	seen    map[int64]time.Time // visitor (acceptedAt) → latest request
}

func newDemo(session time.Duration) *demo {
	return &demo{session: session, seen: map[int64]time.Time{}}
}

// active returns the number of visitors seen within a session duration.
func (d *demo) active(now time.Time) int {
	n := 0
	for k, t := range d.seen {
		if now.Sub(t) < d.session {
			n++
		} else {
			delete(d.seen, k)
		}
	}
	return n
}

func (d *demo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	t, ok := waitingroom.TicketFromContext(r.Context())
	d.mu.Lock()
	if ok {
		d.seen[t.AcceptedAt.UnixNano()] = now
	}
	active := d.active(now)
	d.mu.Unlock()
	if r.URL.Path == "/active" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, active)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	since := "just now"
	if ok {
		since = now.Sub(t.AcceptedAt).Round(time.Second).String() + " ago"
	}
	fmt.Fprintf(w, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>You're in</title>
<style>body{font:1rem/1.6 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem}</style></head>
<body><main><h1>You're in.</h1>
<p>This is the demo application behind the waiting room. You were let in %s.</p>
<p>Visitors active in the last %s: <strong>%d</strong>.</p>
<p>Open this page in other browsers (or private windows) to see the queue once the room is full.</p>
</main></body></html>
`, html.EscapeString(since), html.EscapeString(d.session.String()), active)
}

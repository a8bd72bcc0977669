// Package demoapp is the demo application of the proxy's -demo and of
// the demo command (cmd/waitingroom/demo): one page that greets admitted
// visitors, and a report of the sessions it has seen.
package demoapp

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/template"
)

// ActivePath is where the demo reports the sessions it has seen (Report).
// It is served outside the room, so reading it takes no slot and never
// waits.
const ActivePath = "/active"

// VisitorCookie holds the demo's own random visitor id. The room's cookie
// is not readable by the application; this one lets every process running
// the demo recognise the same visitor, so that the sessions seen by several
// processes can be counted once (see report).
const VisitorCookie = "waitingroom_demo"

// Bounds of what the demo remembers: sessions are kept an hour after their
// latest request, for the admissions per minute, and at most
// maxDemoSessions of them (beyond, new sessions are not recorded and the
// counts are a lower bound).
const (
	demoRetention   = time.Hour
	maxDemoSessions = 100_000
)

// App is the demo application: one page that greets admitted visitors and
// counts the sessions it has seen lately, so the limits can be watched
// from the application's side too. It goes behind the room's Handler,
// and its Report outside the room.
//
// A session is one admission of one visitor: the demo's visitor id and the
// ticket's AcceptedAt. It is active while the visitor made a request within
// the session duration. Each process counts what it sees; when visitors move
// between processes sharing a store, the same session is seen by several,
// and the JSON report lists the sessions so that they can be merged.
type App struct {
	session time.Duration
	now     func() time.Time

	mu       sync.Mutex
	sessions map[sessionKey]*sessionRecord
	pruned   time.Time
}

type sessionKey struct {
	visitor    string
	acceptedAt int64 // Unix ms
}

type sessionRecord struct {
	acceptedAt time.Time
	lastSeen   time.Time
}

// New returns the demo application; session is the room's session
// duration, and now its clock.
func New(session time.Duration, now func() time.Time) *App {
	return &App{session: session, now: now, sessions: map[sessionKey]*sessionRecord{}}
}

// visitorID returns the visitor's demo id, and whether it is new (to be
// set as a cookie).
func visitorID(r *http.Request) (string, bool) {
	if c, err := r.Cookie(VisitorCookie); err == nil && len(c.Value) == 32 {
		if _, err := hex.DecodeString(c.Value); err == nil {
			return c.Value, false
		}
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]), true
}

// record notes a request of an admitted visitor. It is called with d.mu
// held.
func (d *App) record(visitor string, t waitingroom.Ticket, now time.Time) {
	if now.Sub(d.pruned) >= time.Second {
		d.pruned = now
		for k, s := range d.sessions {
			if now.Sub(s.lastSeen) >= max(demoRetention, d.session) {
				delete(d.sessions, k)
			}
		}
	}
	k := sessionKey{visitor, t.AcceptedAt.UnixMilli()}
	if s, ok := d.sessions[k]; ok {
		s.lastSeen = now
		return
	}
	if len(d.sessions) < maxDemoSessions {
		d.sessions[k] = &sessionRecord{acceptedAt: t.AcceptedAt, lastSeen: now}
	}
}

// active returns the number of sessions with a request within the session
// duration. It is called with d.mu held.
func (d *App) active(now time.Time) int {
	n := 0
	for _, s := range d.sessions {
		if now.Sub(s.lastSeen) < d.session {
			n++
		}
	}
	return n
}

// ServeHTTP serves the page, counting the admitted visitor's session.
func (d *App) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := d.now()
	t, ok := waitingroom.TicketFrom(w)
	d.mu.Lock()
	if ok {
		id, fresh := visitorID(r)
		if fresh {
			http.SetCookie(w, &http.Cookie{Name: VisitorCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		}
		d.record(id, t, now)
	}
	active := d.active(now)
	d.mu.Unlock()
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

// activeReport is the JSON form of the demo's /active report
// (GET /active?format=json, or with Accept: application/json).
type activeReport struct {
	// At is when the report was made.
	At time.Time `json:"at"`
	// SessionDuration is how long a session stays active after its latest
	// request, as a Go duration ("1m0s").
	SessionDuration string `json:"sessionDuration"`
	// Active is the number of sessions this process saw a request of
	// within SessionDuration: the plain /active figure.
	Active int `json:"active"`
	// AdmissionsPerMinute counts the sessions this process has seen by the
	// minute they were admitted (RFC 3339, UTC), for the last hour.
	AdmissionsPerMinute map[string]int `json:"admissionsPerMinute"`
	// Sessions are the sessions this process has seen in the last hour,
	// oldest admission first. A visitor who moves between processes
	// appears in each; merge by (Visitor, AcceptedAt) and keep the latest
	// LastSeen to count each session once.
	Sessions []sessionReport `json:"sessions"`
}

// sessionReport is one session in an activeReport.
type sessionReport struct {
	// Visitor is the demo's random visitor id.
	Visitor string `json:"visitor"`
	// AcceptedAt is when the room admitted the visitor (millisecond
	// precision).
	AcceptedAt time.Time `json:"acceptedAt"`
	// LastSeen is the latest request of the session this process served.
	LastSeen time.Time `json:"lastSeen"`
}

// Report serves ActivePath: the number of active sessions as plain text, or
// an activeReport as JSON with ?format=json or Accept: application/json.
func (d *App) Report(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	now := d.now()
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Query().Get("format") != "json" && !template.WantsJSON(r.Header.Get("Accept")) {
		d.mu.Lock()
		n := d.active(now)
		d.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, n)
		return
	}
	rep := activeReport{At: now.UTC(), SessionDuration: d.session.String(), AdmissionsPerMinute: map[string]int{}}
	d.mu.Lock()
	rep.Active = d.active(now)
	rep.Sessions = make([]sessionReport, 0, len(d.sessions))
	for k, s := range d.sessions {
		rep.Sessions = append(rep.Sessions, sessionReport{Visitor: k.visitor, AcceptedAt: s.acceptedAt.UTC(), LastSeen: s.lastSeen.UTC()})
	}
	d.mu.Unlock()
	slices.SortFunc(rep.Sessions, func(a, b sessionReport) int {
		return cmp.Or(a.AcceptedAt.Compare(b.AcceptedAt), cmp.Compare(a.Visitor, b.Visitor))
	})
	for _, s := range rep.Sessions {
		rep.AdmissionsPerMinute[s.AcceptedAt.Truncate(time.Minute).Format(time.RFC3339)]++
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(rep)
}

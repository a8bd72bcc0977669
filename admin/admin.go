// Package admin serves a room's admin API and status page, for operators:
// the figures of the whole room as JSON, the last hour's history, the kept
// history (Minutes, Reports, Coarsen), the waiting page in each state a
// visitor can see (Preview), and the live settings, which PATCH /settings
// changes for every instance. It is built on the Room's public surface
// (Stats, History, Counters, Update) and, for the kept history and the
// preview, on the room's store and waiting page, so it runs beside any
// room, on any mux, behind an Authenticator that it refuses to do
// without.
package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom"
)

// Authenticator decides whether a request to the admin API (Handler)
// comes from an operator. It is called first for every admin request;
// false answers 401 and nothing else happens. It must be safe for
// concurrent use. BearerToken returns one; any other scheme (an SSO
// proxy's header, a session cookie, mutual TLS) is a function away.
type Authenticator func(r *http.Request) bool

// MinBearerTokenLen is the shortest token BearerToken accepts, in bytes.
const MinBearerTokenLen = 16

// BearerToken returns an Authenticator that accepts requests carrying
// exactly one "Authorization: Bearer <token>" header with this token (the
// scheme is case-insensitive, as HTTP says). The comparison takes the same
// time whatever the presented token is, its length included. It returns an
// error wrapping waitingroom.ErrInvalidConfig for a token shorter than
// MinBearerTokenLen bytes or one containing spaces, control or non-ASCII
// characters, which a header cannot carry reliably. Use a long random
// token, the same on every instance; there is no default.
func BearerToken(token string) (Authenticator, error) {
	if len(token) < MinBearerTokenLen {
		return nil, fmt.Errorf("waitingroom: %w: the bearer token is %d bytes; it must be at least %d", waitingroom.ErrInvalidConfig, len(token), MinBearerTokenLen)
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c > '~' {
			return nil, fmt.Errorf("waitingroom: %w: the bearer token must be printable ASCII without spaces", waitingroom.ErrInvalidConfig)
		}
	}
	want := sha256.Sum256([]byte(token))
	return func(r *http.Request) bool {
		h := r.Header.Values("Authorization")
		if len(h) != 1 {
			return false
		}
		scheme, cred, ok := strings.Cut(h[0], " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return false
		}
		got := sha256.Sum256([]byte(strings.TrimLeft(cred, " ")))
		return subtle.ConstantTimeCompare(got[:], want[:]) == 1
	}, nil
}

// Admin API limits.
const (
	// historyInterval and historyWindow are the spacing and the reach of
	// Room.History, which GET /history reports.
	historyInterval = 10 * time.Second
	historyWindow   = time.Hour
	// maxSettingsBody is the largest PATCH /settings body, in bytes: the
	// size the commercial product allows a template.
	maxSettingsBody = 1 << 20
)

// Handler returns the room's admin API and status page, for operators.
// It refuses to be built without an Authenticator: auth nil returns an
// error wrapping waitingroom.ErrInvalidConfig, as does an Option that
// does not hold. Mount it anywhere, for example:
//
//	token := os.Getenv("ADMIN_TOKEN")
//	auth, err := admin.BearerToken(token)
//	...
//	h, err := admin.Handler(room, auth, admin.SignIn(token))
//	...
//	mux.Handle("/admin/", http.StripPrefix("/admin", h))
//
// Paths, relative to the mount point:
//
//	GET   /          the status page: self-contained HTML (no external
//	                 assets) with the current figures, a chart of the
//	                 last hour, the queue by arrival minute and a warning
//	                 while the challenge parks visitors, updating itself
//	                 every 5 seconds
//	GET   /signin    with SignIn: the sign-in form, which a browser
//	POST  /signin    without credentials also gets for GET /; POST
//	                 (a form with token) begins a session and redirects
//	                 to the status page
//	POST  /signout   with SignIn: ends the browser's session
//	GET   /status    the figures as JSON: status, active, waiting,
//	                 admittedThisMinute, outflowPerMinute, estimatedWait,
//	                 queue, settings, instances, lastSync, nextEvent (the
//	                 event in force or the next one; null if none),
//	                 lottery (the commitments of the hour in progress and
//	                 the next, the odds fixed so far, the latest seed
//	                 revealed with its odds: package lottery's records),
//	                 and this instance's counters
//	GET   /lottery   the lottery's records, as Records serves them
//	                 (?at= a time: the record of its period, from the
//	                 kept history once the state no longer holds it)
//	GET   /history   the last hour as JSON: a sample of active and waiting
//	                 visitors every 10 seconds, admissions by minute
//	GET   /minutes   the kept history (Minutes): from and to (RFC
//	                 3339; default the last 24 hours, at most 30 days),
//	                 step (seconds, a multiple of 60; default the finest
//	                 that gives at most 1,440 points, a minute for CSV),
//	                 format (json or csv); 404 if the store keeps none
//	GET   /reports   a report per scheduled event, from its pre-queue to
//	                 its end (Reports), in from and to
//	                 (default the last 30 days), format json or csv
//	GET   /settings  the live waitingroom.Settings as JSON, session
//	                 durations as durations ("10m0s"); the answer may be
//	                 sent back as a PATCH
//	PATCH /settings  change them: a JSON object (Content-Type
//	                 application/json, at most 1 MiB) with any of
//	                 queueingMethod, totalActiveUsers, newUsersPerMinute,
//	                 queueAll, suspended, events (the whole list, which
//	                 replaces the current one), sessionDuration (a
//	                 duration such as "10m", or nanoseconds; 0 for the
//	                 default), disableSessionRenewal, queueingStatusCode
//	                 (200, 202 or 429; 0 for the default) and template
//	                 (Mustache source; "" for the default page) and
//	                 challenge (a challenge.Policy object, such as
//	                 {"kind":"pow","onFail":"infinite"}; {} turns it
//	                 off); the answer is the new Settings.
//	                 Every instance follows at its next sync (Room.Update).
//	GET   /preview   the waiting page in each state a visitor can see
//	POST  /preview   (Preview: queueing, queueAll,
//	                 eventPrequeue, reject, unknownWait), rendered from the
//	                 live template (GET) or from the one posted
//	                 ({"template": "..."}, "" for the default page; a
//	                 template that does not parse answers 422): JSON with
//	                 each state's status, data and HTML, and warnings
//	                 naming the variables no page fills that a live
//	                 template of another release uses; to a browser's
//	                 GET (Accept: text/html) a page with those warnings
//	                 listed above every state's page, each framed; with
//	                 ?state=<state> that state's page as HTML, sandboxed
//	                 (Content-Security-Policy: sandbox allow-scripts);
//	                 ?lang=<tag> picks the language. Nothing in the room
//	                 changes.
//
// Every response has Cache-Control: no-store. A request auth refuses gets
// 401 with WWW-Authenticate: Bearer and a JSON body (with SignIn, a
// browser asking for the status page gets the sign-in form instead); a
// wrong method 405 with Allow; a bad PATCH body a 4xx with a JSON body
// {"error": "..."}, and nothing changes. A PATCH, POST or other
// state-changing request from another origin in a browser
// (http.CrossOriginProtection), the sign-in's and sign-out's included, is
// refused with 403.
//
// The status page fetches /status, /history, /minutes and /reports itself,
// with the browser's own credentials: sign in with SignIn's form, or view
// it through something that authenticates the browser (an SSO proxy adding
// the header, or an Authenticator that accepts your own session cookie).
//
// The history is the room's (Room.History), in memory (about 40 KB), one
// sample per 10 s of syncs; the kept history (Minutes) is the store's.
// The handler is safe for concurrent use.
func Handler(rm *waitingroom.Room, auth Authenticator, opts ...Option) (http.Handler, error) {
	if auth == nil {
		return nil, fmt.Errorf("waitingroom: %w: admin.Handler needs an Authenticator (see BearerToken)", waitingroom.ErrInvalidConfig)
	}
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	return &admin{rm: rm, auth: auth, cop: http.NewCrossOriginProtection(), signIn: o.signIn, records: Records(rm)}, nil
}

// admin is the handler Handler returns.
type admin struct {
	rm     *waitingroom.Room
	auth   Authenticator
	cop    *http.CrossOriginProtection
	signIn *signIn // nil without SignIn
	// records serves GET /lottery, as Records does.
	records http.Handler
}

// ServeHTTP authenticates the request (its own credentials, else a
// session's), refuses one from another origin, and serves the resource
// its path names with the method it allows. The sign-in form and
// sign-out need no credentials.
func (a *admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	path := strings.TrimPrefix(r.URL.Path, "/")
	if a.signIn != nil && (path == "signin" || path == "signout") {
		a.serveSignIn(w, r, path)
		return
	}
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	session := false
	if !a.auth(r) {
		if session = a.bySession(r); !session {
			h.Set("WWW-Authenticate", `Bearer realm="waitingroom"`)
			if a.signIn != nil && path == "" && get && wantsPage(r) {
				a.signInForm(w, r, http.StatusUnauthorized, "")
				return
			}
			writeError(w, http.StatusUnauthorized, "waitingroom: authentication required")
			return
		}
	}
	if err := a.cop.Check(r); err != nil {
		writeError(w, http.StatusForbidden, "waitingroom: cross-origin request refused")
		return
	}
	switch path {
	case "":
		if !get {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		a.page(w, r, session)
	case "status":
		if !get {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		writeJSON(w, http.StatusOK, a.status())
	case "history":
		if !get {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		writeJSON(w, http.StatusOK, a.history())
	case "minutes", "reports":
		if !get {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		a.minutes(w, r, strings.TrimPrefix(r.URL.Path, "/") == "reports")
	case "lottery":
		a.records.ServeHTTP(w, r)
	case "preview":
		switch {
		case get:
			a.preview(w, r, nil)
		case r.Method == http.MethodPost:
			a.postPreview(w, r)
		default:
			methodNotAllowed(w, "GET, HEAD, POST")
		}
	case "settings":
		switch {
		case get:
			writeJSON(w, http.StatusOK, settingsJSON(a.rm.Stats().Settings))
		case r.Method == http.MethodPatch:
			a.patchSettings(w, r)
		default:
			methodNotAllowed(w, "GET, HEAD, PATCH")
		}
	default:
		writeError(w, http.StatusNotFound, "waitingroom: no such admin resource")
	}
}

// methodNotAllowed answers 405, naming the methods allowed.
func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, "waitingroom: method not allowed; use "+allow)
}

// writeError answers code with the JSON body {"error": msg}.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, struct {
		Error string `json:"error"`
	}{msg})
}

// writeJSON answers code with v as JSON, or 500 if v cannot be encoded.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"error":"waitingroom: encoding the response failed"}`)
	}
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

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
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/challenge"
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

// eventsAt returns the event in force at t (its pre-queue included) and
// whether it is in its pre-queue, else the next event to open after t.
// Suspended events are passed over: they do not apply. events are sorted
// and do not overlap (Settings.validate). A zero t finds nothing.
func eventsAt(events []waitingroom.Event, t time.Time) (current *waitingroom.Event, prequeue bool, next *waitingroom.Event) {
	if t.IsZero() {
		return nil, false, nil
	}
	for i := range events {
		e := &events[i]
		if e.Suspended {
			continue
		}
		opens := e.Start
		if !e.PrequeueStart.IsZero() {
			opens = e.PrequeueStart
		}
		switch {
		case t.Before(opens):
			return nil, false, e
		case t.Before(e.End):
			return e, t.Before(e.Start), nil
		}
	}
	return nil, false, nil
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

//go:embed status.html
var adminPageSource string

var adminPage = template.Must(template.New("status").Parse(adminPageSource))

// Handler returns the room's admin API and status page, for operators.
// It refuses to be built without an Authenticator: auth nil returns an
// error wrapping waitingroom.ErrInvalidConfig. Mount it anywhere, for example:
//
//	auth, err := admin.BearerToken(os.Getenv("ADMIN_TOKEN"))
//	...
//	h, err := admin.Handler(room, auth)
//	...
//	mux.Handle("/admin/", http.StripPrefix("/admin", h))
//
// Paths, relative to the mount point:
//
//	GET   /          the status page: self-contained HTML (no external
//	                 assets) with the current figures and a chart of the
//	                 last hour, updating itself every 5 seconds
//	GET   /status    the figures as JSON: status, active, waiting,
//	                 admittedThisMinute, outflowPerMinute, estimatedWait,
//	                 queue, settings, instances, lastSync, nextEvent (the
//	                 event in force or the next one; null if none), and
//	                 this instance's counters
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
//	GET   /settings  the live waitingroom.Settings as JSON
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
//	                 each state's status, data and HTML, or with
//	                 ?state=<state> that state's page as HTML, sandboxed
//	                 (Content-Security-Policy: sandbox allow-scripts);
//	                 ?lang=<tag> picks the language. Nothing in the room
//	                 changes.
//
// Every response has Cache-Control: no-store. A request auth refuses gets
// 401 with WWW-Authenticate: Bearer; a wrong method 405 with Allow; a bad
// PATCH body a 4xx with a JSON body {"error": "..."}, and nothing changes.
// A PATCH from another origin in a browser (http.CrossOriginProtection) is
// refused with 403.
//
// The status page fetches /status, /history, /minutes and /reports itself,
// with the browser's own credentials: view it in a browser through something that
// authenticates the browser (an SSO proxy adding the header, or an
// Authenticator that accepts your session cookie).
//
// The history is the room's (Room.History), in memory (about 40 KB), one
// sample per 10 s of syncs; the kept history (Minutes) is the store's.
// The handler is safe for concurrent use.
func Handler(rm *waitingroom.Room, auth Authenticator) (http.Handler, error) {
	if auth == nil {
		return nil, fmt.Errorf("waitingroom: %w: admin.Handler needs an Authenticator (see BearerToken)", waitingroom.ErrInvalidConfig)
	}
	return &admin{rm: rm, auth: auth, cop: http.NewCrossOriginProtection()}, nil
}

type admin struct {
	rm   *waitingroom.Room
	auth Authenticator
	cop  *http.CrossOriginProtection
}

func (a *admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if !a.auth(r) {
		h.Set("WWW-Authenticate", `Bearer realm="waitingroom"`)
		writeError(w, http.StatusUnauthorized, "waitingroom: authentication required")
		return
	}
	if err := a.cop.Check(r); err != nil {
		writeError(w, http.StatusForbidden, "waitingroom: cross-origin request refused")
		return
	}
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch strings.TrimPrefix(r.URL.Path, "/") {
	case "":
		if !get {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		a.page(w)
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
			writeJSON(w, http.StatusOK, a.rm.Stats().Settings)
		case r.Method == http.MethodPatch:
			a.patchSettings(w, r)
		default:
			methodNotAllowed(w, "GET, HEAD, PATCH")
		}
	default:
		writeError(w, http.StatusNotFound, "waitingroom: no such admin resource")
	}
}

// adminStatus is the body of GET /status.
type adminStatus struct {
	Room               string                 `json:"room"`
	Status             waitingroom.RoomStatus `json:"status"`
	Active             int                    `json:"active"`
	Waiting            int                    `json:"waiting"`
	AdmittedThisMinute int                    `json:"admittedThisMinute"`
	OutflowPerMinute   float64                `json:"outflowPerMinute"`
	EstimatedWait      adminEstimate          `json:"estimatedWait"`
	Queue              []adminBucket          `json:"queue"`
	Settings           waitingroom.Settings   `json:"settings"`
	Instances          int                    `json:"instances"`
	LastSync           *time.Time             `json:"lastSync"`
	NextEvent          *adminEvent            `json:"nextEvent"`
	Counters           waitingroom.Counters   `json:"counters"`
}

// adminEstimate is the wait of a visitor arriving now, in whole seconds
// (multiples of 60); null where unknown or not applicable.
type adminEstimate struct {
	Known bool `json:"known"`
	// Full: longer than a day.
	Full bool `json:"full"`
	// WaitSeconds: FIFO, the wait of a visitor arriving now, who is behind
	// everyone (so the longest); random, the median.
	WaitSeconds *int64 `json:"waitSeconds"`
	// P25Seconds, P50Seconds, P75Seconds: random only.
	P25Seconds *int64 `json:"p25Seconds"`
	P50Seconds *int64 `json:"p50Seconds"`
	P75Seconds *int64 `json:"p75Seconds"`
	// Formatted as the waiting page shows it; "" when unknown.
	Formatted string `json:"formatted"`
}

// adminEvent is the scheduled event in force (pre-queue included) or, when
// none is, the next one to open.
type adminEvent struct {
	Name string `json:"name"`
	// Description is the operators' note on the event.
	Description   string     `json:"description"`
	PrequeueStart *time.Time `json:"prequeueStart"`
	Start         time.Time  `json:"start"`
	End           time.Time  `json:"end"`
	// InProgress: the event governs the room now (Prequeueing: its
	// pre-queue).
	InProgress  bool `json:"inProgress"`
	Prequeueing bool `json:"prequeueing"`
	// ShuffleAtStart and the overrides; zero values inherit the room's.
	ShuffleAtStart    bool                       `json:"shuffleAtStart"`
	TotalActiveUsers  int                        `json:"totalActiveUsers,omitempty"`
	NewUsersPerMinute int                        `json:"newUsersPerMinute,omitempty"`
	QueueingMethod    waitingroom.QueueingMethod `json:"queueingMethod,omitempty"`
}

func eventJSON(e *waitingroom.Event, inProgress, prequeueing bool) *adminEvent {
	out := &adminEvent{
		Name:              e.Name,
		Description:       e.Description,
		Start:             e.Start.UTC(),
		End:               e.End.UTC(),
		InProgress:        inProgress,
		Prequeueing:       prequeueing,
		ShuffleAtStart:    e.ShuffleAtStart,
		TotalActiveUsers:  e.TotalActiveUsers,
		NewUsersPerMinute: e.NewUsersPerMinute,
		QueueingMethod:    e.QueueingMethod,
	}
	if !e.PrequeueStart.IsZero() {
		t := e.PrequeueStart.UTC()
		out.PrequeueStart = &t
	}
	return out
}

type adminBucket struct {
	Minute  time.Time `json:"minute"`
	Waiting int       `json:"waiting"`
}

func (a *admin) status() adminStatus {
	s := a.rm.Stats()
	out := adminStatus{
		Room:               a.rm.Name(),
		Status:             s.Status(),
		Active:             s.Active,
		Waiting:            s.Waiting,
		AdmittedThisMinute: s.AdmittedThisMinute,
		OutflowPerMinute:   math.Round(finite(s.OutflowPerMinute)*100) / 100,
		EstimatedWait:      estimateJSON(s.Estimate, s.Settings.QueueingMethod == waitingroom.Random),
		Queue:              make([]adminBucket, 0, len(s.Buckets)),
		Settings:           s.Settings,
		Instances:          s.Instances,
	}
	for _, b := range s.Buckets {
		out.Queue = append(out.Queue, adminBucket{Minute: b.Bucket.UTC(), Waiting: b.Waiting})
	}
	if !s.Synced.IsZero() {
		t := s.Synced.UTC()
		out.LastSync = &t
	}
	switch cur, pre, next := eventsAt(s.Settings.Events, s.Synced); {
	case cur != nil:
		out.NextEvent = eventJSON(cur, true, pre)
	case next != nil:
		out.NextEvent = eventJSON(next, false, false)
	}
	out.Counters = a.rm.Counters()
	return out
}

func estimateJSON(e waitingroom.Estimate, random bool) adminEstimate {
	out := adminEstimate{Known: e.Known, Full: e.Full, Formatted: e.Formatted()}
	if !e.Known {
		return out
	}
	secs := func(d time.Duration) *int64 { n := int64(d / time.Second); return &n }
	out.WaitSeconds = secs(e.Wait)
	if random {
		out.P25Seconds, out.P50Seconds, out.P75Seconds = secs(e.P25), secs(e.P50), secs(e.P75)
	}
	return out
}

// adminHistory is the body of GET /history.
type adminHistory struct {
	// Now is the room's clock.
	Now             time.Time `json:"now"`
	IntervalSeconds int       `json:"intervalSeconds"`
	WindowSeconds   int       `json:"windowSeconds"`
	// Samples, oldest first: the room's figures at most once every
	// IntervalSeconds (the latest sync in each interval), over the last
	// WindowSeconds.
	Samples []historySample `json:"samples"`
	// AdmittedPerMinute: admissions in each minute of the last hour that
	// had any, oldest first, the current minute included.
	AdmittedPerMinute []minuteAdmissions `json:"admittedPerMinute"`
}

type historySample struct {
	T                  time.Time `json:"t"`
	Active             int       `json:"active"`
	Waiting            int       `json:"waiting"`
	AdmittedThisMinute int       `json:"admittedThisMinute"`
	OutflowPerMinute   float64   `json:"outflowPerMinute"`
}

type minuteAdmissions struct {
	Minute   time.Time `json:"minute"`
	Admitted int64     `json:"admitted"`
}

func (a *admin) history() adminHistory {
	st := a.rm.Stats()
	out := adminHistory{
		Now:               st.Now.UTC(),
		IntervalSeconds:   int(historyInterval / time.Second),
		WindowSeconds:     int(historyWindow / time.Second),
		Samples:           []historySample{},
		AdmittedPerMinute: []minuteAdmissions{},
	}
	for _, s := range a.rm.History() {
		out.Samples = append(out.Samples, historySample{
			T:                  s.At.UTC(),
			Active:             s.Active,
			Waiting:            s.Waiting,
			AdmittedThisMinute: s.AdmittedThisMinute,
			OutflowPerMinute:   math.Round(s.OutflowPerMinute*100) / 100,
		})
	}
	from := st.Now.Add(-historyWindow).Truncate(time.Minute)
	for _, c := range st.AdmittedByMinute {
		if !c.Minute.Before(from) && c.Admitted > 0 {
			out.AdmittedPerMinute = append(out.AdmittedPerMinute, minuteAdmissions{Minute: c.Minute.UTC(), Admitted: int64(c.Admitted)})
		}
	}
	return out
}

// pageData is what the status page template gets.
type pageData struct {
	Nonce    string
	Status   adminStatus
	Outflow  string
	Wait     string
	LastSync string
}

func (a *admin) page(w http.ResponseWriter) {
	var n [16]byte
	_, _ = rand.Read(n[:])
	st := a.status()
	d := pageData{
		Nonce:    hex.EncodeToString(n[:]),
		Status:   st,
		Outflow:  strconv.FormatFloat(st.OutflowPerMinute, 'f', 1, 64),
		Wait:     st.EstimatedWait.Formatted,
		LastSync: "never",
	}
	switch {
	case st.EstimatedWait.Full:
		d.Wait = "more than a day"
	case !st.EstimatedWait.Known:
		d.Wait = "unknown"
	}
	if st.LastSync != nil {
		d.LastSync = st.LastSync.Format(time.RFC3339)
	}
	var buf bytes.Buffer
	if err := adminPage.Execute(&buf, d); err != nil {
		writeError(w, http.StatusInternalServerError, "waitingroom: rendering the status page failed")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+d.Nonce+"'; style-src 'nonce-"+d.Nonce+
		"'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// queueingMethods are the queueing methods PATCH /settings accepts: all
// of them.
var queueingMethods = []waitingroom.QueueingMethod{waitingroom.FIFO, waitingroom.Random, waitingroom.Passthrough, waitingroom.Reject}

// settingsPatch is a decoded PATCH /settings body: nil fields are left as
// they are.
type settingsPatch struct {
	queueingMethod        *waitingroom.QueueingMethod
	totalActiveUsers      *int
	newUsersPerMinute     *int
	queueAll              *bool
	suspended             *bool
	events                *[]waitingroom.Event // replaces all events when set
	sessionDuration       *time.Duration
	disableSessionRenewal *bool
	queueingStatusCode    *int
	template              *string
	challenge             *challenge.Policy // {} turns it off
}

func (p *settingsPatch) apply(s *waitingroom.Settings) {
	if p.events != nil {
		s.Events = slices.Clone(*p.events)
	}
	if p.queueingMethod != nil {
		s.QueueingMethod = *p.queueingMethod
	}
	if p.totalActiveUsers != nil {
		s.TotalActiveUsers = *p.totalActiveUsers
	}
	if p.newUsersPerMinute != nil {
		s.NewUsersPerMinute = *p.newUsersPerMinute
	}
	if p.queueAll != nil {
		s.QueueAll = *p.queueAll
	}
	if p.suspended != nil {
		s.Suspended = *p.suspended
	}
	if p.sessionDuration != nil {
		s.SessionDuration = *p.sessionDuration
	}
	if p.disableSessionRenewal != nil {
		s.DisableSessionRenewal = *p.disableSessionRenewal
	}
	if p.queueingStatusCode != nil {
		s.QueueingStatusCode = *p.queueingStatusCode
	}
	if p.template != nil {
		s.Template = *p.template
	}
	if p.challenge != nil {
		s.Challenge = p.challenge
		if p.challenge.Kind == challenge.Off {
			s.Challenge = nil
		}
	}
}

// errUnprocessable marks a well-formed body whose values are invalid.
type errUnprocessable struct{ msg string }

func (e errUnprocessable) Error() string { return e.msg }

func unprocessable(format string, a ...any) error {
	return errUnprocessable{fmt.Sprintf("waitingroom: "+format, a...)}
}

// decodeSettingsPatch reads one JSON object with known, non-null, well-typed
// fields, each at most once, and nothing after it.
func decodeSettingsPatch(r io.Reader) (*settingsPatch, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := openObject(dec); err != nil {
		return nil, err
	}
	p := &settingsPatch{}
	seen := map[string]bool{}
	for dec.More() {
		key, raw, err := nextField(dec)
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, fmt.Errorf("waitingroom: setting %q appears twice", key)
		}
		seen[key] = true
		if string(raw) == "null" {
			return nil, fmt.Errorf("waitingroom: setting %q must not be null", key)
		}
		if err := p.decode(key, raw); err != nil {
			return nil, err
		}
	}
	if err := closeObject(dec); err != nil {
		return nil, err
	}
	return p, nil
}

// openObject reads the '{' that opens the body.
func openObject(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err == io.EOF {
		return errors.New("waitingroom: the body must be a JSON object; it is empty")
	}
	if err != nil {
		return syntaxError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("waitingroom: the body must be a JSON object")
	}
	return nil
}

// nextField reads the body's next field: its key and its value as it is.
func nextField(dec *json.Decoder) (string, json.RawMessage, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", nil, syntaxError(err)
	}
	key, _ := tok.(string)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return "", nil, syntaxError(err)
	}
	return key, raw, nil
}

// closeObject reads the '}' that closes the body, and makes sure nothing
// follows it.
func closeObject(dec *json.Decoder) error {
	if _, err := dec.Token(); err != nil { // the closing '}'
		return syntaxError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return syntaxError(err)
		}
		return errors.New("waitingroom: the body must be one JSON object and nothing after it")
	}
	return nil
}

// decode sets the setting key of the patch from its value, raw (not null).
func (p *settingsPatch) decode(key string, raw json.RawMessage) error {
	var err error
	switch key {
	case "queueingMethod":
		p.queueingMethod, err = decodeQueueingMethod(key, raw)
	case "totalActiveUsers":
		p.totalActiveUsers, err = decodeLimit(key, raw)
	case "newUsersPerMinute":
		p.newUsersPerMinute, err = decodeLimit(key, raw)
	case "queueAll":
		p.queueAll, err = decodeValue[bool](key, raw, "true or false")
	case "suspended":
		p.suspended, err = decodeValue[bool](key, raw, "true or false")
	case "disableSessionRenewal":
		p.disableSessionRenewal, err = decodeValue[bool](key, raw, "true or false")
	case "queueingStatusCode":
		p.queueingStatusCode, err = decodeValue[int](key, raw, "an integer")
	case "sessionDuration":
		p.sessionDuration, err = decodeSessionDuration(key, raw)
	case "template":
		p.template, err = decodeValue[string](key, raw, "a string")
	case "events":
		// The whole list: to add, change or remove an event, send the
		// list as it should be (GET /settings gives the current one).
		p.events, err = decodeStrict[[]waitingroom.Event](key, raw, "a list of events")
	case "challenge":
		p.challenge, err = decodeStrict[challenge.Policy](key, raw, "a challenge object")
	default:
		return fmt.Errorf("waitingroom: unknown setting %q; the settings are queueingMethod, totalActiveUsers, newUsersPerMinute, queueAll, suspended, events, sessionDuration, disableSessionRenewal, queueingStatusCode, template and challenge", key)
	}
	return err
}

// decodeValue reads the value of setting key as a T; what says what it
// must be when it is not one.
func decodeValue[T any](key string, raw json.RawMessage, what string) (*T, error) {
	var v T
	if json.Unmarshal(raw, &v) != nil {
		return nil, fmt.Errorf("waitingroom: setting %q must be %s", key, what)
	}
	return &v, nil
}

// decodeStrict reads the value of setting key as a T whose fields are all
// known; what says what it must be when it is not one.
func decodeStrict[T any](key string, raw json.RawMessage, what string) (*T, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var v T
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("waitingroom: setting %q must be %s: %w", key, what, err)
	}
	return &v, nil
}

// decodeQueueingMethod reads setting key as one of the queueing methods.
func decodeQueueingMethod(key string, raw json.RawMessage) (*waitingroom.QueueingMethod, error) {
	m, err := decodeValue[string](key, raw, "a string")
	if err != nil {
		return nil, err
	}
	qm := waitingroom.QueueingMethod(*m)
	if !slices.Contains(queueingMethods, qm) {
		return nil, unprocessable("setting %q must be \"fifo\", \"random\", \"passthrough\" or \"reject\", got %q", key, *m)
	}
	return &qm, nil
}

// decodeLimit reads setting key as a limit: an integer above 0.
func decodeLimit(key string, raw json.RawMessage) (*int, error) {
	n, err := decodeValue[int](key, raw, "an integer")
	if err != nil {
		return nil, err
	}
	if *n <= 0 {
		return nil, unprocessable("setting %q must be > 0, got %d", key, *n)
	}
	return n, nil
}

// decodeSessionDuration reads setting key as a duration (decodeDuration).
func decodeSessionDuration(key string, raw json.RawMessage) (*time.Duration, error) {
	d, err := decodeDuration(raw)
	if err != nil {
		return nil, fmt.Errorf("waitingroom: setting %q must be a duration such as \"10m\" or an integer of nanoseconds", key)
	}
	return &d, nil
}

// decodeDuration reads a duration written as Go writes one ("10m",
// "1m30s") or as an integer of nanoseconds, as Settings is encoded.
func decodeDuration(raw json.RawMessage) (time.Duration, error) {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return time.ParseDuration(str)
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, err
	}
	return time.Duration(n), nil
}

func syntaxError(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	return fmt.Errorf("waitingroom: malformed JSON: %w", err)
}

func (a *admin) patchSettings(w http.ResponseWriter, r *http.Request) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (mt != "application/json" && mt != "application/merge-patch+json") {
		writeError(w, http.StatusUnsupportedMediaType, "waitingroom: the body must be JSON, with Content-Type: application/json")
		return
	}
	tooLarge := fmt.Sprintf("waitingroom: the body is larger than %d bytes", maxSettingsBody)
	if r.ContentLength > maxSettingsBody {
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge)
		return
	}
	p, err := decodeSettingsPatch(http.MaxBytesReader(w, r.Body, maxSettingsBody))
	var mbe *http.MaxBytesError
	var unp errUnprocessable
	switch {
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge)
		return
	case errors.As(err, &unp):
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	// Check against the settings this instance knows, for a clear message;
	// Update checks again against the shared ones.
	next := a.rm.Stats().Settings
	next.Events = slices.Clone(next.Events) // validate sorts them
	p.apply(&next)
	if err := next.Validate(); err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	var got waitingroom.Settings
	err = a.rm.Update(r.Context(), func(s *waitingroom.Settings) {
		p.apply(s)
		got = *s
	})
	switch {
	case errors.Is(err, waitingroom.ErrInvalidConfig):
		writeError(w, http.StatusUnprocessableEntity, err.Error())
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		writeJSON(w, http.StatusOK, got)
	}
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, "waitingroom: method not allowed; use "+allow)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, struct {
		Error string `json:"error"`
	}{msg})
}

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

func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

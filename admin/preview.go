package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/hook"
	"github.com/go-waitingroom/waitingroom/template"
)

// PreviewState is a state of the waiting page that a visitor can see, as
// Preview renders it.
type PreviewState string

// The states Preview renders, in its order.
const (
	// PreviewQueueing: waiting with a known wait (FIFO, or a range with
	// random queueing).
	PreviewQueueing PreviewState = "queueing"
	// PreviewQueueAll: QueueAll is on; nobody is let in, the wait is
	// unknown.
	PreviewQueueAll PreviewState = "queueAll"
	// PreviewEventPrequeue: the pre-queue of a scheduled event, which
	// starts in 15 minutes and shuffles its pre-queue at the start.
	PreviewEventPrequeue PreviewState = "eventPrequeue"
	// PreviewReject: QueueingMethod Reject, the closed page, which does not
	// refresh.
	PreviewReject PreviewState = "reject"
	// PreviewUnknownWait: waiting while nothing flows, so no estimate.
	PreviewUnknownWait PreviewState = "unknownWait"
)

// PreviewStates returns the states Preview renders, in its order. It
// returns a new slice on every call.
func PreviewStates() []PreviewState {
	return []PreviewState{PreviewQueueing, PreviewQueueAll, PreviewEventPrequeue, PreviewReject, PreviewUnknownWait}
}

// PreviewPage is the waiting page in one state.
type PreviewPage struct {
	State PreviewState `json:"state"`
	// Status is the status code of the response.
	Status int `json:"status"`
	// Data is what the template is given, and what JSON clients get.
	Data template.Data `json:"data"`
	// HTML is the page, or the error of the template, which then renders
	// nothing.
	HTML  string `json:"html"`
	Error string `json:"error,omitempty"`
	// Unknown lists the names the template uses that no page fills, as
	// the room warns of them when it loads the template: each renders
	// empty. Only a live template written by an instance of another
	// release has any (template.ParseAllowUnknown); one set here or
	// posted is refused with them. E.g. "{{waitTimeMinutes}} on line 3
	// (did you mean waitTime?)". Empty, not nil, when there are none: the
	// JSON lists them either way.
	Unknown []string `json:"unknown"`
}

// Preview renders rm's waiting page in every state a visitor can see
// (PreviewStates), as this instance would render it now under the live
// settings: their queueing method (FIFO unless it is random), refresh
// interval and status code, with sample waits and lines (12 minutes,
// number 36 of 120; 5 to 15 minutes among 120 with random queueing). tmpl is the template to render; nil is the live one
// (Settings.Template, else the default page). lang is the language of the
// default page and of the formatted waits ("" for Config.Page.Language).
//
// Nothing in the room changes: no visitor is counted, no cookie made, no
// cached page replaced. Preview does no I/O and is safe for concurrent
// use.
func Preview(rm *waitingroom.Room, tmpl *template.Template, lang string) []PreviewPage {
	st := rm.Stats()
	now, live := st.Now, st.Settings
	states := PreviewStates()
	out := make([]PreviewPage, 0, len(states))
	for _, state := range states {
		s := live
		s.Events, s.QueueAll = nil, false
		if s.QueueingMethod != waitingroom.Random {
			s.QueueingMethod = waitingroom.FIFO
		}
		var est waitingroom.Estimate
		switch state {
		case PreviewQueueing:
			est = waitingroom.Estimate{Known: true, Wait: 12 * time.Minute, Position: 36, Waiting: 120}
			if s.QueueingMethod == waitingroom.Random {
				est = waitingroom.Estimate{Known: true, Wait: 10 * time.Minute, P25: 5 * time.Minute, P50: 10 * time.Minute, P75: 15 * time.Minute, Waiting: 120}
			}
		case PreviewQueueAll:
			s.QueueAll = true
		case PreviewEventPrequeue:
			start := now.Truncate(time.Minute).Add(15 * time.Minute)
			s.Events = []waitingroom.Event{{Name: "preview", PrequeueStart: start.Add(-30 * time.Minute), Start: start, End: start.Add(time.Hour), ShuffleAtStart: true}}
		case PreviewReject:
			s.QueueingMethod = waitingroom.Reject
		}
		pg := hook.PreviewPage(rm, &s, now, est, lang)
		p := PreviewPage{State: state, Status: pg.Status, Data: pg.Data, Unknown: []string{}}
		t := tmpl
		if t == nil {
			t = pg.Template
		}
		for _, u := range t.Unknown() {
			p.Unknown = append(p.Unknown, u.String())
		}
		var buf bytes.Buffer
		if err := t.Render(&buf, &p.Data, pg.Language); err != nil {
			p.Error = err.Error()
		} else {
			p.HTML = buf.String()
		}
		out = append(out, p)
	}
	return out
}

// The waiting page over the admin API: GET and POST /preview.

// previewBody is the body of GET and POST /preview.
type previewBody struct {
	// Template is "live" (GET) or "posted".
	Template string        `json:"template"`
	Language string        `json:"language"`
	States   []PreviewPage `json:"states"`
	// Warnings are the states' Unknown, each once, worded as the room's
	// log has them; [] when none.
	Warnings []string `json:"warnings"`
}

// unknownWarning begins the warning of a name no page fills, as the room
// logs it when it loads the template.
const unknownWarning = "waitingroom: a template in the settings uses a variable no page fills; it renders empty: "

// warnings returns the names pages use that no page fills, each once, in
// order, as warnings.
func warnings(pages []PreviewPage) []string {
	out := []string{}
	for _, u := range unknownNames(pages) {
		out = append(out, unknownWarning+u)
	}
	return out
}

// unknownNames returns the states' Unknown, each once, in order.
func unknownNames(pages []PreviewPage) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range pages {
		for _, u := range p.Unknown {
			if !seen[u] {
				seen[u] = true
				out = append(out, u)
			}
		}
	}
	return out
}

// preview answers GET /preview and, with the template posted, POST
// /preview: every state as JSON (to a browser's GET, which asks for HTML,
// the preview page: previewPage), or with ?state= that state's page as
// HTML, in a sandbox (its scripts run in an origin of their own, away from
// the admin API and its credentials).
func (a *admin) preview(w http.ResponseWriter, r *http.Request, tmpl *template.Template) {
	q := r.URL.Query()
	lang := q.Get("lang")
	if lang != "" && !template.Supported(lang) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("waitingroom: language %q is not one of %v", lang, template.Languages()))
		return
	}
	pages := Preview(a.rm, tmpl, lang)
	state := q.Get("state")
	if state == "" {
		w.Header().Set("Vary", "Accept")
		if tmpl == nil && wantsPage(r) {
			a.previewPage(w, pages, lang)
			return
		}
		body := previewBody{Template: "live", Language: lang, States: pages, Warnings: warnings(pages)}
		if tmpl != nil {
			body.Template = "posted"
		}
		writeJSON(w, http.StatusOK, body)
		return
	}
	for _, p := range pages {
		if string(p.State) != state {
			continue
		}
		if p.Error != "" {
			writeError(w, http.StatusUnprocessableEntity, "waitingroom: the template fails in state "+state+": "+p.Error)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", "sandbox allow-scripts")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Length", strconv.Itoa(len(p.HTML)))
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, p.HTML)
		return
	}
	names := make([]string, 0, len(pages))
	for _, p := range pages {
		names = append(names, string(p.State))
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("waitingroom: no preview state %q; the states are %s", state, strings.Join(names, ", ")))
}

// postPreview reads {"template": "..."} ("" for the default page) and
// answers as preview does with that template.
func (a *admin) postPreview(w http.ResponseWriter, r *http.Request) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "waitingroom: the body must be JSON, with Content-Type: application/json")
		return
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxSettingsBody))
	dec.DisallowUnknownFields()
	var body struct {
		Template *string `json:"template"`
	}
	if err := dec.Decode(&body); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("waitingroom: the body is larger than %d bytes", maxSettingsBody))
			return
		}
		writeError(w, http.StatusBadRequest, "waitingroom: the body must be a JSON object {\"template\": \"...\"}: "+err.Error())
		return
	}
	if body.Template == nil {
		writeError(w, http.StatusBadRequest, "waitingroom: the body must hold the template to preview: {\"template\": \"...\"} (\"\" for the default page)")
		return
	}
	tmpl := template.Default()
	if *body.Template != "" {
		if tmpl, err = template.Parse(*body.Template); err != nil {
			writeError(w, http.StatusUnprocessableEntity, "waitingroom: Template: "+err.Error())
			return
		}
	}
	a.preview(w, r, tmpl)
}

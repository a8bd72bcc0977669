package waitingroom

import (
	"bytes"
	"time"

	"github.com/go-waitingroom/waitingroom/template"
)

// PreviewState is a state of the waiting page that a visitor can see, as
// Room.Preview renders it.
type PreviewState string

// The states Room.Preview renders, in its order.
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

// PreviewStates returns the states Room.Preview renders, in its order.
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
}

// Preview renders the waiting page in every state a visitor can see
// (PreviewStates), as this instance would render it now under the live
// settings: their queueing method (FIFO unless it is random), refresh
// interval and status code, with sample waits (12 minutes; 5 to 15 with
// random queueing). tmpl is the template to render; nil is the live one
// (Settings.Template, else the default page). lang is the language of the
// default page and of the formatted waits ("" for Config.Language).
//
// Nothing in the room changes: no visitor is counted, no cookie made, no
// cached page replaced. Preview is safe for concurrent use.
func (rm *Room) Preview(tmpl *template.Template, lang string) []PreviewPage {
	if lang == "" {
		lang = rm.cfg.Language
	}
	now := rm.now()
	live := rm.view.Load().settings
	out := make([]PreviewPage, 0, len(PreviewStates()))
	for _, state := range PreviewStates() {
		s := live
		s.Events, s.QueueAll = nil, false
		if s.QueueingMethod != Random {
			s.QueueingMethod = FIFO
		}
		d := Decision{Outcome: Waiting, RefreshAfter: rm.cfg.RefreshInterval.Truncate(time.Second), at: now, now: now, last: now}
		switch state {
		case PreviewQueueing:
			d.Estimate = Estimate{Known: true, Wait: 12 * time.Minute}
			if s.QueueingMethod == Random {
				d.Estimate = Estimate{Known: true, Wait: 10 * time.Minute, P25: 5 * time.Minute, P50: 10 * time.Minute, P75: 15 * time.Minute}
			}
		case PreviewQueueAll:
			s.QueueAll = true
		case PreviewEventPrequeue:
			start := time.UnixMilli(now).Truncate(time.Minute).Add(15 * time.Minute)
			s.Events = []Event{{Name: "preview", PrequeueStart: start.Add(-30 * time.Minute), Start: start, End: start.Add(time.Hour), ShuffleAtStart: true}}
		case PreviewReject:
			s.QueueingMethod = Reject
			d.Outcome, d.RefreshAfter = Rejected, 0
		}
		pol := rm.policyAt(&s, now)
		d.policy = &pol
		p := PreviewPage{State: state, Status: pol.queueingStatusCode(), Data: *rm.pageData(d, lang)}
		t := tmpl
		if t == nil {
			t = pol.tmpl
		}
		var buf bytes.Buffer
		if err := t.Render(&buf, &p.Data, lang); err != nil {
			p.Error = err.Error()
		} else {
			p.HTML = buf.String()
		}
		out = append(out, p)
	}
	return out
}

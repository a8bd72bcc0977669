package waitingroom

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"time"

	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/internal/share"
)

// Settings are the parts of the configuration that can change while the
// room runs (Room.Update): every one a visitor's experience depends on.
// Config embeds them. They live in the shared state, so every instance
// follows a change at its next sync. The zero value of each optional field
// means its default.
type Settings struct {
	// QueueingMethod is FIFO, Random, Passthrough or Reject. In a Config,
	// "" means FIFO (the default).
	QueueingMethod QueueingMethod `json:"queueingMethod"`
	// TotalActiveUsers is the most visitors admitted and active at once.
	// Required, > 0 and ≤ 2³¹ − 1 (about two billion visitors).
	TotalActiveUsers int `json:"totalActiveUsers"`
	// NewUsersPerMinute is the most visitors admitted in any minute.
	// Required, > 0 and ≤ TotalActiveUsers.
	NewUsersPerMinute int `json:"newUsersPerMinute"`
	// QueueAll queues every visitor without a session; admitted visitors
	// keep theirs. Default false.
	QueueAll bool `json:"queueAll"`
	// Suspended turns the room off: every request goes straight to the
	// application, with no cookie and no counting. Default false.
	Suspended bool `json:"suspended"`
	// Events are the scheduled events (pre-queue, shuffle, overrides),
	// sorted by start; no two may overlap. Default none.
	Events []Event `json:"events,omitempty"`

	// SessionDuration is how long an admitted visitor stays active after
	// their latest request, in nanoseconds in JSON. Default (0) 5
	// minutes; 1 to 30 minutes. A change applies to sessions under way:
	// shortened, a session whose latest request is further back than the
	// new duration is over; lengthened (here or by an event), one over
	// already stays over.
	SessionDuration time.Duration `json:"sessionDuration,omitempty"`
	// DisableSessionRenewal caps a session at SessionDuration from
	// admission, however active the visitor is; then they queue again, at
	// the back. Default false (requests renew the session). A change caps
	// sessions under way too; turned off, capped ones stay over.
	DisableSessionRenewal bool `json:"disableSessionRenewal,omitempty"`
	// QueueingStatusCode is the status of waiting responses: 200 (the
	// default, 0), 202 or 429. With 429 a Retry-After header is added.
	QueueingStatusCode int `json:"queueingStatusCode,omitempty"`
	// Template is a custom Mustache template for the waiting page.
	// Default "": the embedded page of package template. A template that
	// does not parse, or that uses a name no page fills (a mistyped
	// variable: template.ErrUnknownVariable, the error naming it and the
	// closest known one), is refused. It travels in the shared state, read
	// and written at every sync, so keep it small (inline a few
	// kilobytes, link larger assets from another host).
	Template string `json:"template,omitempty"`
	// Challenge is the challenge step (package challenge): who must pass
	// a challenge, what failing does, and the proof of work's difficulty.
	// Default nil: none. Overridable per Event.
	Challenge *challenge.Policy `json:"challenge,omitempty"`

	// floors keep ended the sessions an Update or a deploy made longer
	// (sessionFloors), stored beside the settings (storedSettings).
	floors share.Floors
}

// storedSettings are Settings as the shared state keeps them.
type storedSettings struct {
	Settings
	Floors share.Floors `json:"floors,omitzero"`
}

// follow notes in s, settings that follow others granting sessions of
// before ms, renewed or not, with flow (their flow()), at now (Unix ms),
// whether they make sessions longer (those over under the others stay
// over) and whether they change the flow of admissions.
func (s *Settings) follow(before int64, renewed bool, flow [5]any, now int64) {
	after, renew := s.sessionAt(now)
	s.floors = s.floors.Lengthened(now, before, renewed, after, renew)
	if s.flow() != flow {
		s.floors.Flow = now
	}
}

// sessionAt is the session length, in ms, that s grants at t (Unix ms),
// and whether it is renewed: the event's in force, as policyAt finds
// it, or the room's.
func (s *Settings) sessionAt(t int64) (int64, bool) {
	l, renew := s.sessionDuration(), !s.DisableSessionRenewal
	for i := range s.Events {
		if e := &s.Events[i]; !e.Suspended && t >= e.opens().UnixMilli() && t < e.End.UnixMilli() {
			if e.SessionDuration > 0 {
				l = e.SessionDuration.Milliseconds()
			}
			if e.DisableSessionRenewal != nil {
				renew = !*e.DisableSessionRenewal
			}
			break
		}
	}
	return l, renew
}

// flow is what of s sets the flow of admissions (Floors.Flow).
func (s *Settings) flow() [5]any {
	return [5]any{s.TotalActiveUsers, s.NewUsersPerMinute, s.QueueingMethod, s.QueueAll, s.Suspended}
}

// sessionFloors are the floors of sessions at now: the latest of an
// Update's or a deploy's (s.floors) and of each event's opening or end
// up to now that made sessions longer.
func (s *Settings) sessionFloors(now int64) share.Floors {
	f := s.floors
	for i := range s.Events {
		for _, t := range [...]int64{s.Events[i].opens().UnixMilli(), s.Events[i].End.UnixMilli()} {
			if t <= now {
				before, renewed := s.sessionAt(t - 1)
				after, renew := s.sessionAt(t)
				f = f.Lengthened(t, before, renewed, after, renew)
			}
		}
	}
	return f
}

// Validate reports whether Room.Update would accept s: nil, or an error
// wrapping ErrInvalidConfig that says what is wrong. It sorts s.Events by
// start, in place.
func (s *Settings) Validate() error { return s.validateWith(parseTemplate) }

// validateWith checks s, with parse checking templates, and sorts its
// events.
func (s *Settings) validateWith(parse func(string) error) error {
	for _, e := range s.Events {
		switch {
		case e.TotalActiveUsers > maxLimit:
			return invalid("event %q: TotalActiveUsers must be at most %d, got %d", e.Name, maxLimit, e.TotalActiveUsers)
		case e.NewUsersPerMinute > maxLimit:
			return invalid("event %q: NewUsersPerMinute must be at most %d, got %d", e.Name, maxLimit, e.NewUsersPerMinute)
		}
	}
	if err := validateEvents(s.Events, parse); err != nil {
		return err
	}
	switch s.QueueingStatusCode {
	case 0, http.StatusOK, http.StatusAccepted, http.StatusTooManyRequests:
	default:
		return invalid("QueueingStatusCode must be 200, 202 or 429, got %d", s.QueueingStatusCode)
	}
	if d := s.SessionDuration; d != 0 && (d < minSessionDuration || d > maxSessionDuration) {
		return invalid("SessionDuration must be between %v and %v, got %v", minSessionDuration, maxSessionDuration, d)
	}
	if s.Template != "" {
		if err := parse(s.Template); err != nil {
			return fmt.Errorf("waitingroom: %w: Template: %w", ErrInvalidConfig, err)
		}
	}
	if err := s.Challenge.Validate(); err != nil {
		return invalidChallenge(err)
	}
	switch {
	case !s.QueueingMethod.valid():
		return invalid("QueueingMethod %q is not fifo, random, passthrough or reject", s.QueueingMethod)
	case s.TotalActiveUsers <= 0:
		return invalid("TotalActiveUsers must be > 0, got %d", s.TotalActiveUsers)
	case s.NewUsersPerMinute <= 0:
		return invalid("NewUsersPerMinute must be > 0, got %d", s.NewUsersPerMinute)
	case s.TotalActiveUsers > maxLimit:
		return invalid("TotalActiveUsers must be at most %d, got %d", maxLimit, s.TotalActiveUsers)
	case s.NewUsersPerMinute > maxLimit:
		return invalid("NewUsersPerMinute must be at most %d, got %d", maxLimit, s.NewUsersPerMinute)
	case s.NewUsersPerMinute > s.TotalActiveUsers:
		return invalid("NewUsersPerMinute (%d) must not exceed TotalActiveUsers (%d)", s.NewUsersPerMinute, s.TotalActiveUsers)
	}
	return nil
}

func (s *Settings) hash() uint64 {
	h := fnv.New64a()
	b, _ := json.Marshal(s)
	h.Write(b)
	return h.Sum64() | 1 // never 0, which means "never set"
}

// sessionDuration is the session's length in ms.
func (s *Settings) sessionDuration() int64 {
	if s.SessionDuration == 0 {
		return defaultSessionDuration.Milliseconds()
	}
	return s.SessionDuration.Milliseconds()
}

// queueingStatusCode is the status of waiting responses.
func (s *Settings) queueingStatusCode() int {
	if s.QueueingStatusCode == 0 {
		return http.StatusOK
	}
	return s.QueueingStatusCode
}

// cloneEvents returns a copy of events that shares no memory with it: the
// slice and each DisableSessionRenewal.
func cloneEvents(events []Event) []Event {
	events = slices.Clone(events)
	for i := range events {
		if p := events[i].DisableSessionRenewal; p != nil {
			v := *p
			events[i].DisableSessionRenewal = &v
		}
		events[i].Challenge = cloneChallenge(events[i].Challenge)
	}
	return events
}

// cloneChallenge returns a copy of c that shares no memory with it.
func cloneChallenge(c *challenge.Policy) *challenge.Policy {
	if c == nil {
		return nil
	}
	x := *c
	return &x
}

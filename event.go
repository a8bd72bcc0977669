package waitingroom

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-waitingroom/waitingroom/challenge"
)

// Event is a scheduled period with its own rules: a ticket sale, a
// vaccine sign-up opening. Events live in Settings, so every instance
// follows them. Zero override fields inherit the room's setting.
type Event struct {
	// Name identifies the event in logs and the admin API. Required.
	Name string `json:"name"`
	// Description is free text for operators: the admin API and status
	// page show it, visitors never see it. Default none; at most 1,024
	// bytes of UTF-8.
	Description string `json:"description,omitempty"`
	// Suspended keeps the event in the settings without applying it: the
	// room goes by its own settings through the event's times, as if it
	// were not there. It still may not overlap another event. Default false.
	Suspended bool `json:"suspended,omitempty"`
	// Start and End bound the event: [Start, End). Both required, on whole
	// minutes (arrival minutes are the queue's unit).
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// PrequeueStart, when set, opens a pre-queue before Start: every new
	// visitor waits and sees the time until the start. On a whole minute,
	// before Start. Default none.
	PrequeueStart time.Time `json:"prequeueStart,omitzero"`
	// ShuffleAtStart lets the visitors who joined during the pre-queue in
	// in a uniformly random order at Start, all ahead of those who arrive
	// after it (who queue behind them, first-in-first-out). Requires
	// PrequeueStart.
	ShuffleAtStart bool `json:"shuffleAtStart,omitempty"`

	// TotalActiveUsers and NewUsersPerMinute override the room's limits
	// during the event; set both or neither.
	TotalActiveUsers  int `json:"totalActiveUsers,omitempty"`
	NewUsersPerMinute int `json:"newUsersPerMinute,omitempty"`
	// SessionDuration overrides the room's (1 to 30 minutes).
	SessionDuration time.Duration `json:"sessionDuration,omitempty"`
	// DisableSessionRenewal overrides the room's when not nil.
	DisableSessionRenewal *bool `json:"disableSessionRenewal,omitempty"`
	// QueueingMethod overrides the room's.
	QueueingMethod QueueingMethod `json:"queueingMethod,omitempty"`
	// Template overrides the room's waiting page (Mustache source).
	Template string `json:"template,omitempty"`
	// Challenge overrides the room's challenge step (Settings.Challenge)
	// during the event, its pre-queue included; a Challenge of Kind
	// challenge.Off turns it off.
	Challenge *challenge.Policy `json:"challenge,omitempty"`
}

// shuffleKept is an error if events, replacing was at now, move the
// opening or the start of an event that shuffles its pre-queue, once it
// opened, or end it later: its seed's period is committed, and a later
// period would shuffle the rest anew (whose record lists no places).
// Shortening, suspending or removing it is allowed.
func shuffleKept(was, events []Event, now time.Time) error {
	for _, e := range was {
		if e.ShuffleAtStart && !now.Before(e.opens()) && now.Before(e.End) {
			for _, n := range events {
				if n.Name == e.Name && (!n.opens().Equal(e.opens()) || !n.Start.Equal(e.Start) || n.End.After(e.End)) {
					return invalid("event %q: its pre-queue is shuffled: its opening, start and end stay until it ends (shorten, suspend or remove it, or add another)", e.Name)
				}
			}
		}
	}
	return nil
}

// opens is when the event starts to govern the room: its pre-queue, or its
// start.
func (e *Event) opens() time.Time {
	if !e.PrequeueStart.IsZero() {
		return e.PrequeueStart
	}
	return e.Start
}

// maxEventDescription is the longest Event.Description, in bytes.
const maxEventDescription = 1024

func (e *Event) validate(parse func(string) error) error {
	name := strings.TrimSpace(e.Name)
	switch {
	case name == "":
		return invalid("event name is required")
	case len(e.Description) > maxEventDescription:
		return invalid("event %q: Description is %d bytes; at most %d", name, len(e.Description), maxEventDescription)
	case !utf8.ValidString(e.Description):
		return invalid("event %q: Description is not valid UTF-8", name)
	case e.Start.IsZero() || e.End.IsZero():
		return invalid("event %q needs Start and End", name)
	case !e.End.After(e.Start):
		return invalid("event %q ends before it starts", name)
	case !wholeMinute(e.Start) || !wholeMinute(e.End) || !wholeMinute(e.PrequeueStart):
		return invalid("event %q: Start, End and PrequeueStart must be on whole minutes", name)
	case e.opens().Year() < 1 || e.End.Year() > 9999:
		return invalid("event %q: its times must lie in the years 1 to 9999", name)
	case !e.PrequeueStart.IsZero() && !e.PrequeueStart.Before(e.Start):
		return invalid("event %q: PrequeueStart must be before Start", name)
	case e.ShuffleAtStart && e.PrequeueStart.IsZero():
		return invalid("event %q: ShuffleAtStart needs a pre-queue (PrequeueStart)", name)
	case (e.TotalActiveUsers == 0) != (e.NewUsersPerMinute == 0):
		return invalid("event %q: set TotalActiveUsers and NewUsersPerMinute together", name)
	case e.TotalActiveUsers < 0 || e.NewUsersPerMinute < 0 || e.NewUsersPerMinute > e.TotalActiveUsers:
		return invalid("event %q: limits must be > 0 with NewUsersPerMinute ≤ TotalActiveUsers", name)
	case e.SessionDuration != 0 && (e.SessionDuration < minSessionDuration || e.SessionDuration > maxSessionDuration):
		return invalid("event %q: SessionDuration must be between %v and %v", name, minSessionDuration, maxSessionDuration)
	case e.QueueingMethod != "" && !e.QueueingMethod.valid():
		return invalid("event %q: unknown QueueingMethod %q", name, e.QueueingMethod)
	}
	if e.Template != "" {
		if err := parse(e.Template); err != nil {
			return fmt.Errorf("waitingroom: %w: event %q: Template: %w", ErrInvalidConfig, name, err)
		}
	}
	if err := e.Challenge.Validate(); err != nil {
		return fmt.Errorf("event %q: %w", name, invalidChallenge(err))
	}
	// In UTC, as stored: an offset with seconds would not round-trip.
	e.PrequeueStart, e.Start, e.End = e.PrequeueStart.UTC(), e.Start.UTC(), e.End.UTC()
	return nil
}

func wholeMinute(t time.Time) bool { return t.IsZero() || t.Equal(t.Truncate(time.Minute)) }

// validateEvents checks each event and that no two overlap (pre-queues
// included). It sorts events by start.
func validateEvents(events []Event, parse func(string) error) error {
	for i := range events {
		if err := events[i].validate(parse); err != nil {
			return err
		}
	}
	slices.SortFunc(events, func(a, b Event) int { return a.opens().Compare(b.opens()) })
	for i := 1; i < len(events); i++ {
		if events[i].opens().Before(events[i-1].End) {
			return invalid("events %q and %q overlap", events[i-1].Name, events[i].Name)
		}
	}
	return nil
}

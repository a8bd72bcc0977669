package waitingroom

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom/page"
)

// Event is a scheduled period with its own rules: a ticket sale, a
// vaccine sign-up opening. Events live in Settings, so every instance
// follows them. Zero override fields inherit the room's setting.
type Event struct {
	// Name identifies the event in logs and the admin API. Required.
	Name string `json:"name"`
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
}

// opens is when the event starts to govern the room: its pre-queue, or its
// start.
func (e *Event) opens() time.Time {
	if !e.PrequeueStart.IsZero() {
		return e.PrequeueStart
	}
	return e.Start
}

func (e *Event) validate(parse func(string) error) error {
	name := strings.TrimSpace(e.Name)
	switch {
	case name == "":
		return invalid("event name is required")
	case e.Start.IsZero() || e.End.IsZero():
		return invalid("event %q needs Start and End", name)
	case !e.End.After(e.Start):
		return invalid("event %q ends before it starts", name)
	case !wholeMinute(e.Start) || !wholeMinute(e.End) || !wholeMinute(e.PrequeueStart):
		return invalid("event %q: Start, End and PrequeueStart must be on whole minutes", name)
	case !e.PrequeueStart.IsZero() && !e.PrequeueStart.Before(e.Start):
		return invalid("event %q: PrequeueStart must be before Start", name)
	case e.ShuffleAtStart && e.PrequeueStart.IsZero():
		return invalid("event %q: ShuffleAtStart needs a pre-queue (PrequeueStart)", name)
	case (e.TotalActiveUsers == 0) != (e.NewUsersPerMinute == 0):
		return invalid("event %q: set TotalActiveUsers and NewUsersPerMinute together", name)
	case e.TotalActiveUsers < 0 || e.NewUsersPerMinute < 0 || e.NewUsersPerMinute > e.TotalActiveUsers:
		return invalid("event %q: limits must be > 0 with NewUsersPerMinute ≤ TotalActiveUsers", name)
	case e.SessionDuration != 0 && (e.SessionDuration < MinSessionDuration || e.SessionDuration > MaxSessionDuration):
		return invalid("event %q: SessionDuration must be between %v and %v", name, MinSessionDuration, MaxSessionDuration)
	case e.QueueingMethod != "" && !e.QueueingMethod.valid():
		return invalid("event %q: unknown QueueingMethod %q", name, e.QueueingMethod)
	}
	if e.Template != "" {
		if err := parse(e.Template); err != nil {
			return fmt.Errorf("waitingroom: %w: event %q: Template: %w", ErrInvalidConfig, name, err)
		}
	}
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

// policy is what governs requests at one moment: the live settings with
// the overrides of the event in force applied.
type policy struct {
	Settings
	session  int64 // ms
	renew    bool
	reissue  int64 // ms between re-issues of an admitted visitor's cookie
	tmpl     *page.Template
	method   *method // what QueueingMethod does
	event    *Event  // the event in force (pre-queue included), or nil
	prequeue bool
	// lottery merges the arrival minutes [lottery[0], lottery[1]) of an
	// event's pre-queue into one bucket once it starts (ShuffleAtStart).
	lottery [2]int64
}

// bucket is the bucket a visitor of arrival minute b competes in: the
// pre-queue's minutes all count as its first one once the shuffle is on,
// so that those visitors race for the same slots in random order, all
// ahead of later arrivals.
func (p *policy) bucket(b int64) int64 {
	if p.lottery[1] != 0 && b >= p.lottery[0] && b < p.lottery[1] {
		return p.lottery[0]
	}
	return b
}

// policyAt returns the policy of settings s at now (Unix ms).
func (rm *Room) policyAt(s *Settings, now int64) policy {
	p := policy{
		Settings: *s,
		session:  rm.session,
		renew:    !rm.cfg.DisableSessionRenewal,
		tmpl:     rm.tmpl,
	}
	for i := range s.Events {
		e := &s.Events[i]
		if now < e.opens().UnixMilli() || now >= e.End.UnixMilli() {
			continue
		}
		p.event = e
		p.prequeue = now < e.Start.UnixMilli()
		if e.ShuffleAtStart && !p.prequeue {
			p.lottery = [2]int64{e.PrequeueStart.Unix() / 60, e.Start.Unix() / 60}
		}
		if e.TotalActiveUsers > 0 {
			p.TotalActiveUsers, p.NewUsersPerMinute = e.TotalActiveUsers, e.NewUsersPerMinute
		}
		if e.SessionDuration > 0 {
			p.session = e.SessionDuration.Milliseconds()
		}
		if e.DisableSessionRenewal != nil {
			p.renew = !*e.DisableSessionRenewal
		}
		if e.QueueingMethod != "" {
			p.QueueingMethod = e.QueueingMethod
		}
		if e.Template != "" {
			p.tmpl = rm.eventTemplate(e.Template)
		}
		break
	}
	p.reissue = min(time.Minute.Milliseconds(), p.session/5)
	if p.method = p.QueueingMethod.spec(); p.method == nil {
		p.method = &fifoMethod // settings from a newer version
	}
	return p
}

// countWindow is how long, in ms, an active visitor's count is kept: the
// longest session any event of s grants, so that a visitor admitted
// during an event is never dropped from the count while their cookie still
// says they are in.
func (rm *Room) countWindow(s *Settings) int64 {
	w := rm.session
	for _, e := range s.Events {
		w = max(w, e.SessionDuration.Milliseconds())
	}
	return w
}

// eventTemplate returns the parsed template for src, parsing it once. Event
// templates were validated when they were set; one that fails here (set by
// an instance with a different version) falls back to the room's page.
func (rm *Room) eventTemplate(src string) *page.Template {
	if t, ok := rm.templates.Load(src); ok {
		return t.(*page.Template)
	}
	t, err := page.Parse(src)
	if err != nil {
		rm.log.Error("waitingroom: an event template does not parse; using the room's page", "err", err)
		t = rm.tmpl
	}
	rm.templates.Store(src, t)
	return t
}

func parseTemplate(src string) error {
	_, err := page.Parse(src)
	return err
}

package waitingroom

import (
	"math"
	"time"

	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/template"
)

// policy is what governs requests at one moment: the live settings with
// the overrides of the event in force applied.
type policy struct {
	Settings
	session  int64        // ms
	floors   share.Floors // Settings.sessionFloors
	renew    bool
	reissue  int64 // ms between re-issues of an admitted visitor's cookie
	tmpl     *template.Template
	method   *method // what QueueingMethod does
	event    *Event  // the event in force (pre-queue included), or nil
	prequeue bool
	// listing is the pre-queue [opening, start) in seconds of an event that
	// shuffles it; lottery, the same once it starts (one bucket then).
	listing, lottery [2]int64
}

// bucket is the bucket a visitor of arrival second b competes in: the
// pre-queue's seconds all count as its first one once the shuffle is on,
// so that those visitors race for the same slots in random order, all
// ahead of later arrivals.
func (p *policy) bucket(b int64) int64 { return (&share.Rules{Lottery: p.lottery}).Bucket(b) }

// over reports whether the floors end the session of cookie c.
func (p *policy) over(c cookieState) bool {
	return c.lastCheckIn < p.floors.Seen || c.acceptedAt < p.floors.Admitted
}

// eventSpan returns the span [from, until) of Unix ms around now in which
// none of events opens, starts or ends, so that policyAt gives the same
// policy at every instant of it.
func eventSpan(events []Event, now int64) (from, until int64) {
	from, until = math.MinInt64, math.MaxInt64
	for i := range events {
		e := &events[i]
		for _, t := range [...]int64{e.opens().UnixMilli(), e.Start.UnixMilli(), e.End.UnixMilli()} {
			if t <= now {
				from = max(from, t)
			} else {
				until = min(until, t)
			}
		}
	}
	return from, until
}

// policyAt returns the policy of settings s at now (Unix ms).
func (rm *Room) policyAt(s *Settings, now int64) policy {
	p := policy{
		Settings: *s,
		session:  s.sessionDuration(),
		renew:    !s.DisableSessionRenewal,
		tmpl:     rm.template(s.Template),
	}
	for i := range s.Events {
		e := &s.Events[i]
		if e.Suspended || now < e.opens().UnixMilli() || now >= e.End.UnixMilli() {
			continue
		}
		p.event = e
		p.prequeue = now < e.Start.UnixMilli()
		if e.ShuffleAtStart {
			p.listing = [2]int64{e.PrequeueStart.Unix(), e.Start.Unix()}
			if !p.prequeue {
				p.lottery = p.listing
			}
		}
		if e.TotalActiveUsers > 0 {
			p.TotalActiveUsers, p.NewUsersPerMinute = e.TotalActiveUsers, e.NewUsersPerMinute
		}
		if e.SessionDuration > 0 {
			p.session = e.SessionDuration.Milliseconds()
			p.SessionDuration = e.SessionDuration
		}
		if e.DisableSessionRenewal != nil {
			p.renew = !*e.DisableSessionRenewal
			p.DisableSessionRenewal = *e.DisableSessionRenewal
		}
		if e.QueueingMethod != "" {
			p.QueueingMethod = e.QueueingMethod
		}
		if e.Template != "" {
			p.tmpl = rm.template(e.Template)
			p.Template = e.Template
		}
		if e.Challenge != nil {
			p.Challenge = e.Challenge
		}
		break
	}
	p.reissue = min(time.Minute.Milliseconds(), p.session/5)
	p.floors = s.sessionFloors(now)
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
	w := s.sessionDuration()
	for _, e := range s.Events {
		w = max(w, e.SessionDuration.Milliseconds())
	}
	return w
}

// maxTemplates bounds the parsed templates a room keeps: the room's and
// its events' of the latest settings, and a few earlier ones.
const maxTemplates = 32

// template returns the parsed template for src, parsing it once; "" is the
// default page. Templates were validated when they were set; one that
// fails here (set by an instance with a different version) falls back to
// the default page. Names no page fills (another release's) render empty,
// logged once.
func (rm *Room) template(src string) *template.Template {
	if src == "" {
		return template.Default()
	}
	if t, ok := rm.templates.Load(src); ok {
		return t.(*template.Template)
	}
	t, err := template.ParseAllowUnknown(src)
	if err != nil {
		rm.log.Error("waitingroom: a template in the settings does not parse; using the default page", "err", err)
		t = template.Default()
	}
	for _, u := range t.Unknown() {
		rm.log.Warn("waitingroom: a template in the settings uses a variable no page fills; it renders empty", "variable", u.String())
	}
	if rm.ntemplate.Add(1) > maxTemplates {
		// Settings changed many times: start again with the ones in use,
		// which the next policies parse again.
		rm.templates.Clear()
		rm.ntemplate.Store(1)
	}
	rm.templates.Store(src, t)
	return t
}

// checkTemplate is parseTemplate for templates of the shared settings,
// which are checked at every sync: one already parsed is not parsed again.
func (rm *Room) checkTemplate(src string) error {
	if _, ok := rm.templates.Load(src); ok {
		return nil
	}
	if _, err := template.ParseAllowUnknown(src); err != nil {
		return err
	}
	rm.template(src) // parses it again once, and keeps it
	return nil
}

// parseTemplate checks a template being set: unknown names are errors.
func parseTemplate(src string) error {
	_, err := template.Parse(src)
	return err
}

// policySpan is the policy of a view's settings over a span of time in
// which none of their events opens, starts or ends: [from, until), Unix ms.
type policySpan struct {
	v           *view
	from, until int64
	p           policy
}

// policyOf returns the policy in force at now (Unix ms) under view v. It is
// worked out once for each view and each span between its events'
// boundaries, and shared: callers must not change it.
func (rm *Room) policyOf(v *view, now int64) *policy {
	if s := rm.policy.Load(); s != nil && s.v == v && now >= s.from && now < s.until {
		return &s.p
	}
	s := &policySpan{v: v, p: rm.policyAt(&v.Settings, now)}
	s.from, s.until = eventSpan(v.Settings.Events, now)
	rm.policy.Store(s)
	return &s.p
}

package share

import "github.com/go-waitingroom/waitingroom/store"

// SessionTimes are the lengths, in ms, that decide how long a session
// record counts as active and how long it is kept.
type SessionTimes struct {
	// Window: a session lasts this long after its latest request (the
	// longest session any event of the settings grants).
	Window int64
	// Margin: and counts this much longer, for the reports of other
	// instances still on their way (0 for an instance alone: the sync
	// sees to that).
	Margin int64
	// Hold: its waiting cookies stay presentable this long after the
	// admission (QueueHold).
	Hold int64
	// Floors: sessions made longer that stay over.
	Floors Floors
}

// Floors keep over the sessions that settings made longer would bring
// back (Unix ms): a session last seen before Seen (a longer session
// length), or admitted before Admitted (renewal turned on: those capped
// stay capped), is over. Flow is when the settings last changed the
// flow of admissions (the limits, the queueing method, QueueAll or
// Suspended): the admission rate is counted from then (Rules.Since).
type Floors struct {
	Seen     int64 `json:"seen,omitempty"`
	Admitted int64 `json:"admitted,omitempty"`
	Flow     int64 `json:"flow,omitempty"`
}

// Over reports whether f ends the session of x.
func (f Floors) Over(x *store.Session) bool {
	return (x.Seen+1)*1000 <= f.Seen || (x.Admitted+1)*1000 <= f.Admitted
}

// Lengthened returns f with the sessions that a change at t (Unix ms)
// from sessions of before ms (renewed or not) to after ms (renew or not)
// makes longer: those over before stay over.
func (f Floors) Lengthened(t, before int64, renewed bool, after int64, renew bool) Floors {
	if after > before {
		f.Seen = max(f.Seen, t-before)
	}
	if renew && !renewed {
		f.Admitted = max(f.Admitted, t-before)
	}
	return f
}

// Alive reports whether the session of x counts as active at now (Unix
// ms): not revoked, not past its end, and seen within the window and
// margin, not before the floor.
func (t SessionTimes) Alive(x *store.Session, now int64) bool {
	if x.Revoked || (x.End != 0 && now >= x.End*1000) || t.Floors.Over(x) {
		return false
	}
	return now < (x.Seen+1)*1000+t.Window+t.Margin && x.Seen*1000 <= now+MaxClockLead
}

// kept reports whether the record of x must still be kept at now: while
// any cookie of the visitor, admitted or waiting, could still be
// presented, so that none of them is taken for a new visitor's.
func (t SessionTimes) kept(x *store.Session, now int64) bool {
	if x.Seen*1000 > now+MaxClockLead {
		return false // from a clock that ran hours ahead: not believed
	}
	until := max((x.Seen+1)*1000+t.Window, x.Admitted*1000+t.Hold) + t.Margin
	return now < until
}

// remembered is how long, in ms, an instance remembers a session it knows
// of (Local's): as long as the state keeps its record.
func (t SessionTimes) remembered() int64 { return t.Window + t.Hold + t.Margin }

// mergeSession merges the report b into a: the latest sign of life, the
// earliest admission and end, revoked if either is.
func mergeSession(a *store.Session, b store.Session) {
	if a.Admitted == 0 || (b.Admitted != 0 && b.Admitted < a.Admitted) {
		a.Admitted = b.Admitted
	}
	a.Seen = max(a.Seen, b.Seen)
	if b.End != 0 && (a.End == 0 || b.End < a.End) {
		a.End = b.End
	}
	a.Revoked = a.Revoked || b.Revoked
}

// revokedFrom reports whether the record x stands for a revoked session,
// and from when (Unix ms) the cookies of the session are refused: at once
// when it is revoked; at its end when it ends as a revoke under passes
// ends it (the room's passRevoke), seen through the last second before its
// end or later (a sign of life from an instance that had not learnt of
// it). A session that ends on its own, seen in its last second, looks the
// same, and is over at its end as well: no cookie of it passes then either
// way.
func revokedFrom(x *store.Session) (from int64, ok bool) {
	switch {
	case x.Revoked:
		return 0, true
	case x.End != 0 && x.Seen >= x.End-1:
		return x.End * 1000, true
	}
	return 0, false
}

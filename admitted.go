package waitingroom

import (
	"net/http"

	"github.com/go-waitingroom/waitingroom/internal/request"
	"github.com/go-waitingroom/waitingroom/store"
)

// An admitted visitor: the cookies that carry their session, whether it
// is alive, and the records of its requests.

// admit lets in a visitor whose session is alive: it reports the request
// as a sign of life of the session (at most once a second for each
// cookie value) and re-issues the cookie when it is due.
func (rm *Room) admit(d *decision, v *view, c cookieState, e *verifiedEntry, p *policy, now int64) {
	d.Outcome = outcomeAdmitted
	sec := floorDiv(now, 1000)
	if e == nil || e.touched.Load() != sec {
		if e != nil {
			e.touched.Store(sec)
		}
		x := store.Session{ID: c.id, Admitted: floorDiv(c.acceptedAt, 1000), Seen: sec, End: sessionEnd(p, c.acceptedAt)}
		rm.local.Lock()
		rm.local.Report(x)
		rm.local.Unlock()
	}
	if now-c.lastCheckIn >= p.reissue {
		c.lastCheckIn = now
		d.cookie = rm.codec.encode(c)
	}
	d.state = c
}

// shutOut answers an admitted visitor while the room rejects everyone:
// the closed page, or the waiting page with QueueAll or a pre-queue. The
// visitor's cookie is left alone.
func (rm *Room) shutOut(d *decision, v *view, p *policy, c cookieState, waiting bool) {
	if !waiting {
		d.Outcome = outcomeRejected
		return
	}
	rm.tooEarly(d, v, p, c, d.now, d.now+rm.cfg.RefreshInterval.Milliseconds())
}

// join lets the holder of a copy of a waiting cookie into the session its
// place became (recorded as x): the same visitor, no new admission. The
// request is a sign of life of the session. The local lock is held, and
// released.
func (rm *Room) join(d *decision, v *view, p *policy, c cookieState, x store.Session) {
	if p.method.rejects {
		rm.local.Unlock()
		rm.tooEarly(d, v, p, c, d.now, d.now+rm.cfg.RefreshInterval.Milliseconds())
		return
	}
	t := store.Session{ID: c.id, Admitted: x.Admitted, Seen: floorDiv(d.now, 1000)}
	rm.local.Report(t)
	rm.local.Unlock()
	c.acceptedAt, c.lastCheckIn, c.refresh = x.Admitted*1000, d.now, 0
	d.Outcome = outcomeAdmitted
	d.state = c
	d.cookie = rm.codec.encode(c)
}

// sessionEnd is the Unix second at which a session admitted at acceptedAt
// (Unix ms) ends whatever the visitor does: 0 with session renewal.
func sessionEnd(p *policy, acceptedAt int64) int64 {
	if p.renew {
		return 0
	}
	return -floorDiv(-(acceptedAt + p.session), 1000) // rounded up
}

// recordAlive reports whether the session recorded as x is alive at now
// (Unix ms) under policy p: the visitor was seen within the session
// (to the second) and not before its floor, and it was neither revoked
// nor capped.
func recordAlive(x *store.Session, p *policy, now int64) bool {
	if x.Revoked || (x.End != 0 && now >= x.End*1000) || p.floors.Over(x) {
		return false
	}
	if !p.renew && now-x.Admitted*1000 >= p.session {
		return false
	}
	return now < (x.Seen+1)*1000+p.session
}

// readCookie returns the state in the best of r's cookies of the room's
// name, and its verified entry when it has one; ok is false when the
// visitor is new. Best is an admitted cookie whose session is alive, then
// a waiting one whose place is held, the oldest place first: a stale or
// foreign cookie that a sibling domain set under the same name cannot
// hide the visitor's own.
func (rm *Room) readCookie(r *http.Request, p *policy, now int64) (best cookieState, be *verifiedEntry, ok bool) {
	bestRank := 0
	for raw := range request.Cookies(r, rm.cookieName, maxSameName) {
		c, e, valid := rm.openCookie(raw, now)
		if !valid {
			continue
		}
		rank := 1
		switch {
		case c.acceptedAt > 0 && (p.renew || now-c.acceptedAt < p.session) && now-c.lastCheckIn < p.session && !p.over(c):
			rank = 3
		case c.acceptedAt == 0 && now-c.lastCheckIn < rm.hold:
			rank = 2
		}
		if rank > bestRank || (rank == bestRank && rank == 2 && c.bucket < best.bucket) {
			best, be, bestRank = c, e, rank
		}
	}
	return best, be, bestRank > 0
}

// openCookie opens one cookie value; valid is false for anything that is
// not a cookie of this room, or carries times from further ahead than any
// instance's clock may run (the visitor is new rather than frozen or let
// in).
func (rm *Room) openCookie(raw string, now int64) (c cookieState, e *verifiedEntry, valid bool) {
	if e, valid = rm.verified.get(raw); valid {
		c = e.state
	} else {
		var err error
		if c, err = rm.codec.decode(raw); err != nil {
			return cookieState{}, nil, false
		}
		if c.acceptedAt > 0 {
			e = rm.verified.put(raw, c, minuteOf(now))
		}
	}
	if lim := now + maxClockLead; c.lastCheckIn > lim || c.acceptedAt > lim || c.bucket*1000 > lim {
		return cookieState{}, nil, false
	}
	return c, e, true
}

// sessionAlive reports whether the admitted visitor of cookie c may pass
// at now: not revoked, not capped, and seen within the session. The
// cookie's check-in is renewed only now and then, so when it is older
// than the session the latest request of any holder of the visitor's
// cookies decides, as known from the shared state and this instance.
func (rm *Room) sessionAlive(v *view, p *policy, c cookieState, now int64) bool {
	if rm.refused(c.id, now) {
		return false
	}
	if !p.renew && now-c.acceptedAt >= p.session {
		return false
	}
	if v.Instances > 1 && !rm.syncer.Healthy() {
		// Cut off from the store, this instance's signs of life reach no
		// other, which give the slot away a session after the latest
		// they know of: a check-in of the cookie's at another instance
		// since this one last reported the session, or the record of the
		// latest sync (TestPartitionLongerThanASession).
		rm.local.Lock()
		k, mine := rm.local.Reported(c.id)
		rm.local.Unlock()
		if (!mine || floorDiv(c.lastCheckIn, 1000) > k.Seen) && now-c.lastCheckIn < p.session && !p.over(c) {
			return true
		}
		if x, ok := v.Session(c.id); ok {
			return recordAlive(&x, p, now)
		}
		return now < v.At+p.session // let in since: none knows more
	}
	if now-c.lastCheckIn < p.session && !p.over(c) {
		return true
	}
	rm.local.Lock()
	x, found := rm.local.Lookup(&v.View, c.id)
	rm.local.Unlock()
	return found && recordAlive(&x, p, now)
}

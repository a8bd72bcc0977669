package waitingroom

import (
	"math"
	"net/http"
	"time"

	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/store"
)

// check decides what happens to r, into d, which is zero, without writing
// a response (a decision is large: Handler keeps its own from being
// copied). It does no store I/O: every decision is local, against the
// grant of the latest sync. A missing, malformed, tampered, foreign or
// expired cookie is ordinary input: the visitor is new. The only error is
// ErrClosed.
func (rm *Room) check(r *http.Request, d *decision) error {
	var a answer
	err := rm.decide(r, d, &a)
	if a.claim != 0 {
		// decide claimed the due chance of a place for the answer to a
		// hosted challenge: the provider is asked without the lock, and
		// the request decided again with its verdict. Meanwhile the
		// place's other requests get the page without a chance.
		defer rm.unclaim(a.claim)
		rm.askProvider(r, &a)
		*d = decision{}
		err = rm.decide(r, d, &a)
	}
	return err
}

// decide is check's decision, with what is known of the answer a request
// brings to the challenge (a hosted one's verdict, once asked).
func (rm *Room) decide(r *http.Request, d *decision, a *answer) error {
	if rm.closed.Load() {
		return ErrClosed
	}
	v := rm.syncer.Snapshot()
	if v.Settings.Suspended || rm.bypassed(r) {
		if !v.Settings.Suspended {
			rm.counters.bypassed.Add(1)
		}
		d.Outcome = outcomeBypassed
		return nil
	}
	now := rm.now()
	pol := rm.policyOf(v, now)
	d.policy, d.at, d.now = pol, v.At, now
	// Reject closes the site: nobody reaches the application, admitted
	// visitors included. With QueueAll or a pre-queue as well, visitors
	// wait on a page that refreshes (and new ones take their places), so
	// that they are there when the room opens; otherwise the page is the
	// closed one, which does not refresh.
	shut := pol.method.rejects
	closed := pol.QueueAll || pol.prequeue
	c, e, ok := rm.readCookie(r, pol, now)
	if ok && c.acceptedAt > 0 {
		if rm.sessionAlive(v, pol, c, now) {
			if shut {
				rm.shutOut(d, v, pol, c, closed)
				return nil
			}
			rm.admit(d, v, c, e, pol, now)
			return nil
		}
		// The session is over: back of the queue (below, not held).
	}
	if rm.cfg.OnStoreError == FailOpen && !rm.syncer.Healthy() {
		d.Outcome = outcomeBypassed
		return nil
	}
	if shut && !closed {
		d.Outcome = outcomeRejected
		return nil
	}
	held := ok && c.acceptedAt == 0 && now-c.lastCheckIn < rm.hold
	if held && now < c.lastCheckIn+c.refresh {
		// Too early: the same page, no new chance.
		rm.tooEarly(d, v, pol, c, c.lastCheckIn, c.lastCheckIn+c.refresh)
		return nil
	}

	// The challenge's answer, bound to the place the cookie holds, or to
	// the new place it brings once its own lapsed: a proof of work is
	// checked here, before the lock; a hosted one once its chance is due.
	chal := rm.challengeOf(v, pol)
	if chal != nil && ok && (!held || c.chal != chalPassed) && !a.asked {
		id := c.id
		if !held {
			id = successor(c.id, c.lastCheckIn)
		}
		*a = rm.readAnswer(r, chal, id, now)
	}

	rm.local.Lock()
	if ok && c.acceptedAt == 0 {
		// One place, one admission: a place that became a session is
		// that session for every holder of a copy of its cookie (lapsed
		// or not, while the session lives), and a place whose session
		// ended or was revoked is spent.
		if x, found := rm.lookupLocked(v, c.id); found {
			if recordAlive(&x, pol, now) {
				rm.join(d, v, pol, c, x)
				return nil
			}
			held = false
		}
	}
	fresh := !held
	owed := false // a new place whose visitor has not passed the challenge
	if fresh && ok {
		// A cookie whose place lapsed or was spent, or whose session
		// ended, brings a new place: the same one for every copy of it
		// (its successor identity), so that resending it is one
		// visitor, not a new one at every request. The visitor's
		// challenge comes along unless passed (once per place).
		var st int8
		st, owed = carried(c.chal)
		id := successor(c.id, c.lastCheckIn)
		if x, found := rm.lookupLocked(v, id); found {
			if recordAlive(&x, pol, now) {
				c.id = id
				rm.join(d, v, pol, c, x)
				return nil
			}
			// The successor's place is spent too: a new visitor like
			// one without a cookie (not remembered).
			id, ok = rm.newID(), false
		}
		c = cookieState{id: id, bucket: minuteOf(now), chal: st}
		if ch, seen := rm.chances.Get(id); seen {
			c.bucket = ch.bucket // a place held by an earlier copy
			fresh = false
		}
	} else if fresh {
		c = cookieState{id: rm.newID(), bucket: minuteOf(now)}
	}
	var (
		ch  chance
		due int64 // when the chance now taken was due; 0 for a new place
	)
	// Where the cookie says its visitor counts as waiting: at its
	// check-in, when its challenge's state then let it count.
	cookieCounted := counts(chal, c.chal)
	// Random with several instances: only the visitors the draw holds
	// (slots.go) take a slot, and they may ask again before their chance
	// is due (the draw gives nothing more to whoever asks more often).
	// Every slot by pick (fleetScarce) draws its own way, below.
	drawing := (!fresh || ok) && !closed && !pol.method.ordered && !pol.method.passes &&
		pol.method.layout != nil && v.Instances > 1 && !v.Scarce
	won := drawing && drawn(c.id, now, rm.cfg.RefreshInterval.Milliseconds(), drawMargin*rm.drawOddsLocked(v, pol, now))
	if !fresh {
		// One chance per refresh interval, whichever copy of the cookie
		// asks: a copy sent again is as early as the latest one.
		var seen bool
		ch, seen = rm.chances.Get(c.id)
		if seen {
			// The place's challenge as its latest chance here left it:
			// a copy of the cookie from before cannot undo it.
			c.chal = mergeChal(c.chal, ch.chal)
		}
		switch {
		case seen && now < ch.next && (!won || awaits(chal, c.chal)):
			rm.local.Unlock()
			// The latest attempt is this cookie's when its interval
			// leads to the chance due; a copy's (older) says nothing
			// of it, and the nominal interval stands in for the one
			// drawn.
			last := c.lastCheckIn
			if last+c.refresh != ch.next {
				last = ch.next - rm.cfg.RefreshInterval.Milliseconds()
			}
			rm.tooEarly(d, v, pol, c, last, ch.next)
			return nil
		case seen:
			due = ch.next
			switch slot := slotOf(c.lastCheckIn); {
			case slot > ch.slot:
				// The visitor had a chance elsewhere since this
				// instance's (another instance's cookie is newer):
				// their count is where that chance left it.
				ch.bucket, ch.slot, ch.counted = c.bucket, slot, cookieCounted
				due = max(due, c.lastCheckIn+c.refresh)
			case slot == ch.slot && cookieCounted:
				// In the same slot, as when this instance held the
				// visitor for the challenge and they passed it
				// elsewhere a second later: counted there.
				ch.counted = true
			}
		default:
			ch = chance{bucket: c.bucket, slot: slotOf(c.lastCheckIn), counted: cookieCounted}
			due = c.lastCheckIn + c.refresh
		}
	}
	gate := gatePass
	if chal != nil {
		verdict, step := rm.verdictLocked(chal, a, c.id, c.chal)
		if step != verdictReady {
			rm.local.Unlock()
			rm.answerLater(d, v, pol, c, step)
			return nil
		}
		gate = rm.challengeGate(&c, chal, verdict, owed)
	}
	rm.local.Attempt()
	admit := !closed && pol.method.passes && gate == gatePass
	if !closed && !admit && gate == gatePass && (!drawing || won) {
		admit = rm.local.Take(pol.bucket(c.bucket), fresh)
		if until, ok := v.Picks[c.id]; !admit && ok && !fresh && now < until && rm.syncer.Healthy() {
			// Picked by the fleet's aggregator (internal/share: picks.go): let in
			// from the pick's slot, whichever instance the visitor
			// reached. Not while this instance's syncs fail: its
			// admission might reach the state after the pick expired.
			admit = true
		}
	}
	if !fresh && ch.counted && slotCounted(ch.slot, now, rm.waitWindow) {
		// The visitor is counted where its latest chance left it.
		rm.local.Count(ch.bucket, ch.slot, -1)
	}
	if admit {
		x := store.Session{ID: c.id, Admitted: floorDiv(now, 1000), Seen: floorDiv(now, 1000), End: sessionEnd(pol, now)}
		rm.reportLocked(x)
		rm.local.Wait(c.id, observedWait(c.bucket, now, fresh))
		rm.chances.Del(c.id)
	} else {
		// The next chance is due an interval after this one was due, not
		// after the request came: a visitor a little late (the page's
		// whole seconds, the network) takes as many chances as one
		// polling the moment it is due, and gains nothing by polling.
		base := now
		if due > 0 && now-due <= rm.lateness {
			base = due
		}
		next := max(base+rm.jitteredRefresh(), now+1000)
		if chal != nil && c.chal == chalNone {
			c.chal = chalGiven // a queued visitor's challenge, given with this page
			rm.counters.chalIssued.Add(1)
		}
		// With OnFail infinite, a parked place is not counted as waiting,
		// nor one held for the challenge (with challenge.Everyone): FIFO
		// would reserve them slots that nobody takes.
		counted := counts(chal, c.chal)
		if gate == gateHold && chal.Kind == challenge.PoW {
			next = now + powHoldRefresh // back as soon as the page's worker is done
		}
		c.refresh = next - now
		if won && gate == gatePass {
			// The draw holds the visitor, and no slot is free here: back
			// soon, while it is theirs.
			next = now + drawRetry(rm.cfg.RefreshInterval.Milliseconds())
			c.refresh = next - now
		}
		if !fresh && !closed && gate == gatePass && counted && !pol.method.ordered && v.Fleet && v.Scarce && pol.method.layout != nil {
			// Random, in a fleet with few slots an instance (fleetScarce):
			// every slot goes by pick, drawn among the visitors asked for. A
			// visitor is asked for while the draw (slots.go) holds them,
			// with twice its odds (drawScarceMargin), and comes back as
			// soon as the pick can be out: the picks are used within
			// seconds (those of a minute's last seconds would count
			// against it, used in the next), and the visitors not asked
			// for keep their refresh interval. The draw is the visitor's
			// and the shared clock's: copies of a cookie, or old cookies
			// sent again, at any instance, draw the same, and a visitor
			// the draw holds is asked for at every chance while it does,
			// however few they take. (Asked for at a draw of their own
			// with four times the odds, groups of five clients sharing a
			// cookie across 40 instances waited 0.54 of polite visitors'
			// wait: each client's chance put them in another round's
			// draw.)
			refresh := rm.cfg.RefreshInterval.Milliseconds()
			odds := min(1, drawScarceMargin*rm.drawOddsLocked(v, pol, now))
			if rm.local.MayAsk(c.id) && drawn(c.id, now, refresh, odds) {
				next = min(next, now+share.PickWait(rm.cfg.SyncInterval))
				c.refresh = next - now
				rm.local.Ask(c.id, pol.bucket(c.bucket), next+rm.lateness)
			}
		} else if !fresh && !closed && gate == gatePass && counted && pol.method.ordered && v.Near(c.bucket, int64(pol.NewUsersPerMinute)) {
			// No slot here for a visitor whose turn is near: the fleet's
			// aggregator may pick them for a slot that any instance lets
			// them in from (internal/share: picks.go). One the reserve holds a slot for
			// comes back as soon as the pick can be out; so does one
			// whom a view without the aggregator (a classic sync, while
			// the fleet forms again after an outage) shows reserved.
			b := pol.bucket(c.bucket)
			asked := v.Fleet && rm.local.MayAsk(c.id)
			// With few slots an instance (fleetScarce), every slot goes
			// by pick: one whose turn comes within a refresh interval
			// comes back as soon as the pick can be out, too.
			soon := v.Scarce && asked && v.Near(c.bucket, max(1, int64(pol.NewUsersPerMinute)*rm.cfg.RefreshInterval.Milliseconds()/60_000))
			if b <= v.ReservedTo && (asked || !v.Fleet) || soon {
				next = min(next, now+share.PickWait(rm.cfg.SyncInterval))
				c.refresh = next - now
			}
			if asked {
				rm.local.Ask(c.id, b, next+rm.lateness)
			}
		}
		if counted {
			rm.local.Count(c.bucket, slotOf(now), 1)
		}
		if ok {
			// A new visitor's copies (if any) are held back by their own
			// cookie until its first chance is due, so only a visitor who
			// came with a cookie that brought a place is remembered: a
			// flood of requests without one costs no memory.
			rm.chances.Set(c.id, chance{next: next, bucket: c.bucket, slot: slotOf(now), chal: c.chal, counted: counted})
		}
	}
	rm.local.Unlock()

	c.lastCheckIn = now
	if admit {
		rm.counters.admitted.Add(1)
		c.acceptedAt, c.refresh = now, 0
		d.Outcome = outcomeAdmitted
		d.state = c
	} else {
		if fresh {
			rm.counters.queued.Add(1)
		}
		if chal != nil && c.chal != chalPassed {
			d.chal, d.state.id = chal, c.id
		}
		d.Outcome = outcomeWaiting
		d.RefreshAfter = time.Duration(c.refresh) * time.Millisecond
		d.last = now
		d.Estimate = rm.estimate(v, pol, c.bucket, fresh)
	}
	d.cookie = rm.codec.encode(c)
	return nil
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
	rm.reportLocked(t)
	rm.local.Unlock()
	c.acceptedAt, c.lastCheckIn, c.refresh = x.Admitted*1000, d.now, 0
	d.Outcome = outcomeAdmitted
	d.state = c
	d.cookie = rm.codec.encode(c)
}

// successor is the identity of the new place that cookie (id, lastCheckIn)
// brings once its own place lapsed or its session ended: a mix of the two,
// the same for every copy of the cookie.
func successor(id uint64, lastCheckIn int64) uint64 { return share.Mix(id, lastCheckIn) }

// chance is what an instance remembers of a waiting visitor's latest
// chance: when the next one is due, where the visitor is counted (if it
// counted them), and the state of their challenge it left.
type chance struct {
	next         int64 // Unix ms
	bucket, slot int64
	chal         int8 // chalNone, chalGiven, chalPassed, chalFailed (challenge.go)
	counted      bool // the visitor counts as waiting at (bucket, slot)
}

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
		rm.reportLocked(x)
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

// tooEarly answers a waiting visitor who gets no new chance before next
// (Unix ms): the same page, the cookie left alone. last (Unix ms) is the
// visitor's latest attempt that counted, which the page shows as
// lastUpdated.
func (rm *Room) tooEarly(d *decision, v *view, p *policy, c cookieState, last, next int64) {
	d.Outcome = outcomeWaiting
	d.RefreshAfter = time.Duration(max(next-d.now, 1000)) * time.Millisecond
	d.last = min(last, d.now)
	if ch := rm.challengeOf(v, p); ch != nil && (c.chal == chalGiven || c.chal == chalFailed) {
		d.chal, d.state.id = ch, c.id // the same page: still the challenge
	}
	d.Estimate = rm.estimate(v, p, c.bucket, false)
}

// sessionEnd is the Unix second at which a session admitted at acceptedAt
// (Unix ms) ends whatever the visitor does: 0 with session renewal.
func sessionEnd(p *policy, acceptedAt int64) int64 {
	if p.renew {
		return 0
	}
	return -floorDiv(-(acceptedAt + p.session), 1000) // rounded up
}

// reportLocked reports x, a session's admission, sign of life or revoke,
// to the next sync and notes it. The local lock must be held.
func (rm *Room) reportLocked(x store.Session) { rm.local.Report(x) }

// lookupLocked returns what is known of the session of visitor id: the
// record of the latest sync merged with this instance's reports since.
// The local lock must be held.
func (rm *Room) lookupLocked(v *view, id uint64) (store.Session, bool) {
	return rm.local.Lookup(&v.View, id)
}

// recordAlive reports whether the session recorded as x is alive at now
// (Unix ms) under policy p: the visitor was seen within the session
// (to the second), and it was neither revoked nor capped.
func recordAlive(x *store.Session, p *policy, now int64) bool {
	if x.Revoked || (x.End != 0 && now >= x.End*1000) {
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
	for raw := range cookieValues(r, rm.cookieName, maxSameName) {
		c, e, valid := rm.openCookie(raw, now)
		if !valid {
			continue
		}
		rank := 1
		switch {
		case c.acceptedAt > 0 && (p.renew || now-c.acceptedAt < p.session) && now-c.lastCheckIn < p.session:
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
	if lim := now + maxClockLead; c.lastCheckIn > lim || c.acceptedAt > lim || c.bucket*60_000 > lim {
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
	if now-c.lastCheckIn < p.session {
		return true
	}
	rm.local.Lock()
	x, found := rm.lookupLocked(v, c.id)
	rm.local.Unlock()
	return found && recordAlive(&x, p, now)
}

// jitteredRefresh returns a refresh interval in ms, varied at random by up
// to RefreshJitter either way.
// jitteredRefresh draws a waiting visitor's next refresh interval, in ms:
// RefreshInterval varied by up to RefreshJitter, in whole seconds. Whole
// seconds because that is what the Refresh header and
// refreshIntervalSeconds can say: a browser that obeys them comes back
// the moment it is eligible, where an interval of 20.3 s, announced as
// 21, would make every polite visitor 0.5 s late on average, a head start
// for clients that poll every second. The rounding is random (20.3 s is
// 21 s three times in ten), so the mean stays RefreshInterval and short
// intervals keep their jitter.
func (rm *Room) jitteredRefresh() int64 {
	f := 1 + rm.cfg.RefreshJitter*(2*rm.cfg.Random()-1)
	x := rm.cfg.RefreshInterval.Seconds() * f
	secs := math.Floor(x)
	if rm.cfg.Random() < x-secs {
		secs++
	}
	return int64(max(secs, 1)) * 1000
}

// estimate is the wait of a visitor of bucket b as of view v under policy
// p; a fresh visitor is behind everyone already waiting.
func (rm *Room) estimate(v *view, p *policy, b int64, fresh bool) Estimate {
	if p.QueueAll || p.prequeue || p.method.estimate == nil {
		return Estimate{}
	}
	return p.method.estimate(v, p, p.bucket(b), fresh)
}

// drawOddsLocked returns the odds of the draw (slots.go) of the refresh
// interval of the shared clock that now (Unix ms) is in, as of view v
// under policy p: worked out at this instance's first draw of the
// interval and kept for the rest of it, so that a visitor who asks more
// often does not find the odds at their highest. The local lock must be
// held.
func (rm *Room) drawOddsLocked(v *view, p *policy, now int64) float64 {
	refresh := rm.cfg.RefreshInterval.Milliseconds()
	w := floorDiv(now, refresh)
	if d := &rm.draw; d.interval != w || d.settings != v.SettingsVersion || d.interval == 0 {
		*d = drawInterval{interval: w, settings: v.SettingsVersion, odds: drawOdds(v, p, refresh, now)}
	}
	return rm.draw.odds
}

// drawInterval is an instance's odds of the draw in one refresh interval.
type drawInterval struct {
	interval int64  // the interval's number (ms / RefreshInterval)
	settings uint64 // the version of the settings they were worked out under
	odds     float64
}

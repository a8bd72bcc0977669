package waitingroom

import (
	"cmp"
	"math"
	"net/http"
	"time"

	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/store"
)

// check decides what happens to r, into x.d (zero but for page, kept by
// the caller: not moved to the heap nor copied), without writing a
// response or any store I/O: every decision is local, against the latest
// sync's grant. A missing, malformed, tampered, foreign or expired cookie
// is ordinary input: the visitor is new. The only error is ErrClosed.
func (rm *Room) check(r *http.Request, x *visit) error {
	err := rm.decide(r, x)
	if claim := x.a.claim; claim != 0 {
		// decide claimed the due chance of a place for the answer to a
		// hosted challenge: the provider is asked without the lock, and
		// the request decided again with its verdict. Meanwhile the
		// place's other requests get the page without a chance.
		defer rm.unclaim(claim)
		a := x.a
		rm.askProvider(r, &a)
		*x = visit{a: a, page: x.page}
		err = rm.decide(r, x)
	}
	return err
}

// visit is one request's way through decide: what each step found, for
// the steps after it. ok: the request brought a cookie with a place;
// shut: the method rejects everyone; closed: nobody is let in (QueueAll,
// a pre-queue); held: the cookie's place is held; fresh: a new place;
// owed: a new place whose visitor has not passed the challenge; ch: the
// place's latest chance here, due when the one now taken was due (0 for
// a new place); cookieCounted: the cookie's visitor counts as waiting at
// its check-in; drawing: only those the draw holds take a slot, won: it
// holds this one; shuffled: in an event's shuffled pre-queue; page: the
// page of a refusal (hook.PageHandler).
type visit struct {
	r   *http.Request
	d   decision // what check decided
	a   answer   // the answer to the challenge the request brings
	v   *view
	pol *policy
	now int64 // Unix ms
	c   cookieState
	e   *verifiedEntry // c's, for an admitted cookie

	ok, shut, closed, held, fresh, owed                bool
	cookieCounted, drawing, won, admit, shuffled, page bool

	chal *challenge.Policy // in force, or nil
	ch   chance
	due  int64
	gate gate
}

// decide is check's decision, with what is known of the answer a request
// brings to the challenge (a hosted one's verdict, once asked). Its steps
// run in turn until one answers the request: arrive (no place needed),
// then under the local lock placeLocked (which place), chanceLocked (is
// a chance due), gateLocked (the challenge), takeLocked (a slot) and,
// for a visitor not let in, waitLocked (the next chance); conclude writes
// the decision.
func (rm *Room) decide(r *http.Request, x *visit) error {
	if rm.closed.Load() {
		return ErrClosed
	}
	x.r, x.v = r, rm.syncer.Snapshot()
	if rm.arrive(x) {
		return nil
	}
	rm.readChallenge(x)
	rm.local.Lock()
	if rm.placeLocked(x) || rm.chanceLocked(x) || rm.gateLocked(x) {
		return nil // answered, and the lock released
	}
	rm.local.Attempt()
	rm.takeLocked(x)
	if !x.admit {
		rm.waitLocked(x)
	}
	rm.local.Unlock()
	rm.conclude(x)
	return nil
}

// arrive answers the requests that need no place in the queue: in a
// suspended room or bypassed, an admitted visitor's whose session is
// alive (on the page of an answer that refused it, as between chances),
// any during a store outage under FailOpen, a new visitor's on a closed
// site, and a waiting visitor's back before their chance. It reports
// whether it answered.
func (rm *Room) arrive(x *visit) bool {
	v, d := x.v, &x.d
	if v.Settings.Suspended || rm.bypassed(x.r) {
		if !v.Settings.Suspended {
			rm.counters.bypassed.Add(1)
		}
		d.Outcome = outcomeBypassed
		return true
	}
	now := rm.now()
	pol := rm.policyOf(v, now)
	x.pol, x.now = pol, now
	d.policy, d.at, d.now = pol, v.At, now
	// Reject closes the site: nobody reaches the application, admitted
	// visitors included. With QueueAll or a pre-queue as well, visitors
	// wait on a page that refreshes (and new ones take their places), so
	// that they are there when the room opens; otherwise the page is the
	// closed one, which does not refresh.
	x.shut = pol.method.rejects
	x.closed = pol.QueueAll || pol.prequeue
	c, e, ok := rm.readCookie(x.r, pol, now)
	x.c, x.e, x.ok = c, e, ok
	if ok && c.acceptedAt > 0 {
		if rm.sessionAlive(v, pol, c, now) {
			switch {
			case x.shut:
				rm.shutOut(d, v, pol, c, x.closed)
			case x.page:
				// The answer before refused it (a revoke this instance
				// does not know yet): the waiting page, no chance taken.
				rm.tooEarly(d, v, pol, c, now, now+rm.cfg.RefreshInterval.Milliseconds())
			default:
				rm.admit(d, v, c, e, pol, now)
			}
			return true
		}
		if v.Instances > 1 && !rm.syncer.Healthy() {
			// Cut off from the store: the others may count the session
			// still; the waiting page, the cookie kept, until it answers.
			rm.tooEarly(d, v, pol, c, now, now+rm.cfg.RefreshInterval.Milliseconds())
			return true
		}
		// The session is over: back of the queue (below, not held).
	}
	if rm.cfg.OnStoreError == FailOpen && !rm.syncer.Healthy() {
		d.Outcome = outcomeBypassed
		return true
	}
	if x.shut && !x.closed {
		d.Outcome = outcomeRejected
		return true
	}
	x.held = ok && c.acceptedAt == 0 && now-c.lastCheckIn < rm.hold
	if x.held && now < c.lastCheckIn+c.refresh {
		// Too early: the same page, no new chance.
		rm.tooEarly(d, v, pol, c, c.lastCheckIn, c.lastCheckIn+c.refresh)
		return true
	}
	return false
}

// readChallenge reads the challenge's answer, bound to the place the
// cookie holds, or to the new place it brings once its own lapsed: a
// proof of work is checked here, before the lock; a hosted one once its
// chance is due.
func (rm *Room) readChallenge(x *visit) {
	x.chal = rm.challengeOf(x.v, x.pol)
	c := &x.c
	if x.chal != nil && x.ok && (!x.held || c.chal != chalPassed) && !x.a.asked {
		id := c.id
		if !x.held {
			id = successor(c.id, c.lastCheckIn)
		}
		x.a = rm.readAnswer(x.r, x.chal, id, x.now)
	}
}

// placeLocked finds the visitor's place: the one their cookie holds, a
// new one it brings, or a new visitor's. A place that became a session
// joins it instead: then placeLocked reports that it answered, with the
// local lock, which it holds, released.
func (rm *Room) placeLocked(x *visit) bool {
	v, pol, now := x.v, x.pol, x.now
	if x.ok && x.c.acceptedAt == 0 {
		// One place, one admission: a place that became a session is
		// that session for every holder of a copy of its cookie (lapsed
		// or not, while the session lives), and a place whose session
		// ended or was revoked is spent.
		if s, found := rm.local.Lookup(&v.View, x.c.id); found {
			if recordAlive(&s, pol, now) {
				rm.join(&x.d, v, pol, x.c, s)
				return true
			}
			x.held = false
		}
	}
	x.fresh = !x.held
	switch {
	case x.fresh && x.ok:
		// A cookie whose place lapsed or was spent, or whose session
		// ended, brings a new place: the same one for every copy of it
		// (its successor identity), so that resending it is one
		// visitor, not a new one at every request. The visitor's
		// challenge comes along unless passed (once per place).
		var st int8
		st, x.owed = carried(x.c.chal)
		id := successor(x.c.id, x.c.lastCheckIn)
		if s, found := rm.local.Lookup(&v.View, id); found {
			if recordAlive(&s, pol, now) {
				x.c.id = id
				rm.join(&x.d, v, pol, x.c, s)
				return true
			}
			// The successor's place is spent too: a new visitor like
			// one without a cookie (not remembered).
			id, x.ok = rm.newID(), false
		}
		x.c = cookieState{id: id, bucket: secondOf(now), chal: st}
		if ch, seen := rm.chances.Get(id); seen {
			x.c.bucket = ch.bucket // a place held by an earlier copy
			x.fresh = false
		}
	case x.fresh:
		x.c = cookieState{id: rm.newID(), bucket: secondOf(now)}
	}
	return false
}

// chanceLocked works out the place's chance: whether the draw holds the
// visitor, and for a place this instance gave a chance before, whether
// the next one is due, and where the visitor counts as waiting. When it
// is not due, chanceLocked reports that it answered, with the local
// lock, which it holds, released.
func (rm *Room) chanceLocked(x *visit) bool {
	v, pol, now, c := x.v, x.pol, x.now, &x.c
	x.cookieCounted = counts(x.chal, c.chal)
	// Random: only the visitors the draw holds (slots.go) take a slot,
	// at their chances as everyone (asking more often, copies would take
	// the slots first). Every slot by pick (fleetScarce) draws its own
	// way (askLocked).
	x.drawing = (!x.fresh || x.ok) && !x.closed && !pol.method.ordered && !pol.method.passes &&
		pol.method.layout != nil && !v.Scarce
	x.won = x.drawing && v.Drawn(c.id, now, rm.cfg.RefreshInterval.Milliseconds())
	if x.shuffled = pol.lottery[1] != 0 && !x.fresh && !x.closed && pol.bucket(c.bucket) == pol.lottery[0]; x.shuffled {
		// A shuffled pre-queue, by places up to the cut (View.Placed).
		x.drawing, x.won = true, v.Placed(c.id, now, rm.cfg.RefreshInterval.Milliseconds())
	}
	if x.fresh {
		return false
	}
	if span := pol.listing; span[0] <= c.bucket && c.bucket < span[1] {
		// The list of the period their place is drawn under, from the start.
		if r, ok := v.RecordAt(max(now, span[1]*1000), rm.cfg.RefreshInterval.Milliseconds()); ok {
			rm.local.Prequeued(c.id, span[1], r.Start)
		}
	}
	// One chance per refresh interval, whichever copy of the cookie
	// asks: a copy sent again is as early as the latest one, here or, for
	// a visitor asked for (State.Asks), at any instance.
	ch, seen := rm.chances.Get(c.id)
	if seen {
		// The place's challenge as its latest chance here left it: a
		// copy of the cookie from before cannot undo it.
		c.chal = mergeChal(c.chal, ch.chal)
	}
	switch at, asked := v.Asked[c.id]; {
	case seen && now < ch.next, asked && now < at:
		rm.local.Unlock()
		// The latest attempt is this cookie's when its interval leads
		// to the chance due; a copy's (older) says nothing of it, and
		// the nominal interval stands in for the one drawn.
		last, next := c.lastCheckIn, max(ch.next, at)
		if last+c.refresh != next {
			last = next - rm.cfg.RefreshInterval.Milliseconds()
		}
		rm.tooEarly(&x.d, v, pol, *c, last, next)
		return true
	case seen:
		x.due = ch.next
		switch slot := slotOf(c.lastCheckIn); {
		case slot > ch.slot:
			// The visitor had a chance elsewhere since this instance's
			// (another instance's cookie is newer): their count is
			// where that chance left it.
			ch.bucket, ch.slot, ch.counted = c.bucket, slot, x.cookieCounted
			x.due = max(x.due, c.lastCheckIn+c.refresh)
		case slot == ch.slot && x.cookieCounted:
			// In the same slot, as when this instance held the visitor
			// for the challenge and they passed it elsewhere a second
			// later: counted there.
			ch.counted = true
		}
	default:
		ch = chance{bucket: c.bucket, slot: slotOf(c.lastCheckIn), counted: x.cookieCounted}
		x.due = c.lastCheckIn + c.refresh
	}
	x.ch = ch
	return false
}

// gateLocked puts the chance through the challenge in force, if any.
// While a hosted challenge's verdict is awaited, it reports that it
// answered, with the local lock, which it holds, released.
func (rm *Room) gateLocked(x *visit) bool {
	x.gate = gatePass
	if x.chal == nil {
		return false
	}
	verdict, step := rm.verdictLocked(x.chal, &x.a, x.c.id, x.c.chal)
	if step != verdictReady {
		rm.local.Unlock()
		rm.answerLater(&x.d, x.v, x.pol, x.c, step)
		return true
	}
	x.gate = rm.challengeGate(&x.c, x.chal, verdict, x.owed)
	return false
}

// takeLocked gives the visitor their chance: let in by the method, by a
// free slot or by the fleet's pick, the admission reported; or not. The
// visitor stops counting as waiting where their latest chance left them.
// The local lock is held.
func (rm *Room) takeLocked(x *visit) {
	v, pol, now, c := x.v, x.pol, x.now, &x.c
	pass := x.gate == gatePass
	x.admit = !x.closed && pol.method.passes && pass
	if !x.closed && !x.admit && pass && (!x.drawing || x.won) {
		b, lower := pol.bucket(c.bucket), pol.TotalActiveUsers < rm.carved[0] || pol.NewUsersPerMinute < rm.carved[1]
		switch pk, picked := v.Picks[c.id]; {
		case picked && !lower && !x.fresh && now < pk.Until && rm.syncer.Healthy() && (x.drawing || pol.method.ordered || v.Holds(c.id, now, rm.cfg.RefreshInterval.Milliseconds())):
			// Picked (internal/share: picks.go): let in at any instance
			// from when they said they would be back (not a copy sooner),
			// not while its syncs fail (the admission might come late),
			// in random while their win holds (docs/lottery.md).
			x.admit = pk.From <= now
		case !x.fresh && rm.local.OlderKept(b) && (x.ch.heldAt == 0 || now-x.ch.heldAt < rm.waitWindow/2+rm.lateness):
			// FIFO to the second: while the grant keeps a slot for an
			// older visitor, back (here or elsewhere) within the longest
			// refresh and its lateness, a newer one waits that long.
			x.ch.heldAt = cmp.Or(x.ch.heldAt, now)
		default:
			// Random on several instances: a fresh arrival may take a
			// slot kept for those due (docs/fairness.md), not while an
			// event's shuffled pre-queue waits. Limits lower than the
			// grant's (or a pick's) wait for the next sync's.
			fresh := x.fresh && (pol.method.ordered || v.Instances <= 1 || pol.lottery[1] != 0 && v.Shuffled(pol.lottery) > 0)
			x.ch.heldAt, x.admit = 0, !lower && rm.local.Take(b, fresh)
		}
	}
	if !x.fresh && x.ch.counted && share.SlotCounted(x.ch.slot, now, rm.waitWindow) {
		rm.local.Count(x.ch.bucket, x.ch.slot, -1)
	}
	if x.admit {
		rm.local.Report(store.Session{ID: c.id, Admitted: floorDiv(now, 1000), Seen: floorDiv(now, 1000), End: sessionEnd(pol, now)})
		rm.local.Wait(c.id, observedWait(c.bucket, now, x.fresh))
		rm.chances.Del(c.id)
	}
}

// observedWait is the wait, in ms, of a visitor let in at now (Unix ms)
// who arrived in second bucket (fresh: no wait), to the second: the kept
// history's waits, reported with the sessions (internal/share, tally.go).
func observedWait(bucket, now int64, fresh bool) int64 {
	if fresh {
		return 0
	}
	return max(0, now-bucket*1000) // 0 for a bucket from the future: a clock put back
}

// waitLocked sets up the next chance of a visitor not let in: when it is
// due, whether they count as waiting (and where), and whether the fleet's
// aggregator is asked to pick them (askLocked); and remembers it. The
// local lock is held.
func (rm *Room) waitLocked(x *visit) {
	now, c, chal := x.now, &x.c, x.chal
	// The next chance is due an interval after this one was due, not
	// after the request came: a visitor a little late (whole seconds, the
	// network) takes as many chances as one polling, and gains nothing.
	base := now
	if x.due > 0 && now-x.due <= rm.lateness {
		base = x.due
	}
	next := max(base+rm.jitteredRefresh(), now+1000)
	if chal != nil && c.chal == chalNone {
		c.chal = chalGiven // a queued visitor's challenge, given with this page
		rm.counters.chalIssued.Add(1)
	}
	// With OnFail infinite, a parked place is not counted as waiting, nor
	// one held for the challenge (challenge.Everyone): FIFO would reserve
	// them slots nobody takes.
	counted := counts(chal, c.chal)
	if x.gate == gateHold && chal.Kind == challenge.PoW {
		next = now + powHoldRefresh // back as soon as the page's worker is done
	}
	if refresh := rm.cfg.RefreshInterval.Milliseconds(); x.drawing && x.gate == gatePass && x.v.Instances > 1 {
		// The draw holds them: back soon, for another instance's slot;
		// or will from the next interval: back at its start
		// (docs/fairness.md).
		switch at, ok := x.v.NextDrawn(c.id, now, refresh); {
		case x.won:
			next = now + drawRetry(refresh)
		case ok && !x.shuffled:
			next = min(next, max(at, now+1000))
		}
	}
	if !x.fresh && !x.closed && x.gate == gatePass && counted {
		next = rm.askLocked(x, next)
	}
	c.refresh = next - now
	if counted {
		rm.local.Count(c.bucket, slotOf(now), 1)
	}
	if x.ok {
		// A new visitor's copies are held back by their own cookie until
		// its first chance: only a visitor who came with a cookie that
		// brought a place is remembered (a flood without costs nothing).
		rm.chances.Set(c.id, chance{next: next, bucket: c.bucket, slot: slotOf(now), chal: c.chal, counted: counted, heldAt: x.ch.heldAt})
	}
}

// askLocked asks the syncs, when it may, to pick the waiting visitor of x
// for a slot that any instance lets them in from (internal/share:
// picks.go), and returns their next chance: next, or as soon as the pick
// can be out. The local lock is held.
func (rm *Room) askLocked(x *visit, next int64) int64 {
	v, pol, now, c := x.v, x.pol, x.now, &x.c
	switch {
	case !pol.method.ordered && v.Fleet && v.Scarce && pol.method.layout != nil:
		// Random, in a fleet with few slots an instance (fleetScarce):
		// every slot by pick, among the visitors the draw holds (at
		// drawScarceMargin) or will next interval, asked for at every
		// chance, back as soon as the pick can be out.
		switch at, ahead := v.NextDrawn(c.id, now, rm.cfg.RefreshInterval.Milliseconds()); {
		case !rm.local.MayAsk(c.id):
		case x.won || !x.shuffled && v.Drawn(c.id, now, rm.cfg.RefreshInterval.Milliseconds()):
			next = min(next, now+share.PickWait(rm.cfg.SyncInterval))
			rm.local.Ask(c.id, pol.bucket(c.bucket), next)
		case ahead && !x.shuffled:
			next = min(next, max(at+2*share.SyncEvery(rm.cfg.SyncInterval), now+1000))
			rm.local.Ask(c.id, pol.bucket(c.bucket), next)
		}
	case !pol.method.ordered && pol.method.layout != nil && x.won && !x.shuffled && v.Instances > 1:
		// Random: a winner who found no slot is asked for, not while Total
		// Active Users binds (docs/fairness.md); the next sync picks them.
		if !activeBinds(&v.View, pol, rm.cfg.RefreshInterval.Milliseconds()) && rm.local.MayAsk(c.id) {
			rm.local.Ask(c.id, pol.bucket(c.bucket), next)
		}
	case pol.method.ordered && v.Near(pol.bucket(c.bucket), int64(pol.NewUsersPerMinute)) && (x.won == x.shuffled || v.Fleet):
		// No slot here for a visitor whose turn is near: asked for (no
		// chance elsewhere before they are back; a fleet may pick them).
		// Back when the pick can be out: one reserved for (or so shown
		// while the fleet forms again), or, every slot by pick
		// (fleetScarce), one whose turn comes within a refresh interval.
		b := pol.bucket(c.bucket)
		asked := rm.local.MayAsk(c.id)
		soon := v.Scarce && asked && v.Near(b, max(1, int64(pol.NewUsersPerMinute)*rm.cfg.RefreshInterval.Milliseconds()/60_000))
		if b <= v.ReservedTo && (asked || !v.Fleet) || soon {
			next = min(next, now+share.PickWait(rm.cfg.SyncInterval))
		}
		if asked {
			rm.local.Ask(c.id, b, next)
		}
	}
	return next
}

// conclude writes the decision of a visitor who had their chance: let in
// or waiting, with the page's refresh, estimate and challenge; and their
// cookie.
func (rm *Room) conclude(x *visit) {
	d, c, now := &x.d, &x.c, x.now
	c.lastCheckIn = now
	if x.admit {
		rm.counters.admitted.Add(1)
		c.acceptedAt, c.refresh, c.pos = now, 0, 0
		d.Outcome = outcomeAdmitted
		d.state = *c
	} else {
		if x.fresh {
			rm.counters.queued.Add(1)
		}
		d.state.id, d.state.bucket = c.id, c.bucket // the challenge's and the lottery's
		if x.chal != nil && c.chal != chalPassed {
			d.chal = x.chal
		}
		d.Outcome = outcomeWaiting
		d.RefreshAfter = time.Duration(c.refresh) * time.Millisecond
		d.last = now
		var turn int64
		d.Estimate, turn = rm.estimate(x.v, x.pol, c, x.fresh, false)
		if e := d.Estimate; x.v.Instances > 1 && e.Known && e.Wait == 0 && e.P75 == 0 {
			// Refused while the view shows a slot: another instance's, not in view.
			d.Estimate = Estimate{Position: e.Position, Waiting: e.Waiting}
		}
		if x.won { // a winner's chance is the next free slot's, not the draw's
			d.Estimate.ChancePerMinute = 0
		}
		c.pos = int64(d.Estimate.Position)
		// In FIFO, back when their turn is expected if sooner (grant.go).
		if soon := max(turn, drawRetry(rm.cfg.RefreshInterval.Milliseconds())); soon < c.refresh && x.gate == gatePass {
			c.refresh, d.RefreshAfter = soon, time.Duration(soon)*time.Millisecond
			rm.local.Lock()
			if ch, seen := rm.chances.Get(c.id); seen && x.ok {
				ch.next = now + soon
				rm.chances.Set(c.id, ch)
			}
			rm.local.Reask(c.id, now+soon)
			rm.local.Unlock()
		}
	}
	d.cookie = rm.codec.encode(*c)
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
	chal         int8  // chalNone, chalGiven, chalPassed, chalFailed (challenge.go)
	counted      bool  // the visitor counts as waiting at (bucket, slot)
	heldAt       int64 // Unix ms: held back for an older visitor since
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
		d.chal = ch // the same page: still the challenge
	}
	d.state.id, d.state.bucket = c.id, c.bucket
	d.Estimate, _ = rm.estimate(v, p, &c, false, true)
}

// jitteredRefresh draws a waiting visitor's next refresh interval, in ms:
// RefreshInterval varied by up to RefreshJitter, in whole seconds as the
// Refresh header says (20.3 s told as 21 would make polite visitors late,
// a head start for clients polling every second), rounded at random so
// that the mean stays RefreshInterval (20.3 s is 21 s three times in ten).
func (rm *Room) jitteredRefresh() int64 {
	x := rm.cfg.RefreshInterval.Seconds() * (1 + rm.cfg.RefreshJitter*(2*rm.cfg.Random()-1))
	secs := math.Floor(x)
	if rm.cfg.Random() < x-secs {
		secs++
	}
	return int64(max(secs, 1)) * 1000
}

// estimate is the wait of the visitor of cookie c as of view v under
// policy p (fresh: behind everyone), counting the visitors this instance
// let in since v's sync (who hold slots v shows free), and, in FIFO, in
// how many ms their turn is expected (MaxInt64 when not known). In line,
// the place is never above the one c was last shown, which an answer
// between chances (again) shows. The local lock must not be held.
func (rm *Room) estimate(v *view, p *policy, c *cookieState, fresh, again bool) (Estimate, int64) {
	turn := int64(math.MaxInt64)
	if p.QueueAll || p.prequeue || p.method.estimate == nil {
		return Estimate{}, turn
	}
	rm.local.Lock()
	if n := rm.local.Unseen(); n > 0 {
		u := *v
		u.Active, u.AdmittedThisMinute, v = u.Active+n, u.AdmittedThisMinute+n, &u
	}
	older, queued := rm.local.Queued(c.bucket) // since v: in line ahead, in all
	rm.local.Unlock()
	var ahead, tied int64
	est := p.method.estimate
	if p.method.ordered {
		ahead = v.Ahead(p.bucket(c.bucket), p.lottery, fresh, c.id, rm.cfg.RefreshInterval.Milliseconds())
		if b := p.bucket(c.bucket); p.lottery[1] == 0 || b != p.lottery[0] { // not by place
			ahead, tied = max(0, ahead+older), v.Tied(b, fresh)
		}
		if c.pos > 0 && (again || c.pos-1 < ahead) {
			ahead = c.pos - 1
		}
		if m, ok := waitAfter(v, p, float64(ahead), math.NaN()); ok && m < 60 {
			turn = int64(math.Ceil(m*60)) * 1000
		}
	} else if p.lottery[1] != 0 { // a random event's shuffled pre-queue goes in first, by place
		if ahead = v.Shuffled(p.lottery); p.bucket(c.bucket) == p.lottery[0] { // by place, those queued before it behind
			ahead = v.Ahead(p.lottery[0], p.lottery, fresh, c.id, rm.cfg.RefreshInterval.Milliseconds()) - v.Ahead(p.lottery[0], [2]int64{}, fresh, 0, 0)
			est = fifoMethod.estimate
		}
	}
	e := est(v, p, ahead, tied, fresh)
	if p.method.layout != nil { // a line to wait in
		e.Waiting = max(int(min(max(v.Waiting+queued, 0), 1e9)), e.Position)
	}
	return e, turn
}

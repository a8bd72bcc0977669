package sim

import (
	"time"

	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/template"
)

// visit sends client c's request due at ms at through a room's Handler and
// acts on the response as a browser (or a client asking for JSON) would.
func (r *run) visit(c int32, at int64) {
	r.now = at
	i := r.visitorOf(c)
	v, l := &r.vs[i], &r.lv[c]
	if l.req == nil {
		// The visitor's first request: the other clients of a cloner
		// group have their request, and the group's cookie, from the
		// start.
		l.req = r.reqs.get()
		v.Arrival = time.Duration(at) * time.Millisecond
		r.cur.Arrivals++
		r.clients++
	}
	k := 0
	if len(r.handlers) > 1 {
		k = r.rng.IntN(len(r.handlers))
	}
	w := r.w
	w.reset()
	r.handlers[k].ServeHTTP(w, l.req)
	v.Requests++
	r.res.Requests++
	switch {
	case w.status == appStatus:
		r.admitted(c, i, at)
	case len(w.header["Refresh"]) > 0 && !l.in:
		r.waited(c, i, at)
	case l.in:
		// The session ended while the client browsed.
		if lead := &r.lv[i]; !lead.lost {
			lead.lost = true
			r.res.SessionsLost++
		}
		r.leave(c)
	default:
		// A closed room: the visitor is turned away when it leaves.
		r.leave(c)
	}
}

// admitted handles a response from the application to client c of visitor
// i.
func (r *run) admitted(c, i int32, at int64) {
	v, l := &r.vs[i], &r.lv[c]
	if _, seen := r.sessions[r.ticket]; !seen {
		// An admission: a session the room had not opened before.
		r.sessions[r.ticket] = 0
		v.Admissions++
		r.res.Admissions++
		r.cur.Admissions++
	}
	if !l.in {
		// The client had not been let in: its request carried no
		// cookie or a waiting one.
		if !v.WasAdmitted {
			v.WasAdmitted = true
			v.Admitted = time.Duration(at) * time.Millisecond
			r.cur.Admitted++
			r.res.Admitted++
			r.unwait(i)
		}
		if l.pinned && r.o.ReplayAfterAdmission {
			// It leaves the admitted cookie unused, a session that
			// counts until it ends, and replays its waiting cookie.
			if len(r.w.header["Set-Cookie"]) > 0 {
				r.renew(at)
			}
			r.again(c, i, at, r.o.SpamEvery)
			return
		}
		l.in, l.pinned = true, false
		l.browseEnd = at + max(r.o.Browse.Milliseconds(), 0)
	}
	if takeCookie(r.w, l.req) {
		r.renew(at)
	}
	if next := at + r.o.BrowseEvery.Milliseconds(); next <= l.browseEnd {
		r.push(c, next+r.latency())
	} else {
		r.leave(c)
	}
}

// renew counts the session of the latest ticket, whose cookie was set at
// ms at: it counts until SessionDuration after at, once however many
// clients hold copies of its cookies.
func (r *run) renew(at int64) {
	exp := (at + r.sessMs + 999) / 1000
	if old := r.sessions[r.ticket]; old > r.sec {
		r.expiries[old&r.expMask]--
	} else {
		r.active++
		r.cur.PeakActive = max(r.cur.PeakActive, r.active)
	}
	r.sessions[r.ticket] = exp
	r.expiries[exp&r.expMask]++
}

// waited handles a waiting page sent to client c of visitor i.
func (r *run) waited(c, i int32, at int64) {
	v, l := &r.vs[i], &r.lv[c]
	r.res.WaitingResponses++
	var fresh bool
	if l.pinned {
		fresh = len(r.w.header["Set-Cookie"]) > 0
	} else {
		fresh = takeCookie(r.w, l.req)
		// A replayer keeps the first waiting cookie.
		l.pinned = fresh && v.Kind == Replayer
	}
	var pg pageView
	ok := false
	if c != i || r.o.FirstEstimateOnly && v.FirstEstimate.Known {
		// Nothing left to read but when to come back, as a browser would:
		// the estimates are those the visitor's own client was shown.
		pg.refresh = refreshHeader(r.w)
	} else {
		pg, ok = readPage(r.w)
	}
	if ok {
		e := pg.estimate
		e.At = time.Duration(at) * time.Millisecond
		if e.Known && !v.FirstEstimate.Known {
			v.FirstEstimate = e
		}
		if !r.o.FirstEstimateOnly {
			if n := len(v.Estimates); n == 0 || !v.Estimates[n-1].same(e) {
				v.Estimates = append(v.Estimates, e)
			}
		}
	}
	if lead := &r.lv[i]; !v.WasAdmitted && !lead.waiting {
		lead.waiting = true
		r.waiting++
	}
	if fresh && v.Kind.honest() && r.o.Abandon > 0 && r.rng.Float64() < r.o.Abandon {
		v.Abandoned = true
		r.unwait(i)
		r.abandoned = append(r.abandoned, at)
		r.res.Abandoned++
		r.leave(c)
		return
	}
	if r.challenged && c == i {
		r.answer(v, l)
	}
	if v.Kind == Bot && at-v.Arrival.Milliseconds() >= r.o.BotGiveUp.Milliseconds() {
		r.leave(c)
		return
	}
	var wait time.Duration
	switch {
	case v.Kind == Spammer, v.Kind == Replayer, v.Kind == Cloner && r.o.CloneSpam:
		wait = r.o.SpamEvery
	case pg.refresh > 0:
		wait = pg.refresh
	default:
		wait = r.o.RefreshInterval
	}
	if v.Kind == Cloner && fresh && c == i && l.clients == 0 && !v.WasAdmitted {
		r.clone(i, at, wait)
	}
	r.again(c, i, at, wait)
}

// answer reads the challenge of the waiting page just sent to visitor v's
// client l and, unless v is a bot that does not solve, solves it (a proof
// of work, really solved: the run's rooms should use a small Difficulty,
// and the cost is charged after the run, by difficulty) and sends the
// answer with the next request, as the page's script or a JSON client
// does.
func (r *run) answer(v *Visitor, l *live) {
	delete(l.req.Header, challenge.Header)
	var d template.Data
	if !decodePage(r.w.body, &d) || d.ChallengePuzzle == "" || (v.Kind == Bot && !r.o.BotsSolve) {
		return
	}
	a, err := challenge.Solve(r.ctx, d.ChallengePuzzle)
	if err != nil {
		return
	}
	l.req.Header[challenge.Header] = []string{a}
	if v.Kind == Bot {
		r.res.BotSolves++
	} else {
		r.res.HumanSolves++
	}
}

// again schedules client c's next request, wait after ms at, unless its
// visitor i was let in more than ReplayFor before then: the client, still
// trying for an admission, leaves.
func (r *run) again(c, i int32, at int64, wait time.Duration) {
	next := at + wait.Milliseconds()
	if v := &r.vs[i]; v.WasAdmitted && next > v.Admitted.Milliseconds()+r.replayFor {
		r.leave(c)
		return
	}
	r.push(c, next+r.latency())
}

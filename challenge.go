package waitingroom

import (
	"errors"
	"net/http"
	"time"

	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/internal/request"
)

// The room's side of the challenge step (package challenge holds the
// policy, the proof of work's puzzles and the hosted widgets' verifier):
// the decision's gate (check.go), the challenge's state in the visitor's
// cookie, and the claim that asks a hosted provider once per chance.

// challengeOf is the challenge policy p asks of waiting visitors, or nil
// when there is none to ask: off, or a hosted one without a verifier on
// this instance.
func (rm *Room) challengeOf(v *view, p *policy) *challenge.Policy {
	c := p.Challenge
	if c == nil || c.Kind == challenge.Off || (c.Kind == challenge.Hosted && rm.cfg.ChallengeVerifier == nil) {
		return nil
	}
	return c
}

// The challenge's state in a visitor's cookie (cookieState.chal).
const (
	chalNone   = 0 // never given one (or a cookie written without the field)
	chalGiven  = 1 // given, not passed yet
	chalPassed = 2
	chalFailed = 3 // came back without a valid answer
)

// answerOf returns the challenge answer r carries: the challenge.Header
// header, else the challenge cookie. "" when none.
func (rm *Room) answerOf(r *http.Request) string {
	if a := r.Header.Get(challenge.Header); a != "" {
		return a
	}
	a, _ := request.Cookie(r, rm.cookieName+"_challenge")
	return a
}

// powHoldRefresh is the refresh, in ms, of a new visitor held for a proof
// of work (challenge.Everyone): the page's worker takes a fraction of it.
const powHoldRefresh = 1000

// What the challenge step lets a chance do.
type gate int

const (
	gatePass gate = iota // the chance goes on
	gateHold             // the challenge was just given: no chance yet
	gatePark             // failed, infinite queue: never a chance
)

// challengeGate decides what the challenge ch lets the chance of cookie c
// do, verdict being its answer's (answerValid, answerInvalid, answerNone),
// and moves c's challenge state. owed says that c is a new place of a
// visitor who had not passed the challenge at their old one: it is given
// the challenge before any chance, as with challenge.Everyone. The local
// lock is held (counters only).
func (rm *Room) challengeGate(c *cookieState, ch *challenge.Policy, verdict int, owed bool) gate {
	switch {
	case c.chal == chalPassed:
		return gatePass
	case verdict == answerValid:
		c.chal = chalPassed
		rm.counters.chalPassed.Add(1)
		return gatePass
	case verdict == answerStale:
		// An answer to an easier puzzle than the challenge asks now:
		// neither a pass nor a failure; a puzzle of the current
		// difficulty with the page, and no chance.
		if c.chal == chalNone {
			c.chal = chalGiven
			rm.counters.chalIssued.Add(1)
		}
		return gateHold
	case c.chal == chalNone:
		if ch.Who == challenge.Everyone || owed {
			c.chal = chalGiven
			rm.counters.chalIssued.Add(1)
			return gateHold
		}
		return gatePass // given (check) if the chance leaves them waiting
	case c.chal == chalGiven:
		c.chal = chalFailed
		rm.counters.chalFailed.Add(1)
		if ch.OnFail == challenge.Infinite {
			rm.counters.chalParked.Add(1)
		}
	}
	if ch.OnFail == challenge.Infinite {
		return gatePark
	}
	return gatePass
}

// counts reports whether a waiting visitor whose challenge is in state s
// after a chance counts as waiting under challenge ch (nil: none). With
// OnFail challenge.Infinite, a parked visitor does not (FIFO would
// reserve them slots that nobody may take), nor, with challenge.Everyone,
// one held for the challenge; with challenge.Queued, a new place's first chance
// counts, as it would without the challenge (the challenge is given with
// its page). A function of the state the cookie carries, so that the
// instance giving the next chance knows whether to move a count.
func counts(ch *challenge.Policy, s int8) bool {
	switch {
	case ch == nil || ch.OnFail != challenge.Infinite:
		return true
	case s == chalGiven:
		return ch.Who != challenge.Everyone
	}
	return s != chalFailed
}

// carried returns the state of the challenge that the new place a cookie
// brings (its place lapsed or was spent, its session ended) starts with,
// s being the cookie's: a passed challenge does not carry over (a visitor
// passes once per place), a failed one does, and one given and not
// passed makes the new place owed: given the challenge before any chance.
func carried(s int8) (st int8, owed bool) {
	switch s {
	case chalFailed:
		return chalFailed, false
	case chalGiven:
		return chalNone, true
	}
	return chalNone, false
}

// mergeChal is the state of a place's challenge known from two sources
// (a copy of its cookie, and what its latest chance here left): passed if
// either says so, otherwise the further along.
func mergeChal(a, b int8) int8 {
	if a == chalPassed || b == chalPassed {
		return chalPassed
	}
	return max(a, b) // chalNone < chalGiven < chalFailed
}

// Verdicts on an answer (answer.verdict).
const (
	answerNone    = 0 // no answer, or not checked yet
	answerValid   = 1
	answerInvalid = -1
	answerStale   = 2 // valid, to a puzzle easier than the Difficulty now
	answerUnknown = 3 // the hosted provider gave no verdict (unreachable, a timeout, a status other than 200)
)

// answer is what a request brings to the challenge, for the place it is
// bound to.
type answer struct {
	text    string
	id      uint64 // the place it answers for
	kind    challenge.Kind
	verdict int    // answerValid, answerInvalid or answerNone
	claim   uint64 // hosted: the place whose chance this request claimed, to ask the provider
	asked   bool   // hosted: the provider was asked, and verdict is its
}

// readAnswer returns the answer r brings to challenge ch for place id. A
// proof of work's is checked here, at now (Unix ms): O(1), no state. Its
// puzzle must be at least as hard as ch's Difficulty now, so that raising
// it applies at once to the puzzles given before (answerStale), but not
// as hard as the difficulty risen with the queue (RiseEvery): a visitor
// who solved a puzzle just before the queue grew is not set a new one. A
// hosted one's is checked once its chance is due (verdictLocked).
func (rm *Room) readAnswer(r *http.Request, ch *challenge.Policy, id uint64, now int64) answer {
	a := answer{text: rm.answerOf(r), id: id, kind: ch.Kind}
	if a.text != "" && ch.Kind == challenge.PoW {
		switch err := rm.puzzles.Verify(a.text, id, time.UnixMilli(now), ch); err {
		case nil:
			a.verdict = answerValid
		case challenge.ErrStale:
			a.verdict = answerStale
		default:
			a.verdict = answerInvalid
		}
	}
	return a
}

// What must come before a due chance's verdict (verdictLocked).
type verdictStep int

const (
	verdictReady verdictStep = iota // decide the chance with the verdict
	verdictAsk                      // claimed: ask the provider, then decide again (check)
	verdictWait                     // another request of the place asks: the page, no chance
	verdictBusy                     // ChallengeVerifier.MaxInFlight calls in flight: the page, no chance
)

// verdictLocked returns the verdict on a for the due chance of place id,
// whose challenge ch is in state s, or the step that must come first. A
// hosted challenge's provider is asked once per chance of a place: the
// request claims the chance (a.claim) unless another request of the place
// holds it, or MaxInFlight calls are in flight on the room. The local lock
// is held.
func (rm *Room) verdictLocked(ch *challenge.Policy, a *answer, id uint64, s int8) (int, verdictStep) {
	if _, asking := rm.asking[id]; asking && a.claim != id {
		return answerNone, verdictWait
	}
	switch {
	case a.asked && (a.id != id || a.kind != ch.Kind):
		return answerNone, verdictBusy // the place or the challenge changed while asking
	case a.id != id || a.kind != ch.Kind:
		return answerNone, verdictReady // no answer for this place
	case a.asked && a.verdict == answerUnknown:
		return answerNone, verdictBusy // asked again at the next chance
	case ch.Kind != challenge.Hosted || a.asked:
		return a.verdict, verdictReady
	case a.text == "" || s == chalPassed:
		return answerNone, verdictReady
	case len(rm.asking) >= rm.cfg.ChallengeVerifier.MaxInFlight: // its default filled in by New
		rm.counters.chalDeferred.Add(1)
		return answerNone, verdictBusy
	}
	if rm.asking == nil {
		rm.asking = map[uint64]struct{}{}
	}
	rm.asking[id] = struct{}{}
	a.claim = id
	return answerNone, verdictAsk
}

// answerLater answers a request whose due chance waits for a verdict
// (verdictWait, verdictBusy): the waiting page without a chance, back in
// a few seconds, the cookie and the challenge's state left alone. Nothing
// for verdictAsk, which check completes.
func (rm *Room) answerLater(d *decision, v *view, p *policy, c cookieState, step verdictStep) {
	if step == verdictAsk {
		return
	}
	rm.tooEarly(d, v, p, c, d.now, d.now+drawRetry(rm.cfg.RefreshInterval.Milliseconds()))
}

// askProvider asks the hosted challenge's provider about a, without the
// lock, and records its verdict in a. A provider that gives none (a
// timeout, an error, a status other than 200: a rate limit or an outage)
// neither passes nor fails the answer: the place gets the page without a
// chance, its challenge's state unchanged, and the provider is asked
// again at its next chance (counted in Counters.ChallengesUnverified), so
// that a provider's outage parks nobody.
func (rm *Room) askProvider(r *http.Request, a *answer) {
	a.asked, a.verdict = true, answerInvalid
	switch err := rm.cfg.ChallengeVerifier.Verify(r, a.text); {
	case err == nil:
		a.verdict = answerValid
	case !errors.Is(err, challenge.ErrFailed):
		a.verdict = answerUnknown
		rm.counters.chalUnverified.Add(1)
	}
}

// unclaim ends the claim of place id's chance (verdictLocked).
func (rm *Room) unclaim(id uint64) {
	rm.local.Lock()
	delete(rm.asking, id)
	rm.local.Unlock()
}

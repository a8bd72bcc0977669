package waitingroom

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/hkdf"
)

// ChallengeKind is what a visitor must pass to enter the queue
// (Challenge.Kind).
type ChallengeKind string

// Challenge kinds.
const (
	// ChallengeOff (the zero value): no challenge.
	ChallengeOff ChallengeKind = ""
	// ChallengePoW is the built-in proof of work: the visitor's browser
	// (or JSON client) finds a number that makes a SHA-256 hash of the
	// puzzle start with Difficulty zero bits. No third party.
	ChallengePoW ChallengeKind = "pow"
	// ChallengeHosted is the challenge of a hosted service (Cloudflare
	// Turnstile, hCaptcha or reCAPTCHA), verified by Config.HostedChallenge;
	// off in a room without one.
	ChallengeHosted ChallengeKind = "hosted"
)

// ChallengeWho is who must pass the challenge (Challenge.Who).
type ChallengeWho string

// Who must pass the challenge.
const (
	// ChallengeQueued (the zero value): visitors who enter the queue, at
	// their first chance after the page that gave them the challenge. A
	// visitor let straight in is never challenged.
	ChallengeQueued ChallengeWho = ""
	// ChallengeEveryone: every visitor, before admission. A new visitor
	// gets the waiting page with the challenge (and a refresh of one
	// second) even when there is room, and is let in at the first chance
	// after passing it.
	ChallengeEveryone ChallengeWho = "everyone"
)

// ChallengeAction is what failing the challenge does (Challenge.OnFail).
type ChallengeAction string

// What failing the challenge does.
const (
	// ChallengeLog (the zero value): the failure is counted
	// (Counters.ChallengesFailed) and the visitor queues as if passed.
	ChallengeLog ChallengeAction = ""
	// ChallengeInfinite: the visitor is parked in an infinite queue: the
	// same waiting page, refreshes and estimates as everyone's, but never
	// a chance, until they pass the challenge.
	ChallengeInfinite ChallengeAction = "infinite"
)

// Limits of Challenge fields.
const (
	// DefaultDifficulty is Challenge.Difficulty's default: 16 zero bits,
	// about 65,000 hashes (a few tens of milliseconds in a browser).
	DefaultDifficulty = 16
	// MaxDifficulty bounds Challenge.Difficulty and MaxDifficulty.
	MaxDifficulty = 32
	// DefaultChallengeTTL is Challenge.TTL's default.
	DefaultChallengeTTL = 10 * time.Minute
	// maxAnswerLen bounds the answers the room looks at; anything longer
	// fails.
	maxAnswerLen = 512
)

// ChallengeHeader is the request header through which a JSON client sends
// its answer to the challenge (the page's puzzle solved with SolvePuzzle,
// or a hosted widget's token). Browsers send it in the cookie named after
// the room's cookie with "_challenge" appended (template.Data.ChallengeCookie).
const ChallengeHeader = "Waiting-Room-Challenge"

// Challenge configures the challenge step: who must pass it, what failing
// does, and how hard the built-in proof of work is. A visitor passes once
// per place in the queue: the result is kept in their cookie (which copies
// of the cookie share, as they share the place). A challenge not passed
// stays with the visitor: the new place that a lapsed, spent or revoked
// cookie brings is given it again before any chance, or parked at once if
// it was failed. Changeable with Room.Update and overridable per Event.
// The zero value is no challenge.
type Challenge struct {
	// Kind is ChallengeOff, ChallengePoW or ChallengeHosted.
	Kind ChallengeKind `json:"kind,omitempty"`
	// Who is ChallengeQueued (the default) or ChallengeEveryone.
	Who ChallengeWho `json:"who,omitempty"`
	// OnFail is ChallengeLog (the default) or ChallengeInfinite. A
	// visitor fails by coming back without a valid answer after a page
	// that gave them the challenge: a client without JavaScript (the
	// default page's refresh without the worker's answer) fails too, and
	// so is counted only (ChallengeLog) or parked (ChallengeInfinite; the
	// page says JavaScript is needed).
	OnFail ChallengeAction `json:"onFail,omitempty"`
	// Difficulty is the proof of work's number of leading zero bits, each
	// one doubling the expected work. Default DefaultDifficulty; 1 to
	// MaxDifficulty. Raised, it applies at once to the puzzles already
	// given: an answer to an easier puzzle is neither a pass nor a
	// failure, and the visitor is given a puzzle of the new difficulty.
	Difficulty int `json:"difficulty,omitempty"`
	// RiseEvery makes the work rise with the queue: one more bit each
	// time the number of visitors waiting doubles past RiseEvery (at
	// 2 × RiseEvery waiting, Difficulty + 1; at 4 ×, + 2). Default 0:
	// fixed. A rise leaves the puzzles given before it good: any puzzle
	// of at least Difficulty bits passes within its TTL.
	RiseEvery int `json:"riseEvery,omitempty"`
	// MaxDifficulty caps the risen difficulty. Default Difficulty + 4;
	// Difficulty to the package's MaxDifficulty.
	MaxDifficulty int `json:"maxDifficulty,omitempty"`
	// TTL is how long a puzzle may be answered after it was given.
	// Default 10 minutes; 1 minute to 1 hour.
	TTL time.Duration `json:"ttl,omitempty"`
}

// on reports whether c asks for a challenge.
func (c *Challenge) on() bool { return c != nil && c.Kind != ChallengeOff }

// challengeOf is the challenge policy p asks of waiting visitors, or nil
// when there is none to ask: off, or a hosted one without a verifier on
// this instance.
func (rm *Room) challengeOf(v *view, p *policy) *Challenge {
	c := p.Challenge
	if !c.on() || (c.Kind == ChallengeHosted && rm.cfg.HostedChallenge == nil) {
		return nil
	}
	return c
}

// validate checks c (nil is no challenge).
func (c *Challenge) validate() error {
	if c == nil {
		return nil
	}
	switch c.Kind {
	case ChallengeOff, ChallengePoW, ChallengeHosted:
	default:
		return invalid("Challenge.Kind %q is not \"\", pow or hosted", c.Kind)
	}
	switch c.Who {
	case ChallengeQueued, ChallengeEveryone:
	default:
		return invalid("Challenge.Who %q is not \"\" or everyone", c.Who)
	}
	switch c.OnFail {
	case ChallengeLog, ChallengeInfinite:
	default:
		return invalid("Challenge.OnFail %q is not \"\" or infinite", c.OnFail)
	}
	switch {
	case c.Difficulty < 0 || c.Difficulty > MaxDifficulty:
		return invalid("Challenge.Difficulty must be between 1 and %d, got %d", MaxDifficulty, c.Difficulty)
	case c.MaxDifficulty != 0 && (c.MaxDifficulty < c.difficulty() || c.MaxDifficulty > MaxDifficulty):
		return invalid("Challenge.MaxDifficulty must be between Difficulty and %d, got %d", MaxDifficulty, c.MaxDifficulty)
	case c.RiseEvery < 0:
		return invalid("Challenge.RiseEvery must be ≥ 0, got %d", c.RiseEvery)
	case c.TTL != 0 && (c.TTL < time.Minute || c.TTL > time.Hour):
		return invalid("Challenge.TTL must be between 1m and 1h, got %v", c.TTL)
	}
	return nil
}

func (c *Challenge) difficulty() int {
	if c.Difficulty == 0 {
		return DefaultDifficulty
	}
	return c.Difficulty
}

func (c *Challenge) ttl() int64 {
	if c.TTL == 0 {
		return DefaultChallengeTTL.Milliseconds()
	}
	return c.TTL.Milliseconds()
}

// difficultyAt is the difficulty of a puzzle given while waiting visitors
// wait: Difficulty, risen by a bit per doubling past RiseEvery.
func (c *Challenge) difficultyAt(waiting int64) int {
	d := c.difficulty()
	if c.RiseEvery <= 0 || waiting < 2*int64(c.RiseEvery) {
		return d
	}
	top := c.MaxDifficulty
	if top == 0 {
		top = min(d+4, MaxDifficulty)
	}
	return min(d+bits.Len64(uint64(waiting/int64(c.RiseEvery)))-1, top)
}

// The challenge's state in a visitor's cookie (cookieState.chal).
const (
	chalNone   = 0 // never given one (or a cookie written without the field)
	chalGiven  = 1 // given, not passed yet
	chalPassed = 2
	chalFailed = 3 // came back without a valid answer
)

// puzzles issues and checks proof-of-work puzzles: stateless, each bound by
// an HMAC with the room's keys to the room, the visitor's identity, the
// time it was given and its difficulty.
type puzzles struct {
	keys [][]byte // derived from Config.Keys; the first issues
	room string
}

func newPuzzles(keys [][]byte, room string) (*puzzles, error) {
	p := &puzzles{room: room}
	for _, k := range keys {
		dk := make([]byte, 32)
		if _, err := io.ReadFull(hkdf.New(sha256.New, k, nil, []byte("waitingroom challenge key")), dk); err != nil {
			return nil, err
		}
		p.keys = append(p.keys, dk)
	}
	return p, nil
}

// seed is the puzzle's secret-keyed part for (id, at, difficulty), 16
// bytes.
func (p *puzzles) seed(key []byte, id uint64, at int64, diff int) []byte {
	m := hmac.New(sha256.New, key)
	var b [8 + 8 + 1]byte
	binary.BigEndian.PutUint64(b[:8], id)
	binary.BigEndian.PutUint64(b[8:16], uint64(at))
	b[16] = byte(diff)
	m.Write([]byte(p.room))
	m.Write([]byte{0})
	m.Write(b[:])
	return m.Sum(nil)[:16]
}

// issue returns the puzzle given at at (Unix ms) to visitor id:
// "<seed>.<at seconds>.<difficulty>", the seed in unpadded base64url.
func (p *puzzles) issue(id uint64, at int64, diff int) string {
	sec := at / 1000
	return base64.RawURLEncoding.EncodeToString(p.seed(p.keys[0], id, sec, diff)) + "." + strconv.FormatInt(sec, 10) + "." + strconv.Itoa(diff)
}

var (
	// errAnswer is why an answer fails; never shown to the client.
	errAnswer = errors.New("waitingroom: invalid challenge answer")
	// errStale: a valid answer to a puzzle easier than the challenge
	// asks now (its Difficulty was raised since the puzzle was given).
	errStale = errors.New("waitingroom: challenge answer to an easier puzzle")
)

// verify checks answer ("<puzzle>.<nonce>") for visitor id at now (Unix
// ms): a puzzle this room gave that visitor within ttl, solved. O(1): two
// hashes per key at most, no state. A valid answer to a puzzle of fewer
// than least bits is errStale.
func (p *puzzles) verify(answer string, id uint64, now, ttl int64, least int) error {
	if len(answer) > maxAnswerLen {
		return errAnswer
	}
	i := strings.LastIndexByte(answer, '.')
	if i < 0 {
		return errAnswer
	}
	puzzle, nonce := answer[:i], answer[i+1:]
	if len(nonce) == 0 || len(nonce) > 20 {
		return errAnswer
	}
	for _, r := range nonce {
		if r < '0' || r > '9' {
			return errAnswer
		}
	}
	parts := strings.Split(puzzle, ".")
	if len(parts) != 3 {
		return errAnswer
	}
	seed, err := base64.RawURLEncoding.Strict().DecodeString(parts[0])
	if err != nil || len(seed) != 16 {
		return errAnswer
	}
	sec, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || sec*1000 > now+maxClockLead || now-sec*1000 >= ttl {
		return errAnswer // expired, or from the future
	}
	diff, err := strconv.Atoi(parts[2])
	if err != nil || diff < 1 || diff > MaxDifficulty || strconv.Itoa(diff) != parts[2] {
		return errAnswer
	}
	ok := false
	for _, k := range p.keys {
		if hmac.Equal(seed, p.seed(k, id, sec, diff)) {
			ok = true
			break
		}
	}
	if !ok || !solves(answer, diff) {
		return errAnswer
	}
	if diff < least {
		return errStale
	}
	return nil
}

// solves reports whether SHA-256(answer) starts with diff zero bits.
func solves(answer string, diff int) bool {
	h := sha256.Sum256([]byte(answer))
	return leadingZeros(h[:]) >= diff
}

func leadingZeros(h []byte) int {
	n := 0
	for _, b := range h {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

// SolvePuzzle solves a proof-of-work puzzle the room gave (template.Data's
// ChallengePuzzle, "<seed>.<seconds>.<difficulty>") and returns the answer
// to send in the ChallengeHeader request header: the puzzle, a dot and the
// decimal number that makes the SHA-256 hash of the answer start with
// difficulty zero bits. It takes about 2^difficulty hashes (16: a few
// milliseconds), and returns ctx's error if ctx ends first, or an error
// for a malformed puzzle. Safe for concurrent use.
func SolvePuzzle(ctx context.Context, puzzle string) (string, error) {
	parts := strings.Split(puzzle, ".")
	if len(parts) != 3 {
		return "", errors.New("waitingroom: malformed puzzle")
	}
	diff, err := strconv.Atoi(parts[2])
	if err != nil || diff < 1 || diff > MaxDifficulty {
		return "", errors.New("waitingroom: malformed puzzle")
	}
	buf := make([]byte, 0, len(puzzle)+22)
	buf = append(buf, puzzle...)
	buf = append(buf, '.')
	base := len(buf)
	for n := uint64(0); ; n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return "", ctx.Err()
		}
		buf = strconv.AppendUint(buf[:base], n, 10)
		h := sha256.Sum256(buf)
		if leadingZeros(h[:]) >= diff {
			return string(buf), nil
		}
	}
}

// answerOf returns the challenge answer r carries: the ChallengeHeader
// header, else the challenge cookie. "" when none.
func (rm *Room) answerOf(r *http.Request) string {
	if a := r.Header.Get(ChallengeHeader); a != "" {
		return a
	}
	a, _ := cookieValue(r, rm.cookieName+"_challenge")
	return a
}

// powHoldRefresh is the refresh, in ms, of a new visitor held for a proof
// of work (ChallengeEveryone): the page's worker takes a fraction of it.
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
// the challenge before any chance, as with ChallengeEveryone. rm.mu is
// held (counters only).
func (rm *Room) challengeGate(c *cookieState, ch *Challenge, verdict int, owed bool) gate {
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
		if ch.Who == ChallengeEveryone || owed {
			c.chal = chalGiven
			rm.counters.chalIssued.Add(1)
			return gateHold
		}
		return gatePass // given (check) if the chance leaves them waiting
	case c.chal == chalGiven:
		c.chal = chalFailed
		rm.counters.chalFailed.Add(1)
		if ch.OnFail == ChallengeInfinite {
			rm.counters.chalParked.Add(1)
		}
	}
	if ch.OnFail == ChallengeInfinite {
		return gatePark
	}
	return gatePass
}

// counts reports whether a waiting visitor whose challenge is in state s
// after a chance counts as waiting under challenge ch (nil: none). With
// OnFail ChallengeInfinite, a parked visitor does not (FIFO would reserve
// them slots that nobody may take), nor, with ChallengeEveryone, one held
// for the challenge; with ChallengeQueued, a new place's first chance
// counts, as it would without the challenge (the challenge is given with
// its page). A function of the state the cookie carries, so that the
// instance giving the next chance knows whether to move a count.
func counts(ch *Challenge, s int8) bool {
	switch {
	case ch == nil || ch.OnFail != ChallengeInfinite:
		return true
	case s == chalGiven:
		return ch.Who != ChallengeEveryone
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

// awaits reports whether a place whose challenge ch is in state s awaits
// an answer before a chance can let it in: given and not passed, or
// failed. Such a place takes no chance before it is due, not even one the
// draw would let it take early (check.go): its answer is looked at, and a
// hosted challenge's provider asked, once per chance.
func awaits(ch *Challenge, s int8) bool {
	return ch != nil && (s == chalGiven || s == chalFailed)
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
	kind    ChallengeKind
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
func (rm *Room) readAnswer(r *http.Request, ch *Challenge, id uint64, now int64) answer {
	a := answer{text: rm.answerOf(r), id: id, kind: ch.Kind}
	if a.text != "" && ch.Kind == ChallengePoW {
		switch err := rm.puzzles.verify(a.text, id, now, ch.ttl(), ch.difficulty()); err {
		case nil:
			a.verdict = answerValid
		case errStale:
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
	verdictBusy                     // HostedChallenge.MaxInFlight calls in flight: the page, no chance
)

// verdictLocked returns the verdict on a for the due chance of place id,
// whose challenge ch is in state s, or the step that must come first. A
// hosted challenge's provider is asked once per chance of a place: the
// request claims the chance (a.claim) unless another request of the place
// holds it, or MaxInFlight calls are in flight on the room. rm.mu is held.
func (rm *Room) verdictLocked(ch *Challenge, a *answer, id uint64, s int8) (int, verdictStep) {
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
	case ch.Kind != ChallengeHosted || a.asked:
		return a.verdict, verdictReady
	case a.text == "" || s == chalPassed:
		return answerNone, verdictReady
	case len(rm.asking) >= rm.cfg.HostedChallenge.maxInFlight():
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
func (rm *Room) answerLater(d *Decision, v *view, p *policy, c cookieState, step verdictStep) {
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
	switch err := rm.cfg.HostedChallenge.verify(r, a.text); {
	case err == nil:
		a.verdict = answerValid
	case !errors.Is(err, errHosted):
		a.verdict = answerUnknown
		rm.counters.chalUnverified.Add(1)
	}
}

// unclaim ends the claim of place id's chance (verdictLocked).
func (rm *Room) unclaim(id uint64) {
	rm.mu.Lock()
	delete(rm.asking, id)
	rm.mu.Unlock()
}

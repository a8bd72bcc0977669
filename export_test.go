package waitingroom

// The internals the scenario tests (package waitingroom_test, in this
// directory) read or set, and nothing else: everything they can say
// through the public API, they say through it.

import (
	"net/http"
	"time"

	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/internal/share"
)

// RaceEnabled reports that the race detector is on.
const RaceEnabled = raceEnabled

// Local is rm's share of the shared state: its grant and the reports it owes.
func Local(rm *Room) *share.Local { return rm.local }

// Syncer is rm's syncer: its status, snapshot and shared clock.
func Syncer(rm *Room) *share.Syncer[Settings] { return rm.syncer }

// ConfigOf is rm's Config as New normalized it, in place.
func ConfigOf(rm *Room) *Config { return &rm.cfg }

// InstanceID is rm's ID among the instances of the shared state.
func InstanceID(rm *Room) string { return rm.id }

// CookieName is the name of rm's visitor cookie.
func CookieName(rm *Room) string { return rm.cookieName }

// ChancesKept is how many visitors rm remembers a chance for.
func ChancesKept(rm *Room) int { return rm.chances.Len() }

// SetNewID makes New draw the instance's ID with f.
func SetNewID(c *Config, f func() string) { c.newID = f }

// SetFleetMin sets the fewest live instances that sync through an aggregator.
func SetFleetMin(c *Config, n int) { c.fleetMin = n }

// CookieState is what a visitor cookie holds, in Unix seconds and milliseconds
// as cookie.go keeps them; the fields it leaves out are carried along.
type CookieState struct {
	ID          uint64
	Bucket      int64 // arrival second
	AcceptedAt  int64 // ms; 0 while waiting
	LastCheckIn int64 // ms
	Refresh     int64 // ms
	s           cookieState
}

func cookieOf(s cookieState) CookieState {
	return CookieState{ID: s.id, Bucket: s.bucket, AcceptedAt: s.acceptedAt, LastCheckIn: s.lastCheckIn, Refresh: s.refresh, s: s}
}

func (c CookieState) state() cookieState {
	s := c.s
	s.id, s.bucket, s.acceptedAt, s.lastCheckIn, s.refresh = c.ID, c.Bucket, c.AcceptedAt, c.LastCheckIn, c.Refresh
	return s
}

// SealCookie is c sealed as the value of a cookie named name under key.
func SealCookie(name string, key []byte, c CookieState) (string, error) {
	cd, err := newCodec([][]byte{key}, name)
	if err != nil {
		return "", err
	}
	return cd.encode(c.state()), nil
}

// OpenCookie is the state in value, a cookie named name sealed under key.
func OpenCookie(name string, key []byte, value string) (CookieState, error) {
	cd, err := newCodec([][]byte{key}, name)
	if err != nil {
		return CookieState{}, err
	}
	s, err := cd.decode(value)
	return cookieOf(s), err
}

// OpenRoomCookie is the state in value, a cookie of rm's opened under its
// keys (OpenCookie's, without deriving the keys again).
func OpenRoomCookie(rm *Room, value string) (CookieState, error) {
	s, err := rm.codec.decode(value)
	return cookieOf(s), err
}

// ChallengeWait is where a waiting visitor whose cookie c a chance wrote
// stands under the challenge ch: counted, that they count as waiting;
// held, that their place is held for the challenge just given (back in a
// second) rather than given a chance.
func ChallengeWait(ch *challenge.Policy, c CookieState) (counted, held bool) {
	return counts(ch, c.s.chal), c.s.chal == chalGiven && c.Refresh == powHoldRefresh
}

// ChanceWindows are rm's windows of a chance, in ms: how long a chance
// counts its visitor waiting, and how late a waiting visitor may be and
// keep their pace (the next chance due an interval after this one was).
func ChanceWindows(rm *Room) (wait, lateness int64) { return rm.waitWindow, rm.lateness }

// RevokedIDs are the identities rm refuses as revoked.
func RevokedIDs(rm *Room) []uint64 {
	var ids []uint64
	rm.revokedIDs.Range(func(k, _ any) bool {
		ids = append(ids, k.(uint64))
		return true
	})
	return ids
}

// AuthRequest is the auth request nginx sends (pass_test.go's).
var AuthRequest = authRequest

// VisitorAddr is the visitor's address nginx forwards (pass_test.go's).
const VisitorAddr = visitorAddr

// ReadCookie is the visitor cookie rm reads in r at now (Unix ms), under
// the policy in force.
func ReadCookie(rm *Room, r *http.Request, now int64) (CookieState, bool) {
	p := rm.policyAt(&rm.syncer.Snapshot().Settings, now)
	c, _, ok := rm.readCookie(r, &p, now)
	return cookieOf(c), ok
}

// DrawRetry is when, in ms, a visitor the draw holds who found no slot
// comes back, under a refresh interval of refresh ms.
func DrawRetry(refresh int64) int64 { return drawRetry(refresh) }

// Verdict is rm's decision on a request, as Handler makes it, unwritten.
type Verdict struct {
	Outcome outcome // OutcomeAdmitted, OutcomeWaiting, ...
	Pass    bool    // the request goes through to the application
	// RefreshAfter is how long a waiting visitor must wait before the next
	// request that gets a chance.
	RefreshAfter time.Duration
	CookieValue  string      // the cookie value to set; "" for none
	State        CookieState // the admitted visitor's cookie
	Estimate     Estimate    // a waiting visitor's
}

// The outcomes of a Verdict.
const (
	OutcomeAdmitted = outcomeAdmitted
	OutcomeWaiting  = outcomeWaiting
	OutcomeBypassed = outcomeBypassed
)

// Decide is rm's verdict on r, as Handler makes it, without writing anything.
func Decide(rm *Room, r *http.Request) (Verdict, error) {
	var x visit
	err := rm.check(r, &x)
	return Verdict{Outcome: x.d.Outcome, Pass: x.d.pass(), RefreshAfter: x.d.RefreshAfter, CookieValue: x.d.cookie, State: cookieOf(x.d.state), Estimate: x.d.Estimate}, err
}

// The checks of a response that the unit tests use (helpers_test.go),
// shared with the scenario tests rather than copied.
var (
	IsAdmitted   = admitted
	IsWaiting    = isWaiting
	IsClosedPage = isClosedPage
	IsErrorPage  = isErrorPage
)

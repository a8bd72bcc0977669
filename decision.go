package waitingroom

import (
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom/challenge"
)

// outcome is what a decision lets a request do.
type outcome int

// Ticket is what an admitted visitor holds.
type Ticket struct {
	// ID identifies the visitor: random, drawn at their first request and
	// kept from the queue into the session. Every holder of a copy of the
	// visitor's cookie has the same ID, and is counted as this one
	// visitor; a visitor back after their session ended has a new one.
	ID uint64
	// Bucket is the second of the visitor's first request: their place in
	// the queue.
	Bucket time.Time
	// AcceptedAt is when the visitor was let in.
	AcceptedAt time.Time
}

// decision is the room's verdict on one request, made by check without
// writing anything; respond writes its effect.
type decision struct {
	Outcome outcome
	// Estimate is the visitor's wait estimate when Outcome is Waiting.
	Estimate Estimate
	// RefreshAfter is how long a waiting visitor must wait before the next
	// request that gets a chance.
	RefreshAfter time.Duration

	cookie string            // new cookie value to set; "" leaves the visitor's alone
	state  cookieState       // the admitted visitor's cookie, for Revoke; a waiting one's identity
	policy *policy           // what governed the decision (shared, read-only); nil when bypassed
	at     int64             // Unix ms the view behind the estimate was taken
	now    int64             // Unix ms of the decision
	last   int64             // Unix ms of a waiting visitor's latest attempt that counted
	chal   *challenge.Policy // the challenge the waiting page gives (bound to state.id); nil for none
}

// noPolicy is the policy of a decision that carries none.
var noPolicy policy

// policyOrZero returns the policy that governed d, or a zero one for a
// decision that check did not make.
func (d *decision) policyOrZero() *policy {
	if d.policy == nil {
		return &noPolicy
	}
	return d.policy
}

// pass reports whether the request may go on to the application.
func (d decision) pass() bool { return d.Outcome == outcomeAdmitted || d.Outcome == outcomeBypassed }

// TicketFrom returns the ticket of the admitted visitor whose response w
// writes: w is the writer Room.Handler passed on to the application (or
// to the adapters built on it: wrgin, wrcaddy), or a writer that wraps it
// and unwraps to it (an Unwrap method, as http.ResponseController asks of
// middleware). ok is false for any other writer, and for requests that
// were not admitted (bypassed ones included). It reads only what Handler
// set before calling the application, so any goroutine may call it while
// the request is served.
func TicketFrom(w http.ResponseWriter) (Ticket, bool) {
	if rw := handlerWriter(w); rw != nil {
		s := cookieState{id: rw.id, bucket: rw.bucket, acceptedAt: rw.acceptedAt}
		return s.ticket(), true
	}
	return Ticket{}, false
}

// ticket is the Ticket of an admitted cookie.
func (c *cookieState) ticket() Ticket {
	return Ticket{ID: c.id, Bucket: time.Unix(c.bucket, 0), AcceptedAt: time.UnixMilli(c.acceptedAt)}
}

const (
	// outcomeAdmitted: the visitor has a slot; the request goes to the application.
	outcomeAdmitted outcome = iota + 1
	// outcomeWaiting: the visitor waits; the response is the waiting page.
	outcomeWaiting
	// outcomeRejected: the room turns visitors away (QueueingMethod Reject); the
	// response is the closed page, which does not refresh.
	outcomeRejected
	// outcomeBypassed: the room is suspended (or the store is down under
	// FailOpen); the request goes to the application uncounted.
	outcomeBypassed
)

// checkedIn is the second of c's latest check-in counted from that of its
// admission.
func (c *cookieState) checkedIn() int32 {
	return int32(floorDiv(c.lastCheckIn, 1000) - floorDiv(c.acceptedAt, 1000))
}

// TicketHeader is the header that tells an application behind a server,
// rather than behind Handler, the ticket of the request it serves: the
// forward-auth handler (package forwardauth) answers a request that may
// pass with it, for the server in front to copy onto the request it sends
// the application, and the Caddy module sets it on the request itself.
// Its value is "id=<16 hex digits>; bucket=<RFC 3339>; accepted=<RFC
// 3339, ms>" for an admitted visitor (Ticket.String; ParseTicket reads
// it), "bypassed" for a request a bypass rule or a suspended room let
// through, and "revoked" for the forward-auth request that ended the
// session. It is on every such request, so that a server that copies it
// overwrites whatever a client sent under that name.
const TicketHeader = "Waiting-Room-Ticket"

// String returns the ticket as TicketHeader carries it: "id=<16 hex
// digits>; bucket=<RFC 3339>; accepted=<RFC 3339, ms>", in UTC.
// ParseTicket reads it back.
func (t Ticket) String() string {
	b := append(make([]byte, 0, 96), "id="...)
	b = hex.AppendEncode(b, binary.BigEndian.AppendUint64(make([]byte, 0, 8), t.ID)) // 16 hex digits
	b = append(b, "; bucket="...)
	b = t.Bucket.UTC().AppendFormat(b, time.RFC3339)
	b = append(b, "; accepted="...)
	b = t.AcceptedAt.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	return string(b)
}

// ParseTicket reads the value of TicketHeader that the room gave an
// admitted visitor's request: ok is false for "bypassed", "revoked" or
// anything else. The application behind a forward-auth server reads the
// ticket this way, from the header its server copies from the room's
// answer: the server must overwrite the client's own header of that name
// (docs/forward-auth.md).
func ParseTicket(v string) (t Ticket, ok bool) {
	var seen int
	for part := range strings.SplitSeq(v, ";") {
		k, val, found := strings.Cut(strings.TrimSpace(part), "=")
		if !found {
			return Ticket{}, false
		}
		var err error
		switch k {
		case "id":
			var b []byte
			if b, err = hex.DecodeString(val); err == nil && len(b) == 8 {
				for _, x := range b {
					t.ID = t.ID<<8 | uint64(x)
				}
				seen |= 1
			}
		case "bucket":
			t.Bucket, err = time.Parse(time.RFC3339, val)
			seen |= 2
		case "accepted":
			t.AcceptedAt, err = time.Parse(time.RFC3339, val)
			seen |= 4
		}
		if err != nil {
			return Ticket{}, false
		}
	}
	return t, seen == 7
}

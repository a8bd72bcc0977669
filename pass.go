package waitingroom

import (
	"crypto/md5"
	"encoding/base64"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/go-waitingroom/waitingroom/store"
)

// Pass lets a server in front of the application that can check a signed
// link itself (nginx's secure_link module) pass an admitted visitor's
// requests for a few seconds without asking the room: each forward-auth
// answer that admits a visitor also gives them a pass, a cookie signed
// with Secret that names the visitor's ticket and when it expires, and
// the server answers its own auth requests with it until then
// (docs/forward-auth/nginx.md has the configuration, which its tests use
// verbatim). An admitted visitor's requests of those seconds then cost
// the server no exchange with the room.
//
// What the room counts is unchanged, because it takes a pass for what it
// is, a sign of life until the pass expires:
//
//   - a session lasts SessionDuration from the end of its latest pass, so
//     a visitor whose requests are never further apart than
//     SessionDuration is never sent back to the queue, although the room
//     does not see the requests the server passed itself;
//   - a revoke (the revoke command, or the application's) ends the session
//     when the latest pass that any instance may still give it expires
//     (an instance gives passes until it learns of the revoke, at its
//     next sync), not before, and holds its slot until then: a client
//     that keeps sending the pass it had gets nothing a visitor still in
//     their session would not, and the limits hold;
//   - a room that starts rejecting, or is suspended, answers the server's
//     auth requests at once, but a pass given before lasts until it
//     expires.
//
// Passes are given only while every instance sharing the room is of this
// release. The zero Pass gives none.
type Pass struct {
	// Secret signs the passes; the server's configuration holds it too
	// (nginx's secure_link_md5). 22 to 128 characters of A-Z, a-z, 0-9,
	// '-' and '_' (22 random base64url characters are 128 bits). It is
	// not the cookie key: the server can forge passes, never cookies.
	// Empty: no passes.
	Secret string
	// Duration is how long a pass lasts at most, in whole seconds: a
	// pass is good to the end of the whole second before Duration has
	// passed (nginx checks expiry by the second), so between Duration
	// less a second and Duration. The longer, the fewer auth requests,
	// and the longer a revoke or a change to reject takes to reach the
	// server. Default 2 s; at most 5 s.
	//
	// A revoke holds the visitor's slot until every pass that any
	// instance may still give them has expired: up to Duration after the
	// revoke has reached every instance, which takes two SyncIntervals
	// (the revoking instance's sync, and in a fleet syncing through an
	// aggregator, its round), a tenth of one and a second at most. New
	// refuses a Pass whose hold could be longer than 10 s, further ahead
	// than the shared state believes a sign of life: with the default
	// Duration, a SyncInterval above about 3.3 s.
	Duration time.Duration
}

// Limits of Pass.Duration.
const (
	// DefaultPassDuration is Pass.Duration's default.
	DefaultPassDuration = 2 * time.Second
	// MaxPassDuration is the longest Pass.Duration: a pass's end is
	// shared as the session's latest sign of life, and the state believes
	// no sign of life further ahead than its clocks may disagree.
	MaxPassDuration = 5 * time.Second
)

var passSecretRE = regexp.MustCompile(`^[A-Za-z0-9_-]{22,128}$`)

// Validate reports what New would find wrong with p: nil for the zero
// Pass. The error never shows the secret.
func (p Pass) Validate() error {
	_, err := p.normalize()
	return err
}

// normalize checks p and fills in its default.
func (p Pass) normalize() (Pass, error) {
	if p.Secret == "" {
		if p.Duration != 0 {
			return p, invalid("Pass.Duration is set without Pass.Secret")
		}
		return p, nil
	}
	if !passSecretRE.MatchString(p.Secret) {
		return p, invalid("Pass.Secret must be 22 to 128 characters of A-Z, a-z, 0-9, '-' and '_' (the secret itself is not shown)")
	}
	if p.Duration == 0 {
		p.Duration = DefaultPassDuration
	}
	if p.Duration < time.Second || p.Duration > MaxPassDuration || p.Duration%time.Second != 0 {
		return p, invalid("Pass.Duration must be whole seconds between 1s and %v, got %v", MaxPassDuration, p.Duration)
	}
	return p, nil
}

// holdFits reports an error when a revoke under p, in a room that syncs
// every interval, would hold the visitor's slot further ahead than the
// shared state believes a sign of life (maxClockLead): see Pass.Duration.
func (p Pass) holdFits(interval time.Duration) error {
	if p.Secret == "" {
		return nil
	}
	hold := time.Duration(revokeReach(interval))*time.Millisecond + p.Duration
	if hold > maxClockLead*time.Millisecond {
		return invalid("Pass.Duration %v and SyncInterval %v: a revoke would hold the visitor's slot for up to %v, longer than the %v ahead the shared state believes; shorten either",
			p.Duration, interval, hold, maxClockLead*time.Millisecond)
	}
	return nil
}

// PassHeader is the header of a forward-auth answer that gives an
// admitted visitor a pass (Config.Pass): a whole Set-Cookie value, for
// the server to add to the visitor's response (nginx: auth_request_set
// and add_header Set-Cookie). It carries an expired cookie with a
// revoke. The pass's cookie is named after the room's, with "_pass"
// appended, and its value is "<signature>.<last>_<id>_<bucket>_<accepted>":
// the Unix second through which it is good, and the ticket's three
// fields as Ticket.String writes them; the signature is the unpadded
// base64url MD5 of everything after the dot, a space, the room's cookie
// name, a space and Pass.Secret, as nginx's secure_link checks it (the
// name, so that rooms sharing a secret cannot take each other's
// passes).
const PassHeader = "Waiting-Room-Pass"

// passLast returns the last Unix second of a pass given at now (Unix ms)
// to the admitted visitor c under policy p: the second before the one
// that holds now+Duration (the pass ends on a second's boundary, no later
// than Duration from now), and no later than the last whole second of a
// session that ends whatever the visitor does. ok is false when no pass
// may be given (too close to that end).
func (rm *Room) passLast(p *policy, c *cookieState, now int64) (last int64, ok bool) {
	last = floorDiv(now+rm.cfg.Pass.Duration.Milliseconds(), 1000) - 1
	if !p.renew {
		last = min(last, floorDiv(c.acceptedAt+p.session, 1000)-1)
	}
	return last, last >= floorDiv(now, 1000)
}

// passCookie returns the Set-Cookie value of the pass of visitor c, good
// through Unix second last, given at now (Unix ms).
func (rm *Room) passCookie(c *cookieState, last, now int64) string {
	t := c.ticket()
	b := make([]byte, 0, 192)
	b = append(b, rm.cookieName...)
	b = append(b, "_pass="...)
	sig := len(b)
	b = append(b, "0123456789012345678901."...) // the signature's place
	data := len(b)
	b = strconv.AppendInt(b, last, 10)
	b = append(b, '_')
	b = appendHexID(b, t.ID)
	b = append(b, '_')
	b = t.Bucket.UTC().AppendFormat(b, time.RFC3339)
	b = append(b, '_')
	b = t.AcceptedAt.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	sum := passSum(b[data:], rm.cookieName, rm.cfg.Pass.Secret)
	base64.RawURLEncoding.Encode(b[sig:sig+22], sum[:])
	b = append(b, "; Max-Age="...)
	b = strconv.AppendInt(b, ((last+1)*1000-now+999)/1000, 10) // rounded up
	b = append(b, rm.cookieAttrs...)
	return string(b)
}

// passSum is the signature nginx's secure_link_md5 "$data <cookie name>
// <secret>" computes.
func passSum(data []byte, cookieName, secret string) [md5.Size]byte {
	h := md5.New()
	h.Write(data)
	h.Write([]byte{' '})
	h.Write([]byte(cookieName))
	h.Write([]byte{' '})
	h.Write([]byte(secret))
	var s [md5.Size]byte
	h.Sum(s[:0])
	return s
}

// expiredPass is the Set-Cookie value that removes the pass cookie.
func (rm *Room) expiredPass() string {
	return rm.cookieName + "_pass=; Max-Age=0" + rm.cookieAttrs
}

// passRevoke is the record of a revoke at now (Unix ms) of visitor id,
// admitted at Unix second admitted, while passes are given: the session
// seen through the last second of any pass that any instance may still
// give it, and ended just after. This instance's passes end within
// Pass.Duration of now; another instance gives passes until it learns of
// the revoke, within revokeReach of now, each good for Pass.Duration at
// most. The sync takes the record for a revoke (revokedFrom): every
// instance that learnt of it refuses the cookie from its end, and gives
// no pass good past it (givePass).
func (rm *Room) passRevoke(id uint64, admitted, now int64) store.Session {
	reach := revokeReach(rm.cfg.SyncInterval)
	last := floorDiv(now+reach+rm.cfg.Pass.Duration.Milliseconds(), 1000) - 1
	return store.Session{ID: id, Admitted: admitted, Seen: last, End: last + 1}
}

// appendHexID appends id as 16 lower-case hex digits.
func appendHexID(b []byte, id uint64) []byte {
	const digits = "0123456789abcdef"
	for i := 60; i >= 0; i -= 4 {
		b = append(b, digits[id>>uint(i)&0xf])
	}
	return b
}

// revokedFrom reports whether the record x stands for a revoked session,
// and from when (Unix ms) the cookies of the session are refused: at once
// when it is revoked; at its end when it ends as a revoke under passes
// ends it (passRevoke), seen through the last second before its end or
// later (a sign of life from an instance that had not learnt of it). A
// session that ends on its own, seen in its last second, looks the same,
// and is over at its end as well: no cookie of it passes then either way.
func revokedFrom(x *store.Session) (from int64, ok bool) {
	switch {
	case x.Revoked:
		return 0, true
	case x.End != 0 && x.Seen >= x.End-1:
		return x.End * 1000, true
	}
	return 0, false
}

// givePass adds to h the pass of the visitor d admitted, and counts it as
// the session's sign of life until it expires. No pass is good past the
// end of the session's record: a revoke on another instance holds the
// slot only until the passes that any instance may have given before it
// learnt of the revoke have expired, and this instance lets the revoked
// cookie in until then (revokedFrom), but no longer on a pass.
func (rm *Room) givePass(h http.Header, d *Decision) {
	v := rm.view.Load()
	c := &d.state
	last, ok := rm.passLast(d.policy, c, d.now)
	if !ok {
		return
	}
	x := store.Session{ID: c.id, Admitted: floorDiv(c.acceptedAt, 1000), Seen: last, End: sessionEnd(d.policy, c.acceptedAt)}
	rm.mu.Lock()
	if k, found := rm.lookupLocked(v, c.id); found && k.End != 0 && k.End-1 < last {
		if last = k.End - 1; last < floorDiv(d.now, 1000) {
			rm.mu.Unlock()
			return
		}
		x.Seen = last
	}
	rm.reportLocked(x)
	rm.mu.Unlock()
	h[PassHeader] = []string{rm.passCookie(c, last, d.now)}
}

package forwardauth

import (
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/hook"
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
//   - a revoke (the revoke command, or an application's behind
//     room.Handler) ends the session when the latest pass that any
//     instance may still give it expires (an instance gives passes until
//     it learns of the revoke, at its next sync), not before, and holds
//     its slot until then: a client that keeps sending the pass it had
//     gets nothing a visitor still in their session would not, and the
//     limits hold;
//   - a room that starts rejecting, or is suspended, answers the server's
//     auth requests at once, but a pass given before lasts until it
//     expires.
//
// The room learns of passes from New: the handlers of every instance
// sharing the room should give the same passes. The zero Pass gives
// none.
type Pass struct {
	// Secret signs the passes; the server's configuration holds it too
	// (nginx's secure_link_md5). 22 to 128 characters of A-Z, a-z, 0-9,
	// '-' and '_' (22 random base64url characters are 128 bits). It is
	// not the room's cookie key: the server can forge passes, never
	// cookies. Empty: no passes.
	Secret string
	// Duration is how long a pass lasts at most, in whole seconds: a
	// pass is good to the end of the whole second before Duration has
	// passed (nginx checks expiry by the second), so between Duration
	// less a second and Duration. The longer, the fewer auth requests,
	// and the longer a revoke or a change to reject takes to reach the
	// server. Default DefaultPassDuration, 2 s; at most MaxPassDuration,
	// 5 s.
	//
	// A revoke holds the visitor's slot until every pass that any
	// instance may still give them has expired: up to Duration after the
	// revoke has reached every instance, which takes two SyncIntervals
	// (the revoking instance's sync, and in a fleet syncing through an
	// aggregator, its round), a tenth of one and a second at most. New
	// refuses a Pass whose hold could be longer than 10 s, further ahead
	// than the shared state believes a sign of life: with the default
	// Duration, a room's SyncInterval above about 3.3 s.
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

// PassHeader is the header of a forward-auth answer that gives an
// admitted visitor a pass (Options.Pass): a whole Set-Cookie value, for
// the server to add to the visitor's response (nginx: auth_request_set
// and add_header Set-Cookie). It carries an expired cookie with a
// revoke. The pass's cookie is named after the room's, with "_pass"
// appended, and its value is "<signature>.<last>_<id>_<bucket>_<accepted>":
// the Unix second through which it is good, and the ticket's three
// fields as waitingroom.Ticket.String writes them; the signature is the
// unpadded base64url MD5 of everything after the dot, a space, the
// room's cookie name, a space and Pass.Secret, as nginx's secure_link
// checks it (the name, so that rooms sharing a secret cannot take each
// other's passes).
const PassHeader = "Waiting-Room-Pass"

var passSecretRE = regexp.MustCompile(`^[A-Za-z0-9_-]{22,128}$`)

// Validate reports what New would find wrong with p, whatever the room:
// nil for the zero Pass. The error wraps waitingroom.ErrInvalidConfig,
// and never shows the secret.
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

// invalid is an error of the Options, wrapping ErrInvalidConfig.
func invalid(format string, a ...any) error {
	return fmt.Errorf("forwardauth: %w: "+format, append([]any{waitingroom.ErrInvalidConfig}, a...)...)
}

// givePass adds to the header of w, the writer room.Handler passed on,
// the pass of the visitor of ticket t, whom it admitted; the room counts
// it as the session's sign of life until it expires, and may give none
// (hook.GivePass).
func (f *handler) givePass(w http.ResponseWriter, t waitingroom.Ticket) {
	last, now, ok := hook.GivePass(w, f.pass.Duration)
	h := w.Header()
	if ok {
		h[PassHeader] = []string{f.passCookie(t, last, now)}
	}
}

// passCookie returns the Set-Cookie value of the pass of ticket t, good
// through Unix second last, given at now (Unix ms).
func (f *handler) passCookie(t waitingroom.Ticket, last, now int64) string {
	name := f.front.CookieName
	b := make([]byte, 0, 192)
	b = append(b, name...)
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
	sum := passSum(b[data:], name, f.pass.Secret)
	base64.RawURLEncoding.Encode(b[sig:sig+22], sum[:])
	b = append(b, "; Max-Age="...)
	b = strconv.AppendInt(b, ((last+1)*1000-now+999)/1000, 10) // rounded up
	b = append(b, f.front.CookieAttrs...)
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
func (f *handler) expiredPass() string {
	return f.front.CookieName + "_pass=; Max-Age=0" + f.front.CookieAttrs
}

// appendHexID appends id as 16 lower-case hex digits, as Ticket.String
// writes it.
func appendHexID(b []byte, id uint64) []byte {
	const digits = "0123456789abcdef"
	for i := 60; i >= 0; i -= 4 {
		b = append(b, digits[id>>uint(i)&0xf])
	}
	return b
}

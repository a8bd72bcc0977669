package waitingroom

import (
	"encoding/hex"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Headers of forward-auth (Room.ForwardAuth), between the room and the
// server in front of the application.
const (
	// TicketHeader is the header of a forward-auth answer that lets a
	// request through, for the server to copy onto the request it sends
	// the application: "id=<16 hex digits>; bucket=<RFC 3339>;
	// accepted=<RFC 3339, ms>" for an admitted visitor (Ticket.String;
	// ParseTicket reads it), "bypassed" for a request a bypass rule or a suspended room let
	// through. It is on every such answer, so that a server that copies it
	// overwrites whatever a client sent under that name.
	TicketHeader = "Waiting-Room-Ticket"
	// ForwardAuthHeader, on an auth request, selects how a request that
	// may not pass is answered: absent, with the waiting page (Caddy,
	// Traefik, Envoy); "status", with an empty 401 (nginx's auth_request,
	// which shows nothing of the answer); "page", with the waiting page of
	// the decision the "status" request made, for nginx's error_page.
	ForwardAuthHeader = "Waiting-Room-Forward-Auth"
	// ForwardCookieHeader carries, on an auth request of mode "page", the
	// Set-Cookie header of the "status" answer before it (nginx's
	// $upstream_http_set_cookie), so that the page is that decision's and
	// takes no second chance.
	ForwardCookieHeader = "Waiting-Room-Cookie"
)

// ForwardAuth returns the handler that answers the auth requests of a
// server in front of the application: nginx's auth_request, Caddy's
// forward_auth, Traefik's ForwardAuth, Envoy's HTTP ext_authz or
// ingress-nginx's auth-url (docs/forward-auth.md has a configuration for
// each). It decides on the visitor's original request as Handler does,
// and answers:
//
//   - a request that may pass: 200 with an empty body, TicketHeader, and
//     the room's Set-Cookie when the cookie changed;
//   - a request that may not: the waiting page (or the closed page) with
//     its Set-Cookie and 429 Too Many Requests whatever QueueingStatusCode
//     says (these servers show only an answer outside 2xx to the visitor,
//     and take a 2xx for a pass), or, with ForwardAuthHeader "status",
//     401 with an empty body and the Set-Cookie, and with "page" the
//     waiting page of that decision (never a pass: if the room has let
//     the visitor in since, a 307 to the original URI);
//   - a closed room (ErrClosed): Config.ErrorHandler's answer.
//
// The original request is read from the auth request's headers when its
// peer is one of Config.TrustedProxies: the method from X-Forwarded-Method
// or X-Original-Method, the URI from X-Forwarded-Uri, X-Original-Uri or
// the path and query of X-Original-Url, the host from X-Forwarded-Host
// (else X-Original-Url's, else Host) and the scheme from
// X-Forwarded-Proto; the client's address is read from X-Forwarded-For as
// for ClientNetworks rules. Without those headers, or from any other
// peer, the auth request is the original (Envoy sends the original
// method and path). A URI that does not parse matches no path rule.
// Cookies, Accept and every other header are the auth request's: the
// server must pass the visitor's on.
//
// An auth request with the header "Waiting-Room-Command: revoke" ends
// the admitted visitor's session and passes, with an expired cookie: the
// server sends it on the requests that end a session (such as a checkout's
// last step), since an application's response header cannot reach the
// room through these servers. A visitor can only revoke themselves.
//
// The handler is safe for concurrent use. It serves every path: mount it
// where the server's auth requests go.
func (rm *Room) ForwardAuth() http.Handler { return &forwardAuth{rm: rm} }

type forwardAuth struct {
	rm     *Room
	warned atomic.Bool // an untrusted peer's forwarded headers were logged
}

// Values of ForwardAuthHeader.
const (
	forwardStatus = "status"
	forwardPage   = "page"
)

func (f *forwardAuth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rm := f.rm
	orig := f.original(r)
	mode := r.Header.Get(ForwardAuthHeader)
	var fresh string // the cookie value the "status" answer set
	if mode == forwardPage {
		orig, fresh = rm.withCookie(orig, r.Header.Get(ForwardCookieHeader))
	}
	var d Decision
	if err := rm.check(orig, &d); err != nil {
		rm.RespondError(w, orig, err)
		return
	}
	h := w.Header()
	if d.Pass() && mode != forwardPage {
		if d.Outcome == Admitted && hasRevoke(r.Header) {
			rm.revoke(w, d.state.id, d.state.acceptedAt, floorDiv(d.state.acceptedAt, 1000)+int64(d.state.checkedIn()))
			h.Set(TicketHeader, "revoked")
			w.WriteHeader(http.StatusOK)
			return
		}
		if d.cookie != "" {
			h.Add("Set-Cookie", rm.cookieName+"="+d.cookie+rm.cookieAttrs)
		}
		if d.Outcome == Admitted {
			h[TicketHeader] = []string{d.state.ticket().String()}
			if rm.cfg.Pass.Secret != "" {
				rm.givePass(h, &d)
			}
		} else {
			h[TicketHeader] = bypassedTicket
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	if d.cookie == "" && fresh != "" {
		h.Add("Set-Cookie", rm.cookieName+"="+fresh+rm.cookieAttrs)
	}
	switch {
	case mode == forwardStatus:
		if d.cookie != "" {
			h.Add("Set-Cookie", rm.cookieName+"="+d.cookie+rm.cookieAttrs)
		}
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusUnauthorized)
	case d.Pass():
		// The page after a "status" answer, but the room has let the
		// visitor in since (or a rule lets the request through): back to
		// the original URI, whose auth request will pass.
		if d.cookie != "" {
			h.Add("Set-Cookie", rm.cookieName+"="+d.cookie+rm.cookieAttrs)
		}
		h.Set("Cache-Control", "no-store")
		h.Set("Location", redirectTarget(orig))
		w.WriteHeader(http.StatusTemporaryRedirect)
	default:
		rm.Respond(&notPassWriter{ResponseWriter: w}, orig, d)
	}
}

var bypassedTicket = []string{"bypassed"}

// hasRevoke reports whether h carries the revoke command.
func hasRevoke(h http.Header) bool {
	return slices.ContainsFunc(h.Values(CommandHeader), func(v string) bool {
		return strings.EqualFold(strings.TrimSpace(v), "revoke")
	})
}

// original returns the request the auth request r asks about: r itself
// when its peer is not trusted or it carries no forwarded request line,
// otherwise a shallow copy with the forwarded method, URI and host.
func (f *forwardAuth) original(r *http.Request) *http.Request {
	h := r.Header
	method := firstHeader(h, "X-Forwarded-Method", "X-Original-Method")
	uri := firstHeader(h, "X-Forwarded-Uri", "X-Original-Uri")
	host, proto := h.Get("X-Forwarded-Host"), h.Get("X-Forwarded-Proto")
	if full := h.Get("X-Original-Url"); full != "" && uri == "" {
		uri = "\x00" // set below; never parses as a URI
		if u, err := url.Parse(full); err == nil && u.IsAbs() && u.Host != "" {
			uri = u.RequestURI()
			if host == "" {
				host = u.Host
			}
			if proto == "" {
				proto = u.Scheme
			}
		}
	}
	if method == "" && uri == "" && host == "" {
		return r
	}
	rm := f.rm
	if !trustedAddr(parseAddr(r.RemoteAddr), rm.cfg.TrustedProxies) {
		if f.warned.CompareAndSwap(false, true) {
			rm.log.Warn("waitingroom: forward-auth request with forwarded headers from a peer outside TrustedProxies; its headers are ignored (logged once)", "peer", r.RemoteAddr)
		}
		return r
	}
	o := new(http.Request)
	*o = *r
	if method != "" && validMethod(method) {
		o.Method = method
	}
	if uri != "" {
		u, err := url.ParseRequestURI(uri)
		if err != nil || !strings.HasPrefix(uri, "/") {
			// No path: no path rule matches.
			u = &url.URL{}
		}
		o.URL, o.RequestURI = u, uri
	} else {
		u := *r.URL
		o.URL = &u
	}
	if host != "" {
		o.Host = host
		o.URL.Host = host
	}
	if proto == "http" || proto == "https" {
		o.URL.Scheme = proto
	}
	o.Body, o.ContentLength = http.NoBody, 0
	return o
}

// withCookie returns r with setCookie, a Set-Cookie header of the room's
// cookie, in place of the room's cookies it carries, and the cookie's
// value; r itself and "" when setCookie is not the room's.
func (rm *Room) withCookie(r *http.Request, setCookie string) (*http.Request, string) {
	pair, _, _ := strings.Cut(setCookie, ";")
	name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
	if !ok || name != rm.cookieName || value == "" || !base64URL(value) {
		return r, ""
	}
	var kept []string
	for _, line := range r.Header.Values("Cookie") {
		for c := range strings.SplitSeq(line, ";") {
			if c = strings.TrimSpace(c); c != "" && !strings.HasPrefix(c, rm.cookieName+"=") {
				kept = append(kept, c)
			}
		}
	}
	kept = append(kept, name+"="+value)
	o := new(http.Request)
	*o = *r
	o.Header = r.Header.Clone()
	o.Header.Set("Cookie", strings.Join(kept, "; "))
	return o, value
}

// base64URL reports whether s is made of base64url characters only, as
// the room's cookie values are.
func base64URL(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// redirectTarget is where the page request r sends a visitor who may
// pass: its URI, if a plain path; "/" otherwise.
func redirectTarget(r *http.Request) string {
	u := r.URL.RequestURI()
	if !strings.HasPrefix(u, "/") || strings.HasPrefix(u, "//") || strings.ContainsAny(u, "\\\r\n") {
		return "/"
	}
	return u
}

// firstHeader is the value of the first of names that r carries.
func firstHeader(h http.Header, names ...string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// validMethod reports whether m is an HTTP token.
func validMethod(m string) bool {
	for i := range len(m) {
		c := m[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return len(m) <= 32
}

// trustedAddr reports whether a is in one of the trusted networks.
func trustedAddr(a netip.Addr, trusted []netip.Prefix) bool {
	return a.IsValid() && slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(a) })
}

// notPassWriter turns the status of a waiting response into 429 when it
// is a 2xx, which the servers in front would take for a pass.
type notPassWriter struct {
	http.ResponseWriter
}

func (w *notPassWriter) WriteHeader(code int) {
	if code >= 200 && code < 300 {
		code = http.StatusTooManyRequests
		h := w.Header()
		if s := h.Get("Refresh"); s != "" {
			h.Set("Retry-After", s)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// String returns the ticket as TicketHeader carries it: "id=<16 hex
// digits>; bucket=<RFC 3339>; accepted=<RFC 3339, ms>", in UTC.
// ParseTicket reads it back.
func (t Ticket) String() string {
	b := make([]byte, 0, 96)
	b = append(b, "id="...)
	b = appendHexID(b, t.ID)
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

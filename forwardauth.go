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

// FrontDoor names the server in front of the application whose auth
// requests ForwardAuth answers, and so the headers in which that server
// describes the visitor's original request. The room reads those headers
// and no others: a server passes the visitor's own headers on to the room,
// and only those it sets itself (overwriting any a client sent) can be
// believed. The zero value names none: ForwardAuth refuses every request.
type FrontDoor string

// The front doors ForwardAuth serves (docs/forward-auth.md has the
// configuration of each server).
const (
	// FrontDoorForwarded reads X-Forwarded-Method, X-Forwarded-Uri,
	// X-Forwarded-Host and X-Forwarded-Proto: nginx (the documented
	// configuration sets all four), Caddy's forward_auth, Traefik's
	// ForwardAuth (trustForwardHeader false), and any other server that
	// overwrites all four on every auth request.
	FrontDoorForwarded FrontDoor = "forwarded"
	// FrontDoorIngressNginx reads X-Original-Method and X-Original-URL
	// (scheme, host and URI), which the auth location of the ingress-nginx
	// controller sets. It passes a client's X-Forwarded-Uri and the like
	// on unchanged.
	FrontDoorIngressNginx FrontDoor = "ingress-nginx"
	// FrontDoorEnvoy reads no header: Envoy's HTTP ext_authz sends the
	// original method, path and Host as the auth request itself.
	FrontDoorEnvoy FrontDoor = "envoy"
)

// ForwardAuth returns the handler that answers the auth requests of door,
// the server in front of the application: nginx's auth_request, Caddy's
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
// The original request is read from the headers of door, and only when
// the auth request's peer is one of Config.TrustedProxies; each must come
// once (a header given twice, or missing, is no description: a URI that
// is missing, given twice or does not parse matches no path rule; a method
// that is missing, given twice or is no HTTP token leaves the auth
// request's). Every server below overwrites each header it is read
// through (docs/forward-auth.md names the directives):
//
//	server          door                   method, URI, host and scheme from          set by
//	nginx           FrontDoorForwarded     X-Forwarded-Method, -Uri, -Host, -Proto    proxy_set_header, in each location
//	Caddy           FrontDoorForwarded     X-Forwarded-Method, -Uri, -Host, -Proto    forward_auth and its reverse_proxy
//	Traefik         FrontDoorForwarded     X-Forwarded-Method, -Uri, -Host, -Proto    ForwardAuth, trustForwardHeader false
//	ingress-nginx   FrontDoorIngressNginx  X-Original-Method, X-Original-URL          the controller's auth location
//	Envoy           FrontDoorEnvoy         the auth request's method, path and Host   ext_authz
//	another server  FrontDoorForwarded     X-Forwarded-Method, -Uri, -Host, -Proto    the server, replacing all four
//
// Every other header describes nothing of the original request:
// X-Original-* behind FrontDoorForwarded, X-Forwarded-Method, -Uri, -Host
// and -Proto behind the others, Forwarded and X-Real-Ip behind all. From
// any other peer the auth request itself is the original. The client's
// address, for ClientNetworks rules, is read from X-Forwarded-For as in
// Handler, from the right (each server above writes its peer's address
// last).
// Cookies, Accept and every other header are the auth request's: the
// server must pass the visitor's on.
//
// An auth request with the header "Waiting-Room-Command: revoke" ends
// the admitted visitor's session and passes, with an expired cookie: the
// server sends it on the requests that end a session (such as a checkout's
// last step), since an application's response header cannot reach the
// room through these servers. A visitor can only revoke themselves.
//
// A door that is none of the constants gets a handler that answers every
// request 500, and ForwardAuth logs an error, so that a mistyped door lets
// no one through. The handler is safe for concurrent use. It serves
// every path: mount it where the server's auth requests go.
func (rm *Room) ForwardAuth(door FrontDoor) http.Handler {
	switch door {
	case FrontDoorForwarded, FrontDoorIngressNginx, FrontDoorEnvoy:
		return &forwardAuth{rm: rm, door: door}
	}
	rm.log.Error("waitingroom: ForwardAuth: unknown front door; every auth request gets 500", "door", string(door))
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "waitingroom: unknown front door", http.StatusInternalServerError)
	})
}

type forwardAuth struct {
	rm     *Room
	door   FrontDoor
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

// The headers each door reads.
var (
	forwardedHeaders = []string{"X-Forwarded-Method", "X-Forwarded-Uri", "X-Forwarded-Host", "X-Forwarded-Proto"}
	originalHeaders  = []string{"X-Original-Method", "X-Original-Url"}
)

// original returns the request the auth request r asks about: r itself
// for FrontDoorEnvoy, or when r's peer is not trusted; otherwise a
// shallow copy with the method, URI, host and scheme of the door's
// headers.
func (f *forwardAuth) original(r *http.Request) *http.Request {
	h := r.Header
	names := forwardedHeaders
	switch f.door {
	case FrontDoorEnvoy:
		return r
	case FrontDoorIngressNginx:
		names = originalHeaders
	}
	rm := f.rm
	if !trustedAddr(parseAddr(r.RemoteAddr), rm.cfg.TrustedProxies) {
		if slices.ContainsFunc(names, func(n string) bool { return len(h[n]) > 0 }) && f.warned.CompareAndSwap(false, true) {
			rm.log.Warn("waitingroom: forward-auth request with forwarded headers from a peer outside TrustedProxies; its headers are ignored (logged once)", "peer", r.RemoteAddr)
		}
		return r
	}
	var method, uri, host, proto string
	if f.door == FrontDoorIngressNginx {
		method = onlyHeader(h, "X-Original-Method")
		uri, host, proto = splitOriginalURL(onlyHeader(h, "X-Original-Url"))
	} else {
		method, uri = onlyHeader(h, "X-Forwarded-Method"), onlyHeader(h, "X-Forwarded-Uri")
		host, proto = onlyHeader(h, "X-Forwarded-Host"), onlyHeader(h, "X-Forwarded-Proto")
	}
	o := new(http.Request)
	*o = *r
	if method != "" && validMethod(method) {
		o.Method = method
	}
	u, err := url.ParseRequestURI(uri)
	if err != nil || !strings.HasPrefix(uri, "/") {
		u = &url.URL{} // no path: no path rule matches
	}
	o.URL, o.RequestURI = u, uri
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

// onlyHeader is the value of the header name in h if h has exactly one,
// "" otherwise: a server that sets the header replaces any a client sent,
// so a second value comes from no such server.
func onlyHeader(h http.Header, name string) string {
	if vs := h[name]; len(vs) == 1 {
		return vs[0]
	}
	return ""
}

// splitOriginalURL splits the value of ingress-nginx's X-Original-URL,
// "$scheme://$http_host$request_uri", into the request URI (from the
// first '/' after "://": nginx refuses a Host with a '/'), the host and
// the scheme. A value of another shape has no URI.
func splitOriginalURL(v string) (uri, host, scheme string) {
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok {
		return "", "", ""
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return "", rest, scheme
	}
	return rest[i:], rest[:i], scheme
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

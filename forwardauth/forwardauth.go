// Package forwardauth answers the auth requests of a server in front of
// the application for a waiting room: nginx's auth_request, Caddy's
// forward_auth, Traefik's ForwardAuth, Envoy's HTTP ext_authz or
// ingress-nginx's auth-url (docs/forward-auth.md has a configuration for
// each). The server asks the room about each of a visitor's requests, and
// sends the request on to the application only when the room says it may
// pass; otherwise the visitor gets the room's waiting page.
//
//	h, err := forwardauth.New(room, forwardauth.Options{FrontDoor: forwardauth.Forwarded})
//	if err != nil {
//		log.Fatal(err)
//	}
//	http.ListenAndServe("127.0.0.1:8081", h) // nginx's auth_request goes here
//
// The handler is built on room.Handler: the room decides on the visitor's
// original request, read from the server's headers, exactly as on a
// request to an application behind Handler, and ends a session the same
// way. With Options.Pass, an admitted visitor also gets a pass that the
// server checks itself for a few seconds (Pass).
package forwardauth

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/hook"
	"github.com/go-waitingroom/waitingroom/internal/request"
)

// Headers between the forward-auth handler and the server in front. The
// answer that lets a request through carries waitingroom.TicketHeader,
// for the server to copy onto the request it sends the application; the
// server ends a visitor's session with waitingroom.CommandHeader on an
// auth request (New).
const (
	// ModeHeader, on an auth request, selects how a request that may not
	// pass is answered: absent, with the waiting page (Caddy, Traefik,
	// Envoy); "status", with an empty 401 (nginx's auth_request, which
	// shows nothing of the answer); "page", with the waiting page of the
	// decision the "status" request made, for nginx's error_page.
	ModeHeader = "Waiting-Room-Forward-Auth"
	// CookieHeader carries, on an auth request of mode "page", the
	// Set-Cookie header of the "status" answer before it (nginx's
	// $upstream_http_set_cookie), so that the page is that decision's and
	// takes no second chance.
	CookieHeader = "Waiting-Room-Cookie"
)

// Values of ModeHeader.
const (
	modeStatus = "status"
	modePage   = "page"
)

// FrontDoor names the server in front of the application whose auth
// requests the handler answers, and so the headers in which that server
// describes the visitor's original request. The handler reads those
// headers and no others: a server passes the visitor's own headers on to
// the room, and only those it sets itself (overwriting any a client sent)
// can be believed.
type FrontDoor string

// The front doors New knows (docs/forward-auth.md has the configuration
// of each server).
const (
	// Forwarded reads X-Forwarded-Method, X-Forwarded-Uri,
	// X-Forwarded-Host and X-Forwarded-Proto: nginx (the documented
	// configuration sets all four), Caddy's forward_auth, Traefik's
	// ForwardAuth (trustForwardHeader false), and any other server that
	// overwrites all four on every auth request.
	Forwarded FrontDoor = "forwarded"
	// IngressNginx reads X-Original-Method and X-Original-URL (scheme,
	// host and URI), which the auth location of the ingress-nginx
	// controller sets. It passes a client's X-Forwarded-Uri and the like
	// on unchanged.
	IngressNginx FrontDoor = "ingress-nginx"
	// Envoy reads no header: Envoy's HTTP ext_authz sends the original
	// method, path and Host as the auth request itself.
	Envoy FrontDoor = "envoy"
)

// Options are the forward-auth handler's. The zero value names no front
// door, which New refuses.
type Options struct {
	// FrontDoor is the server in front. Required: there is no default,
	// since each server passes the visitor's own headers on, and the
	// handler must read only those the server overwrites.
	FrontDoor FrontDoor
	// Pass gives admitted visitors passes that the server checks itself
	// (nginx's secure_link), sparing it most of its auth requests.
	// Default: none.
	Pass Pass
}

// New returns the handler that answers the auth requests of
// o.FrontDoor, the server in front of the application, for room. It
// decides on the visitor's original request as room.Handler does, and
// answers:
//
//   - a request that may pass: 200 with an empty body,
//     waitingroom.TicketHeader (the admitted visitor's ticket, or
//     "bypassed"), the room's Set-Cookie when the cookie changed, and
//     with o.Pass a pass (PassHeader);
//   - a request that may not: the waiting page (or the closed page) with
//     its Set-Cookie and 429 Too Many Requests whatever the room's
//     QueueingStatusCode says (these servers show only an answer outside
//     2xx to the visitor, and take a 2xx for a pass), with Retry-After;
//     with ModeHeader "status", 401 with an empty body and the
//     Set-Cookie, and with "page" the waiting page of that decision
//     (never a pass: if the room has let the visitor in since, a 307 to
//     the original URI; a session that the "status" answer refused, which
//     the page's instance would let in, gets the waiting page: an
//     instance refuses a revoked session before the others do);
//   - a closed room (waitingroom.ErrClosed): the room's
//     Config.ErrorHandler's answer.
//
// The original request is read from the headers of o.FrontDoor, and only
// when the auth request's peer is one of the room's
// Config.TrustedProxies; each must come once (a header given twice, or
// missing, is no description: a URI that is missing, given twice or does
// not parse matches no path rule; a method that is missing, given twice
// or is no HTTP token leaves the auth request's). Every server below
// overwrites each header it is read through (docs/forward-auth.md names
// the directives):
//
//	server          door          method, URI, host and scheme from          set by
//	nginx           Forwarded     X-Forwarded-Method, -Uri, -Host, -Proto    proxy_set_header, in each location
//	Caddy           Forwarded     X-Forwarded-Method, -Uri, -Host, -Proto    forward_auth and its reverse_proxy
//	Traefik         Forwarded     X-Forwarded-Method, -Uri, -Host, -Proto    ForwardAuth, trustForwardHeader false
//	ingress-nginx   IngressNginx  X-Original-Method, X-Original-URL          the controller's auth location
//	Envoy           Envoy         the auth request's method, path and Host   ext_authz
//	another server  Forwarded     X-Forwarded-Method, -Uri, -Host, -Proto    the server, replacing all four
//
// Every other header describes nothing of the original request:
// X-Original-* behind Forwarded, X-Forwarded-Method, -Uri, -Host and
// -Proto behind the others, Forwarded and X-Real-Ip behind all. From any
// other peer the auth request itself is the original. The client's
// address, for ClientNetworks rules, is read from X-Forwarded-For as by
// room.Handler, from the right (each server above writes its peer's
// address last). Cookies, Accept and every other header are the auth
// request's: the server must pass the visitor's on.
//
// An auth request with the header "Waiting-Room-Command: revoke"
// (waitingroom.CommandHeader) ends the admitted visitor's session and
// passes, with an expired cookie and TicketHeader "revoked": the server
// sends it on the requests that end a session (such as a checkout's last
// step), since an application's response header cannot reach the room
// through these servers. The handler turns it into that response header
// for room.Handler, which obeys it as an application's. A visitor can
// only revoke themselves.
//
// New returns an error wrapping waitingroom.ErrInvalidConfig for a
// FrontDoor that is none of the constants, and for a bad Pass (see
// Pass.Validate, and Pass.Duration for the limit the room's SyncInterval
// sets). room must not be nil. The handler is safe for concurrent use.
// It serves every path: mount it where the server's auth requests go.
func New(room *waitingroom.Room, o Options) (http.Handler, error) {
	switch o.FrontDoor {
	case Forwarded, IngressNginx, Envoy:
	default:
		return nil, fmt.Errorf("forwardauth: %w: unknown FrontDoor %q; want forwardauth.Forwarded, IngressNginx or Envoy", waitingroom.ErrInvalidConfig, o.FrontDoor)
	}
	p, err := o.Pass.normalize()
	if err != nil {
		return nil, err
	}
	if p.Secret != "" {
		if err := hook.ExpectPasses(room, p.Duration); err != nil {
			return nil, err
		}
	}
	front := hook.FrontOf(room)
	return &handler{room: room, door: o.FrontDoor, pass: p, front: front, log: front.Logger}, nil
}

// handler is the forward-auth handler.
type handler struct {
	room   *waitingroom.Room
	door   FrontDoor
	pass   Pass
	front  hook.Front
	log    *slog.Logger
	warned atomic.Bool // an untrusted peer's forwarded headers were logged
}

func (f *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	orig := f.original(r)
	x := &exchange{ResponseWriter: w, f: f, mode: r.Header.Get(ModeHeader), vary: len(w.Header()["Vary"])}
	if x.mode == modePage {
		// The page of the "status" answer's decision, which the room
		// takes from the cookie that answer set or, when it set none,
		// from the cookie it refused: that session is not let in here.
		orig, x.fresh = f.withCookie(orig, r.Header.Get(CookieHeader))
		hook.PageHandler(f.room, (*letThrough)(x)).ServeHTTP(x, orig)
		return
	}
	x.revoke = hasRevoke(r.Header)
	f.room.Handler((*letThrough)(x)).ServeHTTP(x, orig)
}

// exchange is one auth request's: the ResponseWriter that room.Handler
// writes to, which turns the room's answer for the visitor into the
// server's (a waiting page into 429 or 401), and, seen as letThrough,
// the handler that Handler serves a request that may pass with.
type exchange struct {
	http.ResponseWriter
	f      *handler
	mode   string // ModeHeader's value
	fresh  string // mode "page": the value of the room's cookie the "status" answer set
	revoke bool   // the auth request carries the revoke command
	vary   int    // the Vary headers the writer held before the room's answer

	passed  bool // the room let the request through: letThrough's answer
	revoked bool // and letThrough asked the room to revoke the session
	wrote   bool // the status is written
	quiet   bool // mode "status": the page's body is dropped
}

// letThrough is the exchange as the handler room.Handler serves a
// request that may pass with: the answer that lets it through, in w,
// Handler's writer, which obeys the revoke command and carries the
// admitted visitor's ticket.
type letThrough exchange

func (l *letThrough) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := (*exchange)(l)
	x.passed = true
	h := w.Header()
	if x.mode == modePage {
		// The page after a "status" answer, but the room has let the
		// visitor in since (or a rule lets the request through): back to
		// the original URI, whose auth request will pass.
		h.Set("Cache-Control", "no-store")
		h.Set("Location", redirectTarget(r))
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	t, admitted := waitingroom.TicketFrom(w)
	switch {
	case !admitted:
		h[waitingroom.TicketHeader] = bypassedTicket
	case x.revoke:
		// Handler ends the session, as an application's response
		// header asks.
		h.Set(waitingroom.CommandHeader, "revoke")
		h.Set(waitingroom.TicketHeader, "revoked")
		x.revoked = true
	default:
		h[waitingroom.TicketHeader] = []string{t.String()}
		if x.f.pass.Secret != "" {
			x.f.givePass(w, t)
		}
	}
	w.WriteHeader(http.StatusOK)
}

var bypassedTicket = []string{"bypassed"}

// Unwrap returns the server's writer, for http.ResponseController.
func (x *exchange) Unwrap() http.ResponseWriter { return x.ResponseWriter }

// WriteHeader writes the server's answer: letThrough's as it is (with, after
// a revoke, the expired pass: after the expired cookie, which nginx
// passes on as the first Set-Cookie); the room's page, which a 2xx or
// its 429 is, as 429 (or in mode "status" as an empty 401, keeping the
// Set-Cookie); anything else, Config.ErrorHandler's answer, as it is. In
// mode "page" the cookie the "status" answer set goes with it when the
// room set none.
func (x *exchange) WriteHeader(code int) {
	if x.wrote {
		x.ResponseWriter.WriteHeader(code)
		return
	}
	x.wrote = true
	h := x.Header()
	switch {
	case x.passed:
		if x.revoked && x.f.pass.Secret != "" {
			expired := x.f.expiredPass()
			h.Add("Set-Cookie", expired)
			h.Set(PassHeader, expired)
		}
	case code/100 == 2 || code == http.StatusTooManyRequests:
		if x.mode == modeStatus {
			for _, k := range pageHeaders {
				delete(h, k)
			}
			if x.vary > 0 {
				h["Vary"] = h["Vary"][:x.vary]
			} else {
				delete(h, "Vary")
			}
			h.Set("Cache-Control", "no-store")
			code, x.quiet = http.StatusUnauthorized, true
			break
		}
		if code != http.StatusTooManyRequests {
			code = http.StatusTooManyRequests
			if s := h.Get("Refresh"); s != "" {
				h.Set("Retry-After", s)
			}
		}
	default:
		x.ResponseWriter.WriteHeader(code)
		return
	}
	if x.fresh != "" && !x.f.setsCookie(h) {
		h.Add("Set-Cookie", x.f.front.CookieName+"="+x.fresh+x.f.front.CookieAttrs)
	}
	x.ResponseWriter.WriteHeader(code)
}

// pageHeaders are the headers of the room's page that an empty 401 does
// not have.
var pageHeaders = []string{"Content-Type", "Content-Length", "Refresh", "Retry-After"}

func (x *exchange) Write(b []byte) (int, error) {
	if !x.wrote {
		x.WriteHeader(http.StatusOK)
	}
	if x.quiet {
		return len(b), nil
	}
	return x.ResponseWriter.Write(b)
}

// setsCookie reports whether h sets the room's cookie.
func (f *handler) setsCookie(h http.Header) bool {
	prefix := f.front.CookieName + "="
	return slices.ContainsFunc(h["Set-Cookie"], func(v string) bool { return strings.HasPrefix(v, prefix) })
}

// hasRevoke reports whether h carries the revoke command.
func hasRevoke(h http.Header) bool {
	return slices.ContainsFunc(h.Values(waitingroom.CommandHeader), func(v string) bool {
		return strings.EqualFold(strings.TrimSpace(v), "revoke")
	})
}

// The headers each door reads.
var (
	forwardedHeaders = []string{"X-Forwarded-Method", "X-Forwarded-Uri", "X-Forwarded-Host", "X-Forwarded-Proto"}
	originalHeaders  = []string{"X-Original-Method", "X-Original-Url"}
)

// original returns the request the auth request r asks about: r itself
// for Envoy, or when r's peer is not trusted; otherwise a shallow copy
// with the method, URI, host and scheme of the door's headers.
func (f *handler) original(r *http.Request) *http.Request {
	h := r.Header
	names := forwardedHeaders
	switch f.door {
	case Envoy:
		return r
	case IngressNginx:
		names = originalHeaders
	}
	if !request.Trusted(request.ParseAddr(r.RemoteAddr), f.front.TrustedProxies) {
		if slices.ContainsFunc(names, func(n string) bool { return len(h[n]) > 0 }) && f.warned.CompareAndSwap(false, true) {
			f.log.Warn("waitingroom: forward-auth request with forwarded headers from a peer outside TrustedProxies; its headers are ignored (logged once)", "peer", r.RemoteAddr)
		}
		return r
	}
	var method, uri, host, proto string
	if f.door == IngressNginx {
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
func (f *handler) withCookie(r *http.Request, setCookie string) (*http.Request, string) {
	cookieName := f.front.CookieName
	pair, _, _ := strings.Cut(setCookie, ";")
	name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
	if !ok || name != cookieName || value == "" || !base64URL(value) {
		return r, ""
	}
	var kept []string
	for _, line := range r.Header.Values("Cookie") {
		for c := range strings.SplitSeq(line, ";") {
			if c = strings.TrimSpace(c); c != "" && !strings.HasPrefix(c, cookieName+"=") {
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

package admin

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-waitingroom/waitingroom/internal/hook"
)

// The status page's sign-in: a browser that brings no credentials gets a
// form for the admin token, which it exchanges for a session cookie.

// SessionCookie is the name of the cookie that SignIn's form sets: a
// session of the status page, good for SessionLifetime.
const SessionCookie = "waitingroom_admin"

// SessionLifetime is how long a session that SignIn's form begins lasts:
// its cookie's Max-Age, and the expiry that the cookie's value carries
// under its MAC.
const SessionLifetime = 12 * time.Hour

// Sign-in limits.
const (
	// sessionSkew is how far in the future beyond SessionLifetime a
	// session's expiry may lie: the clocks of instances differ.
	sessionSkew = time.Minute
	// maxSignInBody is the largest sign-in form, in bytes.
	maxSignInBody = 4 << 10
	// maxSessionCookies is how many cookies named SessionCookie a request
	// may bring that are looked at (several paths may set one).
	maxSessionCookies = 4
	// maxFailedSignIns and failedSignInEvery bound failed sign-ins: a client
	// address may fail maxFailedSignIns times in a row, then once every
	// failedSignInEvery; beyond, its sign-ins are refused unread (429).
	maxFailedSignIns  = 10
	failedSignInEvery = 6 * time.Second
	// maxFailingClients bounds the client addresses whose failures are
	// remembered; beyond, the others share one count.
	maxFailingClients = 1024
)

// Option configures Handler beyond its Authenticator.
type Option func(*options) error

// options are what Handler's Options set.
type options struct {
	signIn *signIn
}

// SignIn lets an operator's browser open the status page with the admin
// token: a browser that asks for the status page without credentials
// gets a form with one password field; posting the token begins a
// session of SessionLifetime, carried by the cookie SessionCookie. token
// must be one that the Handler's Authenticator accepts as
// "Authorization: Bearer <token>" (that of BearerToken): a session grants
// exactly what that header would, as the Authenticator answers for it, and
// nothing else. Bearer tokens keep working as before, for scripts.
//
// The cookie is HttpOnly, SameSite=Strict, Secure when the request came
// over TLS or the room's Config.Cookie.Secure says the site is HTTPS, and
// its Path is the admin handler's mount point (the directory of the
// sign-in form's address). Its value is an expiry and an HMAC-SHA256 of
// it under a key derived from token, compared in constant time: it cannot
// be forged or extended, and a new token ends every session. A session
// is not recorded anywhere, so signing out (POST /signout) forgets the
// cookie in that browser only; a copied cookie lasts until it expires or
// the token changes.
//
// The sign-in form and sign-out refuse requests from another origin
// (http.CrossOriginProtection, as every state-changing admin request). A
// wrong token gets the form again with a message and no hint. Failed
// sign-ins are limited per client address (the connection's: behind a
// proxy, all share one): after 10 in a row, one every 6 seconds, and the
// others answer 429 without reading the token.
//
// SignIn returns an Option that makes Handler return an error wrapping
// waitingroom.ErrInvalidConfig for a token that BearerToken refuses.
func SignIn(token string) Option {
	return func(o *options) error {
		if _, err := BearerToken(token); err != nil {
			return err
		}
		s := &signIn{bearer: "Bearer " + token, token: sha256.Sum256([]byte(token))}
		m := hmac.New(sha256.New, []byte(token))
		m.Write([]byte("waitingroom admin session key"))
		copy(s.key[:], m.Sum(nil))
		s.failed.by = map[string]failures{}
		o.signIn = s
		return nil
	}
}

// signIn is SignIn's token, the key of its sessions and its failures.
type signIn struct {
	bearer string   // the Authorization header the token makes
	token  [32]byte // its SHA-256
	key    [32]byte // sessions' MAC key
	failed failedSignIns
}

// sessionValueLen is the length of a session cookie's value: the expiry
// (8 bytes, Unix seconds) and its MAC (32), base64url without padding.
var sessionValueLen = base64.RawURLEncoding.EncodedLen(8 + sha256.Size)

// mac is the MAC of a session that expires at exp (Unix seconds).
func (s *signIn) mac(exp []byte) []byte {
	m := hmac.New(sha256.New, s.key[:])
	m.Write([]byte(SessionCookie + "\x00"))
	m.Write(exp)
	return m.Sum(nil)
}

// session returns the value of a session cookie that expires at exp.
func (s *signIn) session(exp time.Time) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(exp.Unix()))
	return base64.RawURLEncoding.EncodeToString(append(b[:], s.mac(b[:])...))
}

// valid reports whether v is the value of a session of this token that
// lives at now.
func (s *signIn) valid(v string, now time.Time) bool {
	if len(v) != sessionValueLen {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) != 8+sha256.Size {
		return false
	}
	if !hmac.Equal(b[8:], s.mac(b[:8])) {
		return false
	}
	exp := int64(binary.BigEndian.Uint64(b[:8]))
	return now.Unix() < exp && exp <= now.Add(SessionLifetime+sessionSkew).Unix()
}

// tokenIs reports, in constant time, whether t is the token.
func (s *signIn) tokenIs(t string) bool {
	h := sha256.Sum256([]byte(t))
	return subtle.ConstantTimeCompare(h[:], s.token[:]) == 1
}

// asBearer returns a copy of r that carries the Authorization header of
// token t, for the Authenticator to answer for.
func asBearer(r *http.Request, t string) *http.Request {
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", t)
	return r2
}

// bySession reports whether r brings a live session cookie, and the
// Authenticator grants what the token grants to r.
func (a *admin) bySession(r *http.Request) bool {
	s := a.signIn
	if s == nil {
		return false
	}
	now := hook.Now(a.rm)
	cs := r.CookiesNamed(SessionCookie)
	for i := 0; i < len(cs) && i < maxSessionCookies; i++ {
		if s.valid(cs[i].Value, now) {
			return a.auth(asBearer(r, s.bearer))
		}
	}
	return false
}

// wantsPage reports whether r is a browser's request for a page: its
// Accept header lists text/html (as a browser's navigation does; the
// status page's script and API clients ask for JSON or anything).
func wantsPage(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	if len(accept) > 4096 {
		accept = accept[:4096]
	}
	return strings.Contains(strings.ToLower(accept), "text/html")
}

// serveSignIn serves GET and POST /signin and POST /signout.
func (a *admin) serveSignIn(w http.ResponseWriter, r *http.Request, path string) {
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	if path == "signout" {
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		if err := a.cop.Check(r); err != nil {
			writeError(w, http.StatusForbidden, "waitingroom: cross-origin request refused")
			return
		}
		http.SetCookie(w, a.sessionCookie(r, "", -1))
		a.redirect(w, "signin?out=1")
		return
	}
	switch {
	case get:
		msg := ""
		if r.URL.Query().Get("out") == "1" {
			msg = "Signed out."
		}
		a.signInForm(w, r, http.StatusOK, msg)
		return
	case r.Method != http.MethodPost:
		methodNotAllowed(w, "GET, HEAD, POST")
		return
	}
	if err := a.cop.Check(r); err != nil {
		writeError(w, http.StatusForbidden, "waitingroom: cross-origin request refused")
		return
	}
	now := hook.Now(a.rm)
	client := clientOf(r)
	if !a.signIn.failed.allow(client, now) {
		w.Header().Set("Retry-After", strconv.Itoa(int(failedSignInEvery/time.Second)))
		a.signInForm(w, r, http.StatusTooManyRequests, "Too many failed sign-ins: wait a minute and try again.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxSignInBody)
	if err := r.ParseForm(); err != nil {
		a.signInForm(w, r, http.StatusBadRequest, "The form could not be read: try again.")
		return
	}
	t := r.PostForm.Get("token")
	ok := a.signIn.tokenIs(t)
	if ok {
		ok = a.auth(asBearer(r, "Bearer "+t))
	}
	if !ok {
		a.signIn.failed.add(client, now)
		a.signInForm(w, r, http.StatusUnauthorized, "Wrong token.")
		return
	}
	a.signIn.failed.clear(client)
	exp := now.Add(SessionLifetime)
	http.SetCookie(w, a.sessionCookie(r, a.signIn.session(exp), int(SessionLifetime/time.Second)))
	a.redirect(w, "./")
}

// sessionCookie is the session cookie with value v and Max-Age maxAge
// (-1: delete it), for the admin handler r was sent to.
func (a *admin) sessionCookie(r *http.Request, v string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     SessionCookie,
		Value:    v,
		Path:     mountPoint(r),
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   r.TLS != nil || hook.CookieSecure(a.rm),
		SameSite: http.SameSiteStrictMode,
	}
}

// mountPoint is the path the admin handler is mounted at, as the client
// sees it, for a request to one of its resources at the top (such as
// /signin): the directory of the request's path.
func mountPoint(r *http.Request) string {
	p := r.URL.EscapedPath()
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil && u.Path != "" {
		p = u.EscapedPath() // before http.StripPrefix
	}
	i := strings.LastIndexByte(p, '/')
	if i < 0 || strings.ContainsAny(p[:i+1], "; \"") {
		return "/"
	}
	return p[:i+1]
}

// relBase is what the links of a page r is answered with start with to
// reach the admin handler's resources: "" when r's path ends with a slash,
// else the path's last segment and a slash (the mount point without its
// trailing slash, as http.StripPrefix may pass on).
func relBase(r *http.Request) string {
	if r.URL.Path != "" {
		return ""
	}
	p := r.URL.EscapedPath()
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
		p = u.EscapedPath()
	}
	p = strings.TrimSuffix(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 && i+1 < len(p) {
		return p[i+1:] + "/"
	}
	return ""
}

// redirect answers 303 See Other to loc, relative to the mount point.
func (a *admin) redirect(w http.ResponseWriter, loc string) {
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusSeeOther)
}

// clientOf is the address r's connection came from, without its port.
func clientOf(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// signInSource is the sign-in form's template.
//
//go:embed signin.html
var signInSource string

// signInPage is signInSource, parsed.
var signInPage = template.Must(template.New("signin").Parse(signInSource))

// signInData is what the sign-in form's template gets.
type signInData struct {
	Nonce   string
	Action  string
	Message string
}

// signInForm answers code with the sign-in form and message msg. It says
// nothing of the room.
func (a *admin) signInForm(w http.ResponseWriter, r *http.Request, code int, msg string) {
	var n [16]byte
	_, _ = rand.Read(n[:])
	d := signInData{Nonce: hex.EncodeToString(n[:]), Action: relBase(r) + "signin", Message: msg}
	var buf bytes.Buffer
	if err := signInPage.Execute(&buf, d); err != nil {
		writeError(w, http.StatusInternalServerError, "waitingroom: rendering the sign-in form failed")
		return
	}
	writePage(w, code, "default-src 'none'; style-src 'nonce-"+d.Nonce+
		"'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'", buf.Bytes())
}

// failedSignIns counts failed sign-ins per client address, a leaky
// bucket each: a failure adds one, one drains every failedSignInEvery,
// and at maxFailedSignIns a client's sign-ins are refused. It is safe for
// concurrent use.
type failedSignIns struct {
	mu sync.Mutex
	by map[string]failures
}

// failures is one client's count, as of at.
type failures struct {
	n  float64
	at time.Time
}

// level is f's count at now.
func (f failures) level(now time.Time) float64 {
	return max(0, f.n-float64(now.Sub(f.at))/float64(failedSignInEvery))
}

// allow reports whether client may try to sign in at now.
func (f *failedSignIns) allow(client string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.by[f.key(client)]
	return !ok || c.level(now) <= maxFailedSignIns-1
}

// add counts a failed sign-in of client at now.
func (f *failedSignIns) add(client string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.by[client]; !ok && len(f.by) >= maxFailingClients {
		for k, c := range f.by {
			if c.level(now) == 0 {
				delete(f.by, k)
			}
		}
	}
	k := f.key(client)
	f.by[k] = failures{n: f.by[k].level(now) + 1, at: now}
}

// clear forgets client's failures.
func (f *failedSignIns) clear(client string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.by, client)
}

// key is the key of client's count: its own, or once maxFailingClients
// others are counted, the one they share ("").
func (f *failedSignIns) key(client string) string {
	if _, ok := f.by[client]; ok || len(f.by) < maxFailingClients {
		return client
	}
	return ""
}

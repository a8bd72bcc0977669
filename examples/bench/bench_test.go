package bench

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/httprate"
	"github.com/gorilla/securecookie"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// body is what the application answers: 12 bytes.
var body = []byte("hello world\n")

// app is the application every case serves.
var app = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) })

// frozen is the rooms' clock: it never moves, so an admitted cookie is
// never due for re-issue and a waiting visitor is always early.
var frozen = time.Date(2026, 5, 27, 15, 54, 0, 0, time.UTC)

// key is the rooms' cookie key. Benchmarks only.
var key = []byte("bench key: 32 bytes or more, never use this one")

// newRoom returns a room on the frozen clock with the in-memory store and a
// first sync done (so it holds a grant), changed by mutate.
func newRoom(b *testing.B, mutate func(*waitingroom.Config)) *waitingroom.Room {
	b.Helper()
	cfg := waitingroom.Config{
		Name:              "bench",
		TotalActiveUsers:  10,
		NewUsersPerMinute: 10,
		Keys:              [][]byte{key},
		SyncInterval:      -1,
		Now:               func() time.Time { return frozen },
		Logger:            slog.New(slog.DiscardHandler),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	rm, err := waitingroom.New(cfg, memstore.New())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rm.Close() })
	if err := rm.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	return rm
}

// request returns a GET of / asking for accept ("" for a browser's
// default) and carrying cookie ("" for none).
func request(accept, cookie string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	if cookie != "" {
		r.Header.Set("Cookie", cookie)
	}
	return r
}

// visit makes a first request through h and returns the cookie it was
// given, as a Cookie header value, and whether the application answered.
func visit(b *testing.B, h http.Handler, accept string) (cookie string, served bool) {
	b.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, request(accept, ""))
	cs := w.Result().Cookies()
	if len(cs) != 1 {
		b.Fatalf("first request: got %d cookies, want 1", len(cs))
	}
	return cs[0].Name + "=" + cs[0].Value, w.Body.String() == string(body)
}

// session is what the securecookie cases keep in their cookie: four
// integers, like the room's cookie.
type session struct {
	Bucket, AcceptedAt, LastCheckIn, Refresh int64
}

const sessionCookie = "session"

// newSecureCookie returns a codec that authenticates (HMAC-SHA256) and
// encrypts (AES-256) with ser, as the room's cookie is authenticated and
// encrypted.
func newSecureCookie(ser securecookie.Serializer) *securecookie.SecureCookie {
	sc := securecookie.New(
		[]byte("bench hash key: 32 bytes or more"),
		[]byte("bench block key: 32 bytes long!!"),
	)
	return sc.SetSerializer(ser)
}

// withSecureCookie is a session middleware on gorilla/securecookie: it
// decodes the session cookie (a request without a valid one is refused),
// and, when reissue is set, encodes it again and sets it on the response,
// as session middlewares do on every request.
func withSecureCookie(sc *securecookie.SecureCookie, reissue bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(sessionCookie)
		var s session
		if err != nil || sc.Decode(sessionCookie, c.Value, &s) != nil {
			http.Error(w, "no session", http.StatusForbidden)
			return
		}
		if reissue {
			s.LastCheckIn = frozen.UnixMilli()
			v, err := sc.Encode(sessionCookie, s)
			if err != nil {
				http.Error(w, "session", http.StatusInternalServerError)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: v, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		}
		next.ServeHTTP(w, r)
	})
}

// secureCookieRequest returns a request carrying a session cookie of sc.
func secureCookieRequest(b *testing.B, sc *securecookie.SecureCookie) *http.Request {
	b.Helper()
	now := frozen.UnixMilli()
	v, err := sc.Encode(sessionCookie, session{Bucket: frozen.Unix() / 60, AcceptedAt: now, LastCheckIn: now, Refresh: 0})
	if err != nil {
		b.Fatal(err)
	}
	return request("", sessionCookie+"="+v)
}

// withRateLimit is go-chi/httprate limiting by client IP, with a limit no
// benchmark reaches.
func withRateLimit(next http.Handler) http.Handler {
	byIP := func(r *http.Request) (string, error) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		return httprate.CanonicalizeIP(host), err
	}
	return httprate.LimitBy(1<<40, time.Minute, byIP)(next)
}

// BenchmarkRequest measures one request through each case. The admitted
// cases (bare, room, securecookie-*, httprate) all reach the application;
// the others show what the room does for everyone else:
//
//   - h=bare: the application alone.
//   - h=room: a visitor with a valid admitted cookie (no store I/O, no
//     re-issue).
//   - h=securecookie-{json,gob}: a session cookie of four int64 fields,
//     decoded, encoded again and set, with either serializer.
//   - h=securecookie-{json,gob}-decode: the same cookie, only decoded (the
//     room's admitted path does not re-issue either).
//   - h=httprate: a per-IP rate limit that never trips.
//   - h=room-queued-{html,json}: a waiting visitor back before their
//     refresh interval: the waiting page, as HTML or JSON.
//   - h=room-new-{admitted,queued}: a first request, which gets a cookie
//     and is let in (Passthrough) or queued (QueueAll).
func BenchmarkRequest(b *testing.B) {
	type benchCase struct {
		name    string
		h       http.Handler
		r       *http.Request
		reaches bool // the request reaches the application
	}
	var cases []benchCase
	add := func(name string, h http.Handler, r *http.Request) {
		cases = append(cases, benchCase{name, h, r, true})
	}
	addQueued := func(name string, h http.Handler, r *http.Request) {
		cases = append(cases, benchCase{name, h, r, false})
	}

	add("bare", app, request("", ""))

	rm := newRoom(b, nil)
	h := rm.Handler(app)
	cookie, served := visit(b, h, "")
	if !served {
		b.Fatal("room: the first visitor was not let in")
	}
	add("room", h, request("", cookie))

	for _, s := range []struct {
		name string
		ser  securecookie.Serializer
	}{{"json", securecookie.JSONEncoder{}}, {"gob", securecookie.GobEncoder{}}} {
		sc := newSecureCookie(s.ser)
		add("securecookie-"+s.name, withSecureCookie(sc, true, app), secureCookieRequest(b, sc))
		add("securecookie-"+s.name+"-decode", withSecureCookie(sc, false, app), secureCookieRequest(b, sc))
	}

	add("httprate", withRateLimit(app), request("", ""))

	for _, q := range []struct{ name, accept string }{{"html", ""}, {"json", "application/json"}} {
		h := newRoom(b, func(c *waitingroom.Config) { c.QueueAll = true }).Handler(app)
		cookie, served := visit(b, h, q.accept)
		if served {
			b.Fatal("room-queued: the visitor was let in")
		}
		addQueued("room-queued-"+q.name, h, request(q.accept, cookie))
	}

	add("room-new-admitted", newRoom(b, func(c *waitingroom.Config) { c.QueueingMethod = waitingroom.Passthrough }).Handler(app), request("", ""))
	addQueued("room-new-queued", newRoom(b, func(c *waitingroom.Config) { c.QueueAll = true }).Handler(app), request("", ""))

	for _, c := range cases {
		// Every case must do what its name says before it is timed.
		w := httptest.NewRecorder()
		c.h.ServeHTTP(w, c.r)
		if got := w.Body.String() == string(body); got != c.reaches || w.Code != http.StatusOK {
			b.Fatalf("%s: status %d, application answered: %v, want %v", c.name, w.Code, got, c.reaches)
		}
		b.Run("h="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.h.ServeHTTP(httptest.NewRecorder(), c.r)
			}
		})
	}
}

package bench

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/httprate"
	"github.com/gorilla/securecookie"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// body is what the application answers: 12 bytes.
var body = []byte("hello world\n")

// app is the application every case serves.
var app = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) })

// key is the rooms' cookie key. Benchmarks only.
var key = []byte("bench key: 32 bytes or more, never use this one")

// visitors is how many visitors the admitted cases cycle through.
const visitors = 1000

// config is the rooms' configuration: the real clock, the in-memory store
// and, unless a case says otherwise, the background sync every second (the
// default), with room for the crowd.
func config() waitingroom.Config {
	return waitingroom.Config{
		Name: "bench",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  10 * visitors,
			NewUsersPerMinute: 10 * visitors,
		},
		Keys:   [][]byte{key},
		Logger: slog.New(slog.DiscardHandler),
	}
}

// newRoom returns a room of config changed by mutate, on st, with a first
// sync done (so it holds a grant).
func newRoom(b *testing.B, st store.Store, mutate func(*waitingroom.Config)) *waitingroom.Room {
	b.Helper()
	cfg := config()
	if mutate != nil {
		mutate(&cfg)
	}
	rm, err := waitingroom.New(cfg, st)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rm.Close() })
	if err := rm.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	return rm
}

// crowd is a set of visitors served in turn, each with their cookie, who
// keep the cookie a response sets, as browsers do. They share one request,
// whose Cookie header is the next visitor's each time, copied afresh as a
// server reads it from the connection: a server hands the middleware a
// request it has just read, in the processor's cache, whoever sent it. The
// copy is one allocation in every case, bare included.
type crowd struct {
	r       *http.Request
	header  []string // the request's Cookie header
	cookies []string // each visitor's cookie, "name=value"
	i       int      // the visitor of the latest request
	forget  bool     // visitors who never keep a cookie: always new
}

// newCrowd returns a crowd of n visitors without cookies, asking for
// accept ("" for a browser's default).
func newCrowd(accept string, n int) *crowd {
	c := &crowd{r: httptest.NewRequest(http.MethodGet, "http://example.com/", nil), header: []string{""}, cookies: make([]string, n), i: -1}
	if accept != "" {
		c.r.Header.Set("Accept", accept)
	}
	c.r.Header["Cookie"] = c.header
	return c
}

// next returns the request of the next visitor.
func (c *crowd) next() *http.Request {
	if c.i++; c.i == len(c.cookies) {
		c.i = 0
	}
	c.header[0] = strings.Clone(c.cookies[c.i])
	return c.r
}

// keep gives the visitor of the latest request the cookie that the
// response w set, if any.
func (c *crowd) keep(w *httptest.ResponseRecorder) {
	if sc := w.Header()["Set-Cookie"]; len(sc) > 0 && !c.forget {
		nv, _, _ := strings.Cut(sc[len(sc)-1], ";")
		c.cookies[c.i] = nv
	}
}

// serve sends the next visitor's request through h, keeping the cookie it
// sets, and reports whether the application answered.
func (c *crowd) serve(h http.Handler) bool {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, c.next())
	c.keep(w)
	return w.Code == http.StatusOK && w.Body.String() == string(body)
}

// clock is a clock moved by hand, for the room that lets the crowd in.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// admitted returns a crowd of visitors let into the room named in config
// (in st) by another instance of it, on a clock that ran over the minute
// before now: their check-ins are spread evenly over the minute after which
// a cookie is re-issued, as those of visitors who have been browsing for a
// while are. On the real clock, from the first request on, visitors/60 of
// them come due for re-issue every second.
func admitted(b *testing.B, st store.Store) *crowd {
	b.Helper()
	clk := &clock{t: time.Now().Add(-time.Minute)}
	rm := newRoom(b, st, func(c *waitingroom.Config) {
		c.Now, c.SyncInterval, c.QueueingMethod = clk.Now, -1, waitingroom.Passthrough
	})
	defer rm.Close()
	h := rm.Handler(app)
	c := newCrowd("", visitors)
	for range visitors {
		if !c.serve(h) {
			b.Fatal("a visitor was not let in")
		}
		clk.add(time.Minute / visitors)
	}
	if err := rm.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	return c
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
			s.LastCheckIn = time.Now().UnixMilli()
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

// secureCookieCrowd returns a crowd of visitors carrying a session cookie
// of sc each.
func secureCookieCrowd(b *testing.B, sc *securecookie.SecureCookie) *crowd {
	b.Helper()
	c := newCrowd("", visitors)
	now := time.Now()
	for i := range visitors {
		at := now.Add(-time.Duration(i) * time.Minute / visitors).UnixMilli()
		v, err := sc.Encode(sessionCookie, session{Bucket: at / 60_000, AcceptedAt: at, LastCheckIn: at})
		if err != nil {
			b.Fatal(err)
		}
		c.cookies[i] = sessionCookie + "=" + v
	}
	return c
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

// BenchmarkRequest measures one request through each case, on the real
// clock. The admitted cases (bare, room, securecookie-*, httprate) all reach
// the application and cycle through a crowd of visitors; the others show
// what the room does for everyone else:
//
//   - h=bare: the application alone.
//   - h=room: visitors with valid admitted cookies, the room syncing in
//     the background every second. Every cost of the admitted path is
//     paid in proportion: a sign of life of each visitor every second, the
//     re-issue of visitors/60 cookies a second (they were let in over the
//     minute before the run; the visitors keep the new cookie, which the
//     room opens at their next request), the turnover of the room's memory
//     of opened cookies every minute.
//   - h=securecookie-{json,gob}: a session cookie of four int64 fields,
//     decoded, encoded again and set, with either serializer.
//   - h=securecookie-{json,gob}-decode: the same cookie, only decoded.
//   - h=httprate: a per-IP rate limit that never trips.
//   - h=room-queued-{html,json}: a waiting visitor back before their
//     refresh interval: the waiting page, as HTML or JSON (a chance when
//     one comes due, every 20 seconds).
//   - h=room-new-{admitted,queued}: a first request, which gets a cookie
//     and is let in (Passthrough) or queued (QueueAll); no background sync,
//     so that the millions of visitors stay out of the shared state.
func BenchmarkRequest(b *testing.B) {
	type benchCase struct {
		name    string
		setup   func(b *testing.B) (http.Handler, *crowd)
		reaches bool // the request reaches the application
	}
	cases := []benchCase{
		// The same crowd in every admitted case: their Cookie headers are
		// as long as the room's.
		{"bare", func(b *testing.B) (http.Handler, *crowd) { return app, admitted(b, memstore.New()) }, true},
		{"room", func(b *testing.B) (http.Handler, *crowd) {
			st := memstore.New()
			c := admitted(b, st)
			return newRoom(b, st, nil).Handler(app), c
		}, true},
	}
	for _, s := range []struct {
		name string
		ser  securecookie.Serializer
	}{{"json", securecookie.JSONEncoder{}}, {"gob", securecookie.GobEncoder{}}} {
		for _, reissue := range []bool{true, false} {
			name := "securecookie-" + s.name
			if !reissue {
				name += "-decode"
			}
			cases = append(cases, benchCase{name, func(b *testing.B) (http.Handler, *crowd) {
				sc := newSecureCookie(s.ser)
				return withSecureCookie(sc, reissue, app), secureCookieCrowd(b, sc)
			}, true})
		}
	}
	cases = append(cases, benchCase{"httprate", func(b *testing.B) (http.Handler, *crowd) { return withRateLimit(app), admitted(b, memstore.New()) }, true})
	for _, q := range []struct{ name, accept string }{{"html", ""}, {"json", "application/json"}} {
		cases = append(cases, benchCase{"room-queued-" + q.name, func(b *testing.B) (http.Handler, *crowd) {
			h := newRoom(b, memstore.New(), func(c *waitingroom.Config) { c.QueueAll = true }).Handler(app)
			c := newCrowd(q.accept, 1)
			if c.serve(h) {
				b.Fatal("room-queued: the visitor was let in")
			}
			return h, c
		}, false})
	}
	fresh := func(mutate func(*waitingroom.Config)) func(b *testing.B) (http.Handler, *crowd) {
		return func(b *testing.B) (http.Handler, *crowd) {
			h := newRoom(b, memstore.New(), func(c *waitingroom.Config) { c.SyncInterval = -1; mutate(c) }).Handler(app)
			c := newCrowd("", 1)
			c.forget = true
			return h, c
		}
	}
	cases = append(cases,
		benchCase{"room-new-admitted", fresh(func(c *waitingroom.Config) { c.QueueingMethod = waitingroom.Passthrough }), true},
		benchCase{"room-new-queued", fresh(func(c *waitingroom.Config) { c.QueueAll = true }), false},
	)

	for _, tc := range cases {
		b.Run("h="+tc.name, func(b *testing.B) {
			h, c := tc.setup(b)
			// Every case must do what its name says before it is timed,
			// for each of its visitors (which also opens their cookies).
			for range c.cookies {
				if got := c.serve(h); got != tc.reaches {
					b.Fatalf("application answered: %v, want %v", got, tc.reaches)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, c.next())
				c.keep(w)
			}
		})
	}
}

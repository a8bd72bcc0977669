package waitingroom

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

var body12 = []byte("hello world\n")

func bareHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body12) })
}

// benchVisitors is how many admitted visitors the benchmarks of the
// admitted path cycle through.
const benchVisitors = 1000

// benchConfig is the configuration of the benchmarks' rooms: the real
// clock and the background sync (every second, the default), with room for
// the crowd.
func benchConfig() Config {
	return Config{
		Name: "bench",
		Settings: Settings{
			TotalActiveUsers:  10 * benchVisitors,
			NewUsersPerMinute: 10 * benchVisitors,
		},
		Keys:   [][]byte{testKey},
		Logger: slog.New(slog.DiscardHandler),
	}
}

// crowd is a set of visitors served in turn, each with their cookie, who
// keep the cookie a response sets, as browsers do. They share one request,
// whose Cookie header is the next visitor's each time, copied afresh as a
// server reads it from the connection: a server hands the room a request
// it has just read, in the processor's cache, whoever sent it. The copy is
// one allocation in every case, bare included, unless noCopy is set.
type crowd struct {
	r       *http.Request
	header  []string // the request's Cookie header
	cookies []string // each visitor's cookie, "name=value"
	i       int      // the visitor of the latest request
	noCopy  bool     // the Cookie header is the visitor's own string
}

func newCrowd() *crowd {
	c := &crowd{r: httptest.NewRequest(http.MethodGet, "http://example.com/", nil), header: []string{""}, i: -1}
	c.r.Header["Cookie"] = c.header
	return c
}

// next returns the request of the next visitor.
func (c *crowd) next() *http.Request {
	if c.i++; c.i == len(c.cookies) {
		c.i = 0
	}
	if c.header[0] = c.cookies[c.i]; !c.noCopy {
		c.header[0] = strings.Clone(c.header[0])
	}
	return c.r
}

// keep gives the visitor of the latest request the cookie that the
// response w set, if any.
func (c *crowd) keep(w *httptest.ResponseRecorder) {
	if sc := w.Header()["Set-Cookie"]; len(sc) > 0 {
		nv, _, _ := strings.Cut(sc[len(sc)-1], ";")
		c.cookies[c.i] = nv
	}
}

// admittedCrowd returns n visitors let into the room of cfg (in st) by
// another instance of it (same name, keys and store) whose clock ran over
// the re-issue interval just before now, one admission every interval/n,
// and that reported them in a sync. So their cookies' check-ins are spread
// evenly over the interval, as those of a crowd that has been browsing for
// a while are: on the real clock, from the first request on, n/interval of
// them come due for re-issue every second, and each op pays its share of
// that work.
func admittedCrowd(b *testing.B, cfg Config, st store.Store, n int) *crowd {
	b.Helper()
	reissue := min(time.Minute, cfg.SessionDuration/5)
	if cfg.SessionDuration == 0 {
		reissue = min(time.Minute, defaultSessionDuration/5)
	}
	clk := testclock.New(time.Now().Add(-reissue))
	cfg.Now, cfg.SyncInterval, cfg.QueueingMethod = clk.Now, -1, Passthrough
	rm, err := New(cfg, st)
	if err != nil {
		b.Fatal(err)
	}
	defer rm.Close()
	h := rm.Handler(bareHandler())
	c := newCrowd()
	for range n {
		c.cookies = append(c.cookies, "")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, c.next())
		if w.Body.String() != string(body12) {
			b.Fatalf("visitor %d was not let in: %d", c.i, w.Code)
		}
		c.keep(w)
		clk.Add(reissue / time.Duration(n))
	}
	if err := rm.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	return c
}

// admittedRoom returns a room on the real clock with its background sync
// running, and a crowd of benchVisitors it admitted, each served once
// already (their cookies opened, their sessions seen).
func admittedRoom(b *testing.B) (*Room, *crowd) {
	b.Helper()
	st := memstore.New()
	c := admittedCrowd(b, benchConfig(), st, benchVisitors)
	rm, err := New(benchConfig(), st)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rm.Close() })
	if err := rm.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	h := rm.Handler(bareHandler())
	for range c.cookies {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, c.next())
		if w.Body.String() != string(body12) {
			b.Fatalf("an admitted visitor was refused: %d", w.Code)
		}
		c.keep(w)
	}
	return rm, c
}

// serveCrowd serves the crowd's requests through h in turn, keeping the
// cookies it sets.
func serveCrowd(b *testing.B, h http.Handler, c *crowd) {
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, c.next())
		c.keep(w)
	}
}

// BenchmarkAdmitted measures the admitted path on the real clock: a crowd
// of benchVisitors admitted visitors, each request from the next of them,
// through the room's Handler (h=room) or its decision alone (h=check), next to the
// same requests to the bare handler (h=bare). The room syncs with the
// in-memory store every second in the background, as in production.
//
// The work the room does once a second or once a minute is paid in
// proportion to the requests, whatever -benchtime: each visitor's first
// request in a second is reported as a sign of life of their session
// (benchVisitors a second); a cookie is re-issued a minute after its
// check-in, the visitor keeps the new one and the room opens it at their
// next request, and since the crowd's check-ins are spread over the minute
// before the run, benchVisitors/60 cookies a second are from the first op
// on; the room's memory of opened cookies turns over at each new minute.
// At a few hundred thousand requests a second, each visitor sends hundreds
// a second, so these come to a few nanoseconds a request; what they cost a
// visitor who sends one request a second is in docs/performance.md.
func BenchmarkAdmitted(b *testing.B) {
	b.Run("h=bare", func(b *testing.B) {
		_, c := admittedRoom(b)
		serveCrowd(b, bareHandler(), c)
	})
	b.Run("h=room", func(b *testing.B) {
		rm, c := admittedRoom(b)
		serveCrowd(b, rm.Handler(bareHandler()), c)
	})
	b.Run("h=check", func(b *testing.B) {
		rm, c := admittedRoom(b)
		c.noCopy = true // no allocation but the room's: the cookie is read from memory
		b.ReportAllocs()
		for b.Loop() {
			d, _ := rm.checkRequest(c.next())
			if d.Outcome != outcomeAdmitted {
				b.Fatal(d.Outcome)
			}
			if d.cookie != "" {
				c.cookies[c.i] = rm.cookieName + "=" + d.cookie
			}
		}
	})
}

// BenchmarkAdmittedPaired serves the crowd of BenchmarkAdmitted through the
// room (its Handler, h=handler), or through a peer that only puts a value
// in the request's context, as most middleware that hands the
// application something does (h=withvalue), or through the decision alone
// (h=decision), and through
// the bare handler in turn, 64 requests to each at a time
// (the order alternating), in one run, and reports the time per request of
// each (bare-ns/req, room-ns/req) and their ratio (room/bare); ns/op is
// that of 128 requests. On a machine busy with other work, both then see
// the same interference, where separate runs see different moments of it.
// The collector's work falls on whichever is running, so the room's
// allocation slows the bare handler too: the ratio is, if anything, below
// that of separate runs.
func BenchmarkAdmittedPaired(b *testing.B) {
	for _, h := range []string{"handler", "withvalue", "decision"} {
		b.Run("h="+h, func(b *testing.B) {
			rm, c := admittedRoom(b)
			room := map[string]http.Handler{
				"handler":   rm.Handler(bareHandler()),
				"withvalue": withValue(bareHandler()),
				"decision":  &decisionOnly{rm, bareHandler()},
			}[h]
			servePaired(b, room, bareHandler(), c)
		})
	}
}

// decisionOnly decides and passes the request on as it came, whatever
// was decided, with the cookie it re-issued (h=decision of
// BenchmarkAdmittedPaired): the decision's cost alone.
type decisionOnly struct {
	rm   *Room
	next http.Handler
}

func (h *decisionOnly) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := visit{}
	_ = h.rm.check(r, &x)
	if x.d.cookie != "" {
		// The re-issued cookie, as Handler sets it: a crowd that never
		// took it would be re-issued one at every request once due.
		_ = h.rm.respond(w, r, x.d)
	}
	h.next.ServeHTTP(w, r)
}

// withValue is the peer of BenchmarkAdmittedPaired (h=withvalue): the
// usual middleware that hands the application a value in the request's
// context, and so copies the request, as Handler does, without deciding
// anything.
func withValue(next http.Handler) http.Handler {
	type key struct{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), key{}, 1)))
	})
}

// servePaired is BenchmarkAdmittedPaired's loop: the crowd's requests
// through room and bare in turn, chunk requests at a time.
func servePaired(b *testing.B, room, bare http.Handler, c *crowd) {
	const chunk = 64
	serve := func(h http.Handler) time.Duration {
		start := time.Now()
		for range chunk {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, c.next())
			c.keep(w)
		}
		return time.Since(start)
	}
	var tb, tr time.Duration
	odd := false
	b.ReportAllocs()
	for b.Loop() {
		if odd = !odd; odd {
			tb += serve(bare)
			tr += serve(room)
		} else {
			tr += serve(room)
			tb += serve(bare)
		}
	}
	n := float64(b.N * chunk)
	b.ReportMetric(float64(tb)/n, "bare-ns/req")
	b.ReportMetric(float64(tr)/n, "room-ns/req")
	b.ReportMetric(float64(tr)/float64(tb), "room/bare")
}

// BenchmarkAdmittedPace serves the crowd of BenchmarkAdmitted through the
// room (h=room) or the bare handler (h=bare) on a clock moved by hand:
// each request moves it by a step, so that every visitor sends a request
// every benchVisitors steps (every=1ms, 1s or 10s), and the room syncs once
// a second of that clock instead of in the background. The benchmarks on
// the real clock run at whatever pace the machine allows, hundreds of
// requests a second from each visitor; here, at a visitor's pace of one
// request a second, each request is its visitor's sign of life for that
// second and one in 60 brings a re-issued cookie. Nothing in it depends on
// the machine's clock, so instruction counts under callgrind are the same
// from run to run.
func BenchmarkAdmittedPace(b *testing.B) {
	for _, every := range []time.Duration{time.Millisecond, time.Second, 10 * time.Second} {
		for _, h := range []string{"bare", "room"} {
			b.Run(fmt.Sprintf("every=%v/h=%s", every, h), func(b *testing.B) {
				step := every / benchVisitors
				st := memstore.New()
				cfg := benchConfig()
				c := admittedCrowd(b, cfg, st, benchVisitors)
				var now atomic.Int64
				now.Store(time.Now().UnixNano())
				cfg.Now = func() time.Time { return time.Unix(0, now.Load()) }
				cfg.SyncInterval = -1
				rm, err := New(cfg, st)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = rm.Close() })
				room := rm.Handler(bareHandler())
				for range c.cookies {
					w := httptest.NewRecorder()
					room.ServeHTTP(w, c.next())
					c.keep(w)
				}
				handler := room
				if h == "bare" {
					handler = bareHandler()
				}
				perSecond := int(time.Second / step)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					servePaced(handler, c)
					now.Add(int64(step))
					if i++; i%perSecond == 0 {
						if err := rm.Sync(context.Background()); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// servePaced serves the crowd's next request in BenchmarkAdmittedPace: a
// function of its own, so that callgrind can count the requests apart from
// the syncs (--toggle-collect='*waitingroom.servePaced').
//
//go:noinline
func servePaced(h http.Handler, c *crowd) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, c.next())
	c.keep(w)
}

// benchRoom returns a room on the real clock (no background sync) and a
// visitor whose first request, asking for accept, got a cookie.
func benchRoom(b *testing.B, mutate func(*Config), accept string) (*Room, *crowd) {
	b.Helper()
	cfg := benchConfig()
	cfg.SyncInterval = -1
	if mutate != nil {
		mutate(&cfg)
	}
	rm, err := New(cfg, memstore.New())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rm.Close() })
	if err := rm.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	c := newCrowd()
	if accept != "" {
		c.r.Header.Set("Accept", accept)
	}
	c.cookies = []string{""}
	w := httptest.NewRecorder()
	rm.Handler(bareHandler()).ServeHTTP(w, c.next())
	c.keep(w)
	return rm, c
}

// BenchmarkWaiting measures a waiting visitor refreshing before their
// interval: the page again, no new chance. The visitor keeps the cookie of
// a chance that comes due (every RefreshInterval, on the real clock).
func BenchmarkWaiting(b *testing.B) {
	for _, tc := range []struct{ name, accept string }{{"html", ""}, {"json", "application/json"}} {
		b.Run(tc.name, func(b *testing.B) {
			rm, c := benchRoom(b, func(c *Config) { c.QueueAll = true }, tc.accept)
			serveCrowd(b, rm.Handler(bareHandler()), c)
		})
	}
}

// BenchmarkNewVisitor measures a first request: a cookie is issued, the
// visitor is admitted (room) or queued (full).
func BenchmarkNewVisitor(b *testing.B) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
	}{
		{"admitted", func(c *Config) { c.QueueingMethod = Passthrough }},
		{"queued", func(c *Config) { c.QueueAll = true }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rm, _ := benchRoom(b, tc.mutate, "")
			h := rm.Handler(bareHandler())
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), r)
			}
		})
	}
}

// BenchmarkSync measures one sync against the in-memory store with a queue
// of 60 buckets.
func BenchmarkSync(b *testing.B) {
	clk := newClock()
	tr := newTestRoomOn(b, clk, memstore.New(), func(c *Config) { c.QueueAll = true; c.QueueHold = 30 * time.Minute })
	for range 60 {
		for range 20 {
			tr.get(&visitor{}, "")
		}
		clk.Add(time.Minute)
		tr.sync()
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := tr.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

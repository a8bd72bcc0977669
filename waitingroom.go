package waitingroom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/template"
)

// ErrClosed is returned by Check, Sync and Update after Room.Close.
var ErrClosed = errors.New("waitingroom: room is closed")

// Room is a virtual waiting room. Create it with New; it is safe for
// concurrent use by any number of goroutines.
type Room struct {
	cfg        Config
	cookieName string
	sameSite   http.SameSite
	secure     bool
	codec      *codec
	verified   *verified // admitted cookies that opened lately
	tmpl       *template.Template
	store      store.Store
	id         string
	log        *slog.Logger
	configHash uint64
	session    int64 // SessionDuration in ms
	hold       int64 // QueueHold in ms
	waitWindow int64 // ms a waiting visitor counts after a check-in

	view      atomic.Pointer[view]
	history   *history // one sample per historyInterval of syncs, for the admin page
	pages     pageCache
	templates sync.Map // event template source → *template.Template

	// mu guards the grant and the pending counts. It is held for a few
	// map updates, never across I/O.
	mu      sync.Mutex
	grant   grant
	pending *delta
	// inflight counts, by grant entry, the admissions taken while a sync
	// is in flight; they are charged to the grant the sync brings. nil
	// when no sync is in flight.
	inflight map[int64]int64

	offset atomic.Int64 // ms to add to Config.Now to follow the shared clock

	// revoked holds the cookies of sessions this instance revoked, until
	// those sessions would have ended, so that a client that ignores the
	// cookie's removal is a new visitor when it sends it again, rather
	// than an admitted visitor the room no longer counts. revokedN is its
	// length, read without the lock on every admitted request.
	revokedMu sync.Mutex
	revoked   map[string]int64 // cookie value → Unix ms it stops mattering
	revokedN  atomic.Int64

	counters struct {
		admitted, queued, revoked, bypassed, syncs, syncErrors atomic.Uint64
		syncNanos                                              atomic.Int64
	}

	syncMu   sync.Mutex // serializes syncs
	epoch    uint64     // the state epoch of the latest sync; under syncMu
	mine     *delta     // this instance's counts over the last session; under syncMu
	seq      uint64     // the latest sync's sequence number; under syncMu
	unacked  []batch    // counts of syncs not known to have been applied; under syncMu
	outage   bool       // the latest sync failed; under syncMu
	healthy  atomic.Bool
	closed   atomic.Bool
	stop     chan struct{}
	loopDone chan struct{}
}

// New validates cfg and returns a Room keeping its shared state in st.
// It returns an error wrapping ErrInvalidConfig for a Config that cannot
// work, and never fails later for that reason. Unless cfg.SyncInterval is
// negative, New starts the background sync (the first one at once); call
// Close to stop it. New does no store I/O itself.
func New(cfg Config, st store.Store) (*Room, error) {
	if st == nil {
		return nil, invalid("store is nil")
	}
	c, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	c.Keys = append([][]byte(nil), c.Keys...)
	rm := &Room{
		cfg:        c,
		cookieName: c.CookieName + "_" + c.Name,
		sameSite:   c.sameSite(),
		secure:     c.secure(),
		store:      st,
		id:         randomID(),
		log:        c.Logger.With("room", c.Name),
		configHash: func() uint64 { s := c.settings(); return s.hash() }(),
		session:    c.SessionDuration.Milliseconds(),
		hold:       c.QueueHold.Milliseconds(),
		pending:    newDelta(),
		mine:       newDelta(),
		verified:   newVerified(max(1024, 2*int64(c.TotalActiveUsers))),
		history:    newHistory(),
		stop:       make(chan struct{}),
		loopDone:   make(chan struct{}),
	}
	maxRefresh := float64(c.RefreshInterval) * (1 + c.RefreshJitter)
	rm.waitWindow = 2 * time.Duration(maxRefresh).Milliseconds()
	if rm.codec, err = newCodec(c.Keys, rm.cookieName); err != nil {
		return nil, fmt.Errorf("waitingroom: cookie keys: %w", err)
	}
	if c.Template == "" {
		rm.tmpl = template.Default()
	} else if rm.tmpl, err = template.Parse(c.Template); err != nil {
		return nil, fmt.Errorf("waitingroom: %w: Template: %w", ErrInvalidConfig, err)
	}
	rm.view.Store(&view{settings: c.settings()})
	rm.healthy.Store(true)
	if c.SyncInterval > 0 {
		go rm.loop()
	} else {
		close(rm.loopDone)
	}
	return rm, nil
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Outcome is what a Decision lets a request do.
type Outcome int

const (
	// Admitted: the visitor has a slot; the request goes to the application.
	Admitted Outcome = iota + 1
	// Waiting: the visitor waits; the response is the waiting page.
	Waiting
	// Closed: the room rejects new visitors (QueueingMethod Reject); the
	// response is the closed page, which does not refresh.
	Closed
	// Bypassed: the room is suspended (or the store is down under
	// FailOpen); the request goes to the application uncounted.
	Bypassed
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case Admitted:
		return "admitted"
	case Waiting:
		return "waiting"
	case Closed:
		return "closed"
	case Bypassed:
		return "bypassed"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Ticket is what an admitted visitor holds.
type Ticket struct {
	// Bucket is the minute of the visitor's first request: their place in
	// the queue.
	Bucket time.Time
	// AcceptedAt is when the visitor was let in.
	AcceptedAt time.Time
}

// Decision is the room's verdict on one request, made by Check without
// writing anything. Pass it to Respond to write its effect.
type Decision struct {
	Outcome Outcome
	// Ticket is set when Outcome is Admitted.
	Ticket Ticket
	// Estimate is the visitor's wait estimate when Outcome is Waiting.
	Estimate Estimate
	// RefreshAfter is how long a waiting visitor must wait before the next
	// request that gets a chance.
	RefreshAfter time.Duration

	cookie string      // new cookie value to set; "" leaves the visitor's alone
	state  cookieState // the admitted visitor's cookie, for Revoke
	raw    string      // the cookie value the admitted visitor sent, for Revoke
	policy policy      // what governed the decision
	at     int64       // Unix ms the view behind the estimate was taken
	now    int64       // Unix ms of the decision
}

// Pass reports whether the request may go on to the application.
func (d Decision) Pass() bool { return d.Outcome == Admitted || d.Outcome == Bypassed }

type ticketKey struct{}

// ticketCtx carries a ticket inline: one allocation, where
// context.WithValue would take two (the context and the boxed ticket).
// Within Handler it also carries the writer that Revoke uses.
type ticketCtx struct {
	context.Context
	t  Ticket
	rw *revokeWriter
}

func (c *ticketCtx) Value(key any) any {
	if _, ok := key.(ticketKey); ok {
		return c
	}
	return c.Context.Value(key)
}

// Context returns parent carrying the decision's ticket when the visitor is
// admitted, for TicketFromContext; otherwise parent itself. Revoke does not
// work in such a context: use Handler, or the response header
// Waiting-Room-Command: revoke with Handler.
func (d Decision) Context(parent context.Context) context.Context {
	if d.Outcome != Admitted {
		return parent
	}
	return &ticketCtx{Context: parent, t: d.Ticket}
}

// TicketFromContext returns the ticket of the admitted visitor whose
// request ctx belongs to. ok is false outside Room.Handler or for requests
// that were not admitted (bypassed ones included).
func TicketFromContext(ctx context.Context) (Ticket, bool) {
	if c, ok := ctx.Value(ticketKey{}).(*ticketCtx); ok {
		return c.t, true
	}
	return Ticket{}, false
}

// Check decides what happens to r without writing a response. It does no
// store I/O: every decision is local, against the grant of the latest
// sync. A missing, malformed, tampered, foreign or expired cookie is
// ordinary input: the visitor is new. The only error is ErrClosed.
func (rm *Room) Check(r *http.Request) (Decision, error) {
	if rm.closed.Load() {
		return Decision{}, ErrClosed
	}
	v := rm.view.Load()
	if v.settings.Suspended {
		return Decision{Outcome: Bypassed, policy: policy{Settings: v.settings}}, nil
	}
	if rm.bypassed(r) {
		rm.counters.bypassed.Add(1)
		return Decision{Outcome: Bypassed, policy: policy{Settings: v.settings}}, nil
	}
	now := rm.now()
	pol := rm.policyAt(&v.settings, now)
	d := Decision{policy: pol, at: v.at, now: now}
	c, raw, ok := rm.readCookie(r, now)
	if ok && c.acceptedAt > 0 {
		if sessionAlive(&pol, c, now) {
			d.Outcome = Admitted
			d.Ticket = Ticket{Bucket: time.Unix(c.bucket*60, 0), AcceptedAt: time.UnixMilli(c.acceptedAt)}
			if now-c.lastCheckIn >= pol.reissue {
				rm.mu.Lock()
				rm.pending.active[activeKey(c.lastCheckIn)]--
				rm.pending.active[activeKey(now)]++
				rm.mu.Unlock()
				c.lastCheckIn = now
				d.cookie = rm.codec.encode(c)
			}
			d.state, d.raw = c, raw
			return d, nil
		}
		ok = false // the session is over: back of the queue
	}
	if rm.cfg.OnStoreError == FailOpen && !rm.healthy.Load() {
		d.Outcome = Bypassed
		return d, nil
	}
	if pol.QueueingMethod == Reject {
		d.Outcome = Closed
		return d, nil
	}
	fresh := !ok || now-c.lastCheckIn >= rm.hold
	if !fresh && now < c.lastCheckIn+c.refresh {
		// Too early: the same page, no new chance.
		d.Outcome = Waiting
		d.RefreshAfter = time.Duration(c.lastCheckIn+c.refresh-now) * time.Millisecond
		d.Estimate = rm.estimate(v, &pol, c.bucket, false)
		return d, nil
	}
	if fresh {
		c = cookieState{bucket: minuteOf(now)}
	}
	closed := pol.QueueAll || pol.prequeue

	rm.mu.Lock()
	rm.pending.attempts++
	admit := !closed && pol.QueueingMethod == Passthrough
	if !closed && !admit {
		var from int64
		if from, admit = rm.grant.take(pol.bucket(c.bucket), fresh); admit {
			if rm.inflight != nil {
				rm.inflight[from]++
			}
		}
	}
	if !fresh {
		if old := slotOf(c.lastCheckIn); slotCounted(old, now, rm.waitWindow) {
			rm.pending.waiting[cellKey{c.bucket, old}]--
		}
	}
	if admit {
		rm.pending.active[activeKey(now)]++
		rm.pending.admitted[minuteOf(now)]++
	} else {
		rm.pending.waiting[cellKey{c.bucket, slotOf(now)}]++
	}
	rm.mu.Unlock()

	c.lastCheckIn = now
	if admit {
		rm.counters.admitted.Add(1)
		c.acceptedAt, c.refresh = now, 0
		d.Outcome = Admitted
		d.Ticket = Ticket{Bucket: time.Unix(c.bucket*60, 0), AcceptedAt: time.UnixMilli(now)}
		d.state = c
	} else {
		if fresh {
			rm.counters.queued.Add(1)
		}
		c.refresh = rm.jitteredRefresh()
		d.Outcome = Waiting
		d.RefreshAfter = time.Duration(c.refresh) * time.Millisecond
		d.Estimate = rm.estimate(v, &pol, c.bucket, fresh)
	}
	d.cookie = rm.codec.encode(c)
	return d, nil
}

// readCookie returns the state in r's cookie and the cookie's value; ok is
// false when the visitor is new.
func (rm *Room) readCookie(r *http.Request, now int64) (c cookieState, raw string, ok bool) {
	raw, ok = cookieValue(r, rm.cookieName)
	if !ok {
		return cookieState{}, "", false
	}
	c, ok = rm.verified.get(raw)
	if !ok {
		var err error
		if c, err = rm.codec.decode(raw); err != nil {
			return cookieState{}, "", false
		}
		if c.acceptedAt > 0 {
			rm.verified.put(raw, c, minuteOf(now))
		}
	}
	// Times from further ahead than any instance's clock may run are not
	// believed: the visitor is new rather than frozen or let in.
	if lim := now + maxClockLead; c.lastCheckIn > lim || c.acceptedAt > lim || c.bucket*60_000 > lim {
		return cookieState{}, "", false
	}
	if c.acceptedAt > 0 && rm.revokedN.Load() > 0 && rm.isRevoked(raw) {
		return cookieState{}, "", false
	}
	return c, raw, true
}

func sessionAlive(p *policy, c cookieState, now int64) bool {
	if now-c.lastCheckIn >= p.session {
		return false
	}
	return p.renew || now-c.acceptedAt < p.session
}

// jitteredRefresh returns a refresh interval in ms, varied at random by up
// to RefreshJitter either way.
// jitteredRefresh draws a waiting visitor's next refresh interval, in ms:
// RefreshInterval varied by up to RefreshJitter, in whole seconds. Whole
// seconds because that is what the Refresh header and
// refreshIntervalSeconds can say: a browser that obeys them comes back
// the moment it is eligible, where an interval of 20.3 s, announced as
// 21, would make every polite visitor 0.5 s late on average, a head start
// for clients that poll every second. The rounding is random (20.3 s is
// 21 s three times in ten), so the mean stays RefreshInterval and short
// intervals keep their jitter.
func (rm *Room) jitteredRefresh() int64 {
	f := 1 + rm.cfg.RefreshJitter*(2*rm.cfg.Random()-1)
	x := rm.cfg.RefreshInterval.Seconds() * f
	secs := math.Floor(x)
	if rm.cfg.Random() < x-secs {
		secs++
	}
	return int64(max(secs, 1)) * 1000
}

// estimate is the wait of a visitor of bucket b as of view v under policy
// p; a fresh visitor is behind everyone already waiting.
func (rm *Room) estimate(v *view, p *policy, b int64, fresh bool) Estimate {
	if p.QueueAll || p.prequeue || p.QueueingMethod == Reject {
		return Estimate{}
	}
	b = p.bucket(b)
	if p.QueueingMethod == Random {
		return randomEstimate(v.perMinute, float64(v.waiting))
	}
	// FIFO: everyone in older buckets is ahead, and on average half of the
	// visitor's own bucket.
	ahead := v.waiting
	for _, bc := range v.buckets {
		if fresh {
			break
		}
		if bc.bucket >= b {
			ahead = bc.before
			if bc.bucket == b {
				ahead += bc.waiting / 2
			}
			break
		}
	}
	return fifoEstimate(float64(ahead), v.perMinute)
}

// Handler returns the middleware: admitted and bypassed requests go to
// next, with the ticket in their context (TicketFromContext); everyone else
// gets the waiting page, as HTML or, for clients that ask for JSON only,
// as JSON. The method value is the middleware: chi's r.Use(room.Handler)
// works as it is.
//
// The application ends an admitted visitor's session, freeing their slot
// at once, with the response header "Waiting-Room-Command: revoke" (which
// Handler removes before the response leaves) or by calling Revoke with the
// request's context, in both cases before the response is written.
func (rm *Room) Handler(next http.Handler) http.Handler {
	return &handler{rm: rm, next: next}
}

// handler is the middleware of Handler. Its ServeHTTP is a method rather
// than a closure so that it is compiled here, where the request copy of
// WithContext is known to stay on the stack, and not inlined into callers.
type handler struct {
	rm   *Room
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rm := h.rm
	d, err := rm.Check(r)
	if err != nil {
		rm.Error(w, r, err)
		return
	}
	if !rm.Respond(w, r, d) {
		return
	}
	if d.Outcome != Admitted {
		h.next.ServeHTTP(w, r)
		return
	}
	// One allocation for the request carrying the ticket, its context and
	// the writer that watches for a revoke. WithContext is inlined, so its
	// own copy of r stays on the stack.
	a := &admittedRequest{
		ctx: ticketCtx{Context: r.Context(), t: d.Ticket},
		rw:  revokeWriter{ResponseWriter: w, rm: rm, state: d.state, raw: d.raw},
	}
	a.ctx.rw = &a.rw
	a.req = *r.WithContext(&a.ctx)
	h.next.ServeHTTP(&a.rw, &a.req)
	a.rw.commit()
}

type admittedRequest struct {
	req http.Request
	ctx ticketCtx
	rw  revokeWriter
}

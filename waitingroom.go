package waitingroom

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"slices"
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
	lateness   int64 // ms a waiting visitor may be late and keep their pace

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

	// known is what this instance knows of sessions beyond the latest
	// sync: those it admitted, saw or revoked, by visitor ID, kept at
	// least as long as the state keeps them (for a rebuild after a loss).
	// Under mu.
	known generations[store.Session]
	// chances remembers, by visitor ID, the latest chance this instance
	// gave each waiting visitor, for at least one waiting window. Under mu.
	chances generations[chance]

	// revokedIDs holds the IDs of revoked sessions (this instance's and
	// those of the latest sync) while their records are kept, so that a
	// copy of a revoked cookie is a new visitor wherever it is sent.
	// revokedN is its length, read without a lock on every admitted
	// request.
	revokedIDs sync.Map // uint64 → Unix ms it stops mattering
	revokedN   atomic.Int64

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
		id:         instanceID(),
		log:        c.Logger.With("room", c.Name),
		configHash: func() uint64 { s := c.settings(); return s.hash() }(),
		session:    c.SessionDuration.Milliseconds(),
		hold:       c.QueueHold.Milliseconds(),
		pending:    newDelta(),
		mine:       newDelta(),
		known:      newGenerations[store.Session](),
		chances:    newGenerations[chance](),
		verified:   newVerified(max(1024, 2*int64(c.TotalActiveUsers))),
		history:    newHistory(),
		stop:       make(chan struct{}),
		loopDone:   make(chan struct{}),
	}
	maxRefresh := float64(c.RefreshInterval) * (1 + c.RefreshJitter)
	rm.waitWindow = 2 * time.Duration(maxRefresh).Milliseconds()
	rm.lateness = c.RefreshInterval.Milliseconds() / 2
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
	// ID identifies the visitor: random, drawn at their first request and
	// kept from the queue into the session. Every holder of a copy of the
	// visitor's cookie has the same ID, and is counted as this one
	// visitor; a visitor back after their session ended has a new one.
	ID uint64
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
	// Reject closes the site: nobody reaches the application, admitted
	// visitors included. With QueueAll or a pre-queue as well, visitors
	// wait on a page that refreshes (and new ones take their places), so
	// that they are there when the room opens; otherwise the page is the
	// closed one, which does not refresh.
	shut := pol.QueueingMethod == Reject
	closed := pol.QueueAll || pol.prequeue
	c, e, ok := rm.readCookie(r, &pol, now)
	if ok && c.acceptedAt > 0 {
		if rm.sessionAlive(v, &pol, c, now) {
			if shut {
				rm.shutOut(&d, v, &pol, c, closed)
				return d, nil
			}
			rm.admit(&d, v, c, e, &pol, now)
			return d, nil
		}
		// The session is over: back of the queue (below, not held).
	}
	if rm.cfg.OnStoreError == FailOpen && !rm.healthy.Load() {
		d.Outcome = Bypassed
		return d, nil
	}
	if shut && !closed {
		d.Outcome = Closed
		return d, nil
	}
	held := ok && c.acceptedAt == 0 && now-c.lastCheckIn < rm.hold
	if held && now < c.lastCheckIn+c.refresh {
		// Too early: the same page, no new chance.
		rm.tooEarly(&d, v, &pol, c, c.lastCheckIn+c.refresh)
		return d, nil
	}

	rm.mu.Lock()
	if ok && c.acceptedAt == 0 {
		// One place, one admission: a place that became a session is
		// that session for every holder of a copy of its cookie (lapsed
		// or not, while the session lives), and a place whose session
		// ended or was revoked is spent.
		if x, found := rm.lookupLocked(v, c.id); found {
			if recordAlive(&x, &pol, now) {
				rm.join(&d, v, &pol, c, x)
				return d, nil
			}
			held = false
		}
	}
	fresh := !held
	if fresh && ok {
		// A cookie whose place lapsed or was spent, or whose session
		// ended, brings a new place: the same one for every copy of it
		// (its successor identity), so that resending it is one
		// visitor, not a new one at every request.
		id := successor(c.id, c.lastCheckIn)
		if x, found := rm.lookupLocked(v, id); found {
			if recordAlive(&x, &pol, now) {
				c.id = id
				rm.join(&d, v, &pol, c, x)
				return d, nil
			}
			// The successor's place is spent too: a new visitor like
			// one without a cookie (not remembered).
			id, ok = rm.newID(), false
		}
		c = cookieState{id: id, bucket: minuteOf(now)}
		if ch, seen := rm.chances.get(id); seen {
			c.bucket = ch.bucket // a place held by an earlier copy
			fresh = false
		}
	} else if fresh {
		c = cookieState{id: rm.newID(), bucket: minuteOf(now)}
	}
	var (
		ch  chance
		due int64 // when the chance now taken was due; 0 for a new place
	)
	if !fresh {
		// One chance per refresh interval, whichever copy of the cookie
		// asks: a copy sent again is as early as the latest one.
		var seen bool
		switch ch, seen = rm.chances.get(c.id); {
		case seen && now < ch.next:
			rm.mu.Unlock()
			rm.tooEarly(&d, v, &pol, c, ch.next)
			return d, nil
		case seen:
			due = ch.next
			if slotOf(c.lastCheckIn) > ch.slot {
				// The visitor had a chance elsewhere since this
				// instance's (another instance's cookie is newer):
				// their count is where that chance left it.
				ch.bucket, ch.slot = c.bucket, slotOf(c.lastCheckIn)
				due = max(due, c.lastCheckIn+c.refresh)
			}
		default:
			ch = chance{bucket: c.bucket, slot: slotOf(c.lastCheckIn)}
			due = c.lastCheckIn + c.refresh
		}
	}
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
	if !fresh && slotCounted(ch.slot, now, rm.waitWindow) {
		// The visitor is counted where its latest chance left it.
		rm.pending.waiting[cellKey{ch.bucket, ch.slot}]--
	}
	if admit {
		x := store.Session{ID: c.id, Admitted: floorDiv(now, 1000), Seen: floorDiv(now, 1000), End: sessionEnd(&pol, now)}
		rm.admittedLocked(v, x)
		rm.chances.del(c.id)
	} else {
		// The next chance is due an interval after this one was due, not
		// after the request came: a visitor a little late (the page's
		// whole seconds, the network) takes as many chances as one
		// polling the moment it is due, and gains nothing by polling.
		base := now
		if due > 0 && now-due <= rm.lateness {
			base = due
		}
		next := max(base+rm.jitteredRefresh(), now+1000)
		c.refresh = next - now
		rm.pending.waiting[cellKey{c.bucket, slotOf(now)}]++
		if ok {
			// A new visitor's copies (if any) are held back by their own
			// cookie until its first chance is due, so only a visitor who
			// came with a cookie that brought a place is remembered: a
			// flood of requests without one costs no memory.
			rm.chances.set(c.id, chance{next: next, bucket: c.bucket, slot: slotOf(now)})
		}
	}
	rm.mu.Unlock()

	c.lastCheckIn = now
	if admit {
		rm.counters.admitted.Add(1)
		c.acceptedAt, c.refresh = now, 0
		d.Outcome = Admitted
		d.Ticket = c.ticket()
		d.state = c
	} else {
		if fresh {
			rm.counters.queued.Add(1)
		}
		d.Outcome = Waiting
		d.RefreshAfter = time.Duration(c.refresh) * time.Millisecond
		d.Estimate = rm.estimate(v, &pol, c.bucket, fresh)
	}
	d.cookie = rm.encodeCookie(v, c)
	return d, nil
}

// join lets the holder of a copy of a waiting cookie into the session its
// place became (recorded as x): the same visitor, no new admission. The
// request is a sign of life of the session. rm.mu is held, and released.
func (rm *Room) join(d *Decision, v *view, p *policy, c cookieState, x store.Session) {
	if p.QueueingMethod == Reject {
		rm.mu.Unlock()
		rm.tooEarly(d, v, p, c, d.now+rm.cfg.RefreshInterval.Milliseconds())
		return
	}
	t := store.Session{ID: c.id, Admitted: x.Admitted, Seen: floorDiv(d.now, 1000)}
	rm.joinedLocked(v, t)
	rm.mu.Unlock()
	c.acceptedAt, c.lastCheckIn, c.refresh = x.Admitted*1000, d.now, 0
	d.Outcome = Admitted
	d.Ticket = c.ticket()
	d.state = c
	d.cookie = rm.encodeCookie(v, c)
}

// successor is the identity of the new place that cookie (id, lastCheckIn)
// brings once its own place lapsed or its session ended: a mix of the two,
// the same for every copy of the cookie.
func successor(id uint64, lastCheckIn int64) uint64 {
	x := id ^ uint64(lastCheckIn)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	if x >= store.MinLegacyID {
		x ^= 1 << 63 // never a legacy record's
	}
	return max(x, 1)
}

// chance is what an instance remembers of a waiting visitor's latest
// chance: when the next one is due, and where the visitor is counted.
type chance struct {
	next         int64 // Unix ms
	bucket, slot int64
}

// admit lets in a visitor whose session is alive: it reports the request
// as a sign of life of the session (at most once a second for each
// cookie value) and re-issues the cookie when it is due.
func (rm *Room) admit(d *Decision, v *view, c cookieState, e *verifiedEntry, p *policy, now int64) {
	d.Outcome = Admitted
	sec := floorDiv(now, 1000)
	if e == nil || e.touched.Load() != sec {
		if e != nil {
			e.touched.Store(sec)
		}
		x := store.Session{ID: c.id, Admitted: floorDiv(c.acceptedAt, 1000), Seen: sec, End: sessionEnd(p, c.acceptedAt)}
		rm.mu.Lock()
		rm.seenLocked(v, x, &c)
		rm.mu.Unlock()
	}
	if now-c.lastCheckIn >= p.reissue {
		rm.reissued(v, c.lastCheckIn, now)
		c.lastCheckIn = now
		d.cookie = rm.encodeCookie(v, c)
	}
	d.Ticket = c.ticket()
	d.state = c
}

// shutOut answers an admitted visitor while the room rejects everyone:
// the closed page, or the waiting page with QueueAll or a pre-queue. The
// visitor's cookie is left alone.
func (rm *Room) shutOut(d *Decision, v *view, p *policy, c cookieState, waiting bool) {
	if !waiting {
		d.Outcome = Closed
		return
	}
	rm.tooEarly(d, v, p, c, d.now+rm.cfg.RefreshInterval.Milliseconds())
}

// tooEarly answers a waiting visitor who gets no new chance before next
// (Unix ms): the same page, the cookie left alone.
func (rm *Room) tooEarly(d *Decision, v *view, p *policy, c cookieState, next int64) {
	d.Outcome = Waiting
	d.RefreshAfter = time.Duration(max(next-d.now, 1000)) * time.Millisecond
	d.Estimate = rm.estimate(v, p, c.bucket, false)
}

// ticket is the Ticket of an admitted cookie.
func (c *cookieState) ticket() Ticket {
	return Ticket{ID: c.id, Bucket: time.Unix(c.bucket*60, 0), AcceptedAt: time.UnixMilli(c.acceptedAt)}
}

// newID draws a visitor identity: random, never 0 nor a legacy record's.
func (rm *Room) newID() uint64 {
	for {
		if id := mrand.Uint64(); id != 0 && id < store.MinLegacyID {
			return id
		}
	}
}

// sessionEnd is the Unix second at which a session admitted at acceptedAt
// (Unix ms) ends whatever the visitor does: 0 with session renewal.
func sessionEnd(p *policy, acceptedAt int64) int64 {
	if p.renew {
		return 0
	}
	return -floorDiv(-(acceptedAt + p.session), 1000) // rounded up
}

// noteLocked merges a report into what this instance knows of the
// sessions. rm.mu must be held.
func (rm *Room) noteLocked(x store.Session) {
	if o, ok := rm.known.get(x.ID); ok {
		mergeSession(&o, x)
		x = o
	}
	rm.known.set(x.ID, x)
}

// lookupLocked returns what is known of the session of visitor id: the
// record of the latest sync merged with this instance's reports since.
// rm.mu must be held.
func (rm *Room) lookupLocked(v *view, id uint64) (store.Session, bool) {
	x, found := v.session(id)
	if k, ok := rm.known.get(id); ok {
		if !found {
			x = k
		} else {
			mergeSession(&x, k)
		}
		found = true
	}
	return x, found
}

// session returns the record of visitor id as of the view's sync.
func (v *view) session(id uint64) (store.Session, bool) {
	i, ok := slices.BinarySearchFunc(v.sessions, id, func(x store.Session, id uint64) int { return cmp.Compare(x.ID, id) })
	if !ok {
		return store.Session{}, false
	}
	return v.sessions[i], true
}

// recordAlive reports whether the session recorded as x is alive at now
// (Unix ms) under policy p: the visitor was seen within the session
// (to the second), and it was neither revoked nor capped.
func recordAlive(x *store.Session, p *policy, now int64) bool {
	if x.Revoked || (x.End != 0 && now >= x.End*1000) {
		return false
	}
	if !p.renew && now-x.Admitted*1000 >= p.session {
		return false
	}
	return now < (x.Seen+1)*1000+p.session
}

// readCookie returns the state in the best of r's cookies of the room's
// name, and its verified entry when it has one; ok is false when the
// visitor is new. Best is an admitted cookie whose session is alive, then
// a waiting one whose place is held, the oldest place first: a stale or
// foreign cookie that a sibling domain set under the same name cannot
// hide the visitor's own.
func (rm *Room) readCookie(r *http.Request, p *policy, now int64) (best cookieState, be *verifiedEntry, ok bool) {
	bestRank := 0
	for raw := range cookieValues(r, rm.cookieName, maxSameName) {
		c, e, valid := rm.openCookie(raw, now)
		if !valid {
			continue
		}
		rank := 1
		switch {
		case c.acceptedAt > 0 && (p.renew || now-c.acceptedAt < p.session) && now-c.lastCheckIn < p.session:
			rank = 3
		case c.acceptedAt == 0 && now-c.lastCheckIn < rm.hold:
			rank = 2
		}
		if rank > bestRank || (rank == bestRank && rank == 2 && c.bucket < best.bucket) {
			best, be, bestRank = c, e, rank
		}
	}
	return best, be, bestRank > 0
}

// openCookie opens one cookie value; valid is false for anything that is
// not a cookie of this room, or carries times from further ahead than any
// instance's clock may run (the visitor is new rather than frozen or let
// in).
func (rm *Room) openCookie(raw string, now int64) (c cookieState, e *verifiedEntry, valid bool) {
	if e, valid = rm.verified.get(raw); valid {
		c = e.state
	} else {
		var err error
		if c, err = rm.codec.decode(raw); err != nil {
			return cookieState{}, nil, false
		}
		if c.acceptedAt > 0 {
			e = rm.verified.put(raw, c, minuteOf(now))
		}
	}
	if lim := now + maxClockLead; c.lastCheckIn > lim || c.acceptedAt > lim || c.bucket*60_000 > lim {
		return cookieState{}, nil, false
	}
	return c, e, true
}

// sessionAlive reports whether the admitted visitor of cookie c may pass
// at now: not revoked, not capped, and seen within the session. The
// cookie's check-in is renewed only now and then, so when it is older
// than the session the latest request of any holder of the visitor's
// cookies decides, as known from the shared state and this instance.
func (rm *Room) sessionAlive(v *view, p *policy, c cookieState, now int64) bool {
	if rm.revokedN.Load() > 0 {
		if _, ok := rm.revokedIDs.Load(c.id); ok {
			return false
		}
	}
	if !p.renew && now-c.acceptedAt >= p.session {
		return false
	}
	if now-c.lastCheckIn < p.session {
		return true
	}
	rm.mu.Lock()
	x, found := rm.lookupLocked(v, c.id)
	rm.mu.Unlock()
	return found && recordAlive(&x, p, now)
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
		// Bypassed: the command header is the room's, never the
		// client's, whatever the application sends.
		rw := &revokeWriter{ResponseWriter: w, rm: rm, bypassed: true}
		h.next.ServeHTTP(rw, r)
		rw.commit()
		return
	}
	// One allocation for the request carrying the ticket, its context and
	// the writer that watches for a revoke. WithContext is inlined, so its
	// own copy of r stays on the stack.
	a := &admittedRequest{
		ctx: ticketCtx{Context: r.Context(), t: d.Ticket},
		rw:  revokeWriter{ResponseWriter: w, rm: rm, state: d.state},
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

package waitingroom

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/template"
)

// ErrClosed is returned by Sync, Update and Ready after Room.Close, and
// given to Config.ErrorHandler for the requests Handler gets then.
var ErrClosed = errors.New("waitingroom: room is closed")

// Room is a virtual waiting room. Create it with New; it is safe for
// concurrent use by any number of goroutines.
type Room struct {
	cfg Config
	// sysClock is set when Config.Now was left nil: the room then reads
	// the wall clock through share.WallMillis, the same time as time.Now at
	// half its cost on linux/amd64.
	sysClock   bool
	cookieName string
	codec      *codec
	puzzles    *challenge.Puzzles // the proof of work's
	verified   *verified          // admitted cookies that opened lately
	tmpl       *template.Template
	store      store.Store
	id         string
	log        *slog.Logger
	configHash uint64
	hold       int64 // QueueHold in ms
	waitWindow int64 // ms a waiting visitor counts after a check-in
	lateness   int64 // ms a waiting visitor may be late and keep their pace

	// syncer syncs the instance with the shared state (internal/share);
	// local is its request path's share: the grant, the pending reports
	// and the sessions known, under local's lock.
	syncer    *share.Syncer[Settings]
	local     *share.Local
	history   *history // one sample per historyInterval of syncs, for the admin page
	pages     pageCache
	templates sync.Map     // template source → *template.Template
	ntemplate atomic.Int64 // entries in templates

	// policy is the policy in force lately, for the view it was worked
	// out for (policyOf).
	policy atomic.Pointer[policySpan]
	// cookieAttrs is what follows the value in the header that sets the
	// cookie (setCookieAttrs).
	cookieAttrs string
	// scriptCookieAttrs are those of the cookies the page's scripts write
	// (template.Data.CookieAttributes): cookieAttrs but HttpOnly, which a
	// script cannot set, so that the challenge's answer comes back
	// wherever the visitor cookie does (SameSite=None, Secure and
	// Partitioned inside another site's iframe).
	scriptCookieAttrs string

	// chances remembers, by visitor ID, the latest chance this instance
	// gave each waiting visitor, for at least one waiting window. Under
	// local's lock.
	chances share.Memory[chance]
	carved  [2]int // the limits the latest sync carved the grant under; under local's lock

	// revokedIDs holds the IDs of revoked sessions (this instance's and
	// those of the latest sync) while their records are kept, so that a
	// copy of a revoked cookie is a new visitor wherever it is sent, from
	// the revoke on (at the end of its hold under passes: revokedFrom).
	// revokedN is its length, read without a lock on every admitted request.
	revokedIDs sync.Map // uint64 → revokedSpan
	revokedN   atomic.Int64
	// passes is the longest, in ms, that the passes of a handler in front
	// of the room last (expectPasses); 0: none are given.
	passes atomic.Int64

	// asking holds the places whose chance waits for the hosted
	// challenge's provider (verdictLocked), nil until one. Under local's lock.
	asking map[uint64]struct{}

	counters struct {
		admitted, queued, revoked, bypassed            atomic.Uint64
		chalIssued, chalPassed, chalFailed, chalParked atomic.Uint64
		chalUnverified, chalDeferred                   atomic.Uint64
	}
	closed atomic.Bool
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
		sysClock:   cfg.Now == nil,
		cookieName: c.Cookie.Name + "_" + c.Name,
		store:      st,
		id:         cfg.idSource()(),
		log:        c.Logger.With("room", c.Name),
		configHash: func() uint64 { s := c.settings(); return s.hash() }(),
		hold:       c.QueueHold.Milliseconds(),
		chances:    share.NewMemory[chance](),
		verified:   newVerified(max(1024, 2*int64(c.TotalActiveUsers))),
		history:    &history{ring: make([]Sample, int(historyWindow/historyInterval)+1)},
	}
	rm.cookieAttrs = rm.setCookieAttrs()
	rm.scriptCookieAttrs = strings.Replace(rm.cookieAttrs, "; HttpOnly", "", 1)
	maxRefresh := float64(c.RefreshInterval) * (1 + c.RefreshJitter)
	rm.waitWindow = 2 * time.Duration(maxRefresh).Milliseconds()
	rm.lateness = c.RefreshInterval.Milliseconds() / 2
	if rm.codec, err = newCodec(c.Keys, rm.cookieName); err != nil {
		return nil, fmt.Errorf("waitingroom: cookie keys: %w", err)
	}
	if rm.puzzles, err = challenge.NewPuzzles(c.Keys, c.Name); err != nil {
		return nil, fmt.Errorf("waitingroom: challenge keys: %w", err)
	}
	if c.Template == "" {
		rm.tmpl = template.Default()
	} else if rm.tmpl, err = template.Parse(c.Template); err != nil {
		return nil, fmt.Errorf("waitingroom: %w: Template: %w", ErrInvalidConfig, err)
	} else {
		rm.templates.Store(c.Template, rm.tmpl)
		rm.ntemplate.Store(1)
	}
	rm.syncer = share.New(share.Config{
		Name:         c.Name,
		ID:           rm.id,
		Store:        st,
		Log:          rm.log,
		Clock:        rm.localNow,
		SyncInterval: c.SyncInterval,
		WaitWindow:   rm.waitWindow,
		FleetMin:     c.fleetMin,
		OutageEffect: policyEffect(c.OnStoreError),
		Closed:       ErrClosed,
		Seed:         c.seeds,
	}, c.settings(), share.Host[Settings]{Settle: rm.settle, Installed: rm.installed})
	rm.local = rm.syncer.Local()
	rm.syncer.Start()
	return rm, nil
}

// Name returns the room's name, Config.Name. It is safe for concurrent use.
func (rm *Room) Name() string { return rm.cfg.Name }

// idSource returns what draws the instance's ID: newID if set, else
// randomID.
func (c *Config) idSource() func() string {
	if c.newID != nil {
		return c.newID
	}
	return randomID
}

// randomID draws an instance's ID. A variable for tests that need the
// order of a fleet's instances to be that of their creation.
var randomID = func() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newID draws a visitor identity: random, never 0.
func (rm *Room) newID() uint64 {
	for {
		if id := rm.cfg.Identities(); id != 0 {
			return id
		}
	}
}

// Handler returns the middleware: admitted and bypassed requests go to
// next, through a writer that carries the admitted visitor's ticket
// (TicketFrom); everyone else
// gets the waiting page, as HTML or, for clients that ask for JSON only,
// as JSON; once the room is closed, Config.ErrorHandler answers. The
// method value is the middleware: chi's r.Use(room.Handler) works as it
// is. It is the one way in: the gin adapter (wrgin), the Caddy module
// (wrcaddy) and the forward-auth handler (package forwardauth) are built
// on it. The handler is safe for concurrent use.
//
// The application ends an admitted visitor's session, freeing their slot
// at once, with the response header "Waiting-Room-Command: revoke" or the
// commercial product's "Cf-Waiting-Room-Command: revoke" (Handler removes
// both before the response leaves, from bypassed responses too) or by
// calling Revoke with the writer Handler passed on, in all cases before
// the response is written.
func (rm *Room) Handler(next http.Handler) http.Handler {
	return &handler{rm: rm, next: next}
}

// handler is the middleware of Handler.
type handler struct {
	rm   *Room
	next http.Handler
	page bool // hook.PageHandler's: an alive session gets the waiting page
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rm := h.rm
	x := visit{page: h.page}
	if err := rm.check(r, &x); err != nil {
		rm.cfg.ErrorHandler(w, r, err)
		return
	}
	d := &x.d
	// An admitted visitor's cookie is mostly left alone: nothing to write.
	if (d.Outcome != outcomeAdmitted || d.cookie != "") && !rm.respond(w, r, *d) {
		return
	}
	// One allocation: the writer that watches for a revoke and carries
	// the ticket. The request goes on as it came: a copy carrying the
	// ticket in its context cost about as much as the decision.
	rw := &revokeWriter{ResponseWriter: w, rm: rm}
	if d.Outcome == outcomeAdmitted {
		rw.admit(d.state)
	} // else bypassed: the command header is the room's, never the client's, whatever the application sends
	h.next.ServeHTTP(rw, r)
	rw.commit()
}

package waitingroom

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/template"
)

// Name returns the room's name, Config.Name. It is safe for concurrent use.
func (rm *Room) Name() string { return rm.cfg.Name }

// ErrClosed is returned by Sync, Update and Ready after Room.Close, and
// given to Config.ErrorHandler for the requests Handler gets then.
var ErrClosed = errors.New("waitingroom: room is closed")

// Room is a virtual waiting room. Create it with New; it is safe for
// concurrent use by any number of goroutines.
type Room struct {
	cfg Config
	// sysClock is set when Config.Now was left nil: the room then reads
	// the wall clock through wallMillis, the same time as time.Now at
	// half its cost on linux/amd64.
	sysClock   bool
	draw       drawInterval // the odds of the draw (slots.go); under local's lock
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

	// chances remembers, by visitor ID, the latest chance this instance
	// gave each waiting visitor, for at least one waiting window. Under
	// local's lock.
	chances share.Memory[chance]

	// revokedIDs holds the IDs of revoked sessions (this instance's and
	// those of the latest sync) while their records are kept, so that a
	// copy of a revoked cookie is a new visitor wherever it is sent, from
	// the revoke on (at the end of its hold under passes: revokedFrom).
	// revokedN is its length, read without a lock on every admitted
	// request.
	revokedIDs sync.Map // uint64 → revokedSpan
	revokedN   atomic.Int64
	// passes is the longest, in ms, that the passes of a handler in front
	// of the room last (expectPasses); 0: none are given.
	passes atomic.Int64

	// asking holds the places whose chance waits for the hosted
	// challenge's provider (verdictLocked), nil until one. Under local's
	// lock.
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
		history:    newHistory(),
	}
	rm.cookieAttrs = rm.setCookieAttrs()
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
	}, c.settings(), share.Host[Settings]{Settle: rm.settle, Installed: rm.installed})
	rm.local = rm.syncer.Local()
	rm.syncer.Start()
	return rm, nil
}

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

// policyAt returns the policy of settings s at now (Unix ms).
func (rm *Room) policyAt(s *Settings, now int64) policy {
	p := policy{
		Settings: *s,
		session:  s.sessionDuration(),
		renew:    !s.DisableSessionRenewal,
		tmpl:     rm.template(s.Template),
	}
	for i := range s.Events {
		e := &s.Events[i]
		if e.Suspended || now < e.opens().UnixMilli() || now >= e.End.UnixMilli() {
			continue
		}
		p.event = e
		p.prequeue = now < e.Start.UnixMilli()
		if e.ShuffleAtStart && !p.prequeue {
			p.lottery = [2]int64{e.PrequeueStart.Unix() / 60, e.Start.Unix() / 60}
		}
		if e.TotalActiveUsers > 0 {
			p.TotalActiveUsers, p.NewUsersPerMinute = e.TotalActiveUsers, e.NewUsersPerMinute
		}
		if e.SessionDuration > 0 {
			p.session = e.SessionDuration.Milliseconds()
			p.SessionDuration = e.SessionDuration
		}
		if e.DisableSessionRenewal != nil {
			p.renew = !*e.DisableSessionRenewal
			p.DisableSessionRenewal = *e.DisableSessionRenewal
		}
		if e.QueueingMethod != "" {
			p.QueueingMethod = e.QueueingMethod
		}
		if e.Template != "" {
			p.tmpl = rm.template(e.Template)
			p.Template = e.Template
		}
		if e.Challenge != nil {
			p.Challenge = e.Challenge
		}
		break
	}
	p.reissue = min(time.Minute.Milliseconds(), p.session/5)
	if p.method = p.QueueingMethod.spec(); p.method == nil {
		p.method = &fifoMethod // settings from a newer version
	}
	return p
}

// countWindow is how long, in ms, an active visitor's count is kept: the
// longest session any event of s grants, so that a visitor admitted
// during an event is never dropped from the count while their cookie still
// says they are in.
func (rm *Room) countWindow(s *Settings) int64 {
	w := s.sessionDuration()
	for _, e := range s.Events {
		w = max(w, e.SessionDuration.Milliseconds())
	}
	return w
}

// maxTemplates bounds the parsed templates a room keeps: the room's and
// its events' of the latest settings, and a few earlier ones.
const maxTemplates = 32

// template returns the parsed template for src, parsing it once; "" is the
// default page. Templates were validated when they were set; one that
// fails here (set by an instance with a different version) falls back to
// the default page.
func (rm *Room) template(src string) *template.Template {
	if src == "" {
		return template.Default()
	}
	if t, ok := rm.templates.Load(src); ok {
		return t.(*template.Template)
	}
	t, err := template.Parse(src)
	if err != nil {
		rm.log.Error("waitingroom: a template in the settings does not parse; using the default page", "err", err)
		t = template.Default()
	}
	if rm.ntemplate.Add(1) > maxTemplates {
		// Settings changed many times: start again with the ones in use,
		// which the next policies parse again.
		rm.templates.Clear()
		rm.ntemplate.Store(1)
	}
	rm.templates.Store(src, t)
	return t
}

// checkTemplate is parseTemplate for templates of the shared settings,
// which are checked at every sync: one already parsed is not parsed again.
func (rm *Room) checkTemplate(src string) error {
	if _, ok := rm.templates.Load(src); ok {
		return nil
	}
	if err := parseTemplate(src); err != nil {
		return err
	}
	rm.template(src) // parses it again once, and keeps it
	return nil
}

func parseTemplate(src string) error {
	_, err := template.Parse(src)
	return err
}

// policySpan is the policy of a view's settings over a span of time in
// which none of their events opens, starts or ends: [from, until), Unix ms.
type policySpan struct {
	v           *view
	from, until int64
	p           policy
}

// policyOf returns the policy in force at now (Unix ms) under view v. It is
// worked out once for each view and each span between its events'
// boundaries, and shared: callers must not change it.
func (rm *Room) policyOf(v *view, now int64) *policy {
	if s := rm.policy.Load(); s != nil && s.v == v && now >= s.from && now < s.until {
		return &s.p
	}
	s := &policySpan{v: v, p: rm.policyAt(&v.Settings, now)}
	s.from, s.until = eventSpan(v.Settings.Events, now)
	rm.policy.Store(s)
	return &s.p
}

package sim

import (
	"cmp"
	"context"
	"math/bits"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// Run simulates the visitors opts describes against real Rooms and returns
// what it measured. Every request goes through Room.Handler with the
// visitor's cookie, as from a browser; the rooms run on a virtual clock in
// one-millisecond steps and sync with the store every Options.SyncInterval
// ± 10 % of it, all at the same instants. Run uses one goroutine and never
// sleeps; it returns ctx's error if ctx ends first, and an error for
// Options that cannot work (including a Configure that makes
// waitingroom.New fail). Runs may proceed concurrently as long as they do
// not share a room: each on its own Options.Store, or with its own
// Options.Name.
func Run(ctx context.Context, opts Options) (*Result, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	r, err := newRun(o)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.loop(ctx); err != nil {
		return nil, err
	}
	return r.finish(), nil
}

// event is a client's request due at a virtual instant.
type event struct {
	at  int64  // ms since the start
	tie uint32 // random order among requests at the same instant
	v   int32  // client
}

// live is what the simulator tracks of a client while it is around: a
// cookie jar and its plans. Each visitor has a client of the same index;
// the other clients of cloner groups follow the visitors'. The visitor's
// own client also holds what is tracked of the visitor (clients, waiting,
// lost).
type live struct {
	req       *http.Request // nil before arrival and after leaving
	browseEnd int64         // ms; last instant a browsing request is sent
	clients   int32         // a cloner group's clients around, once it shares its cookie
	waiting   bool          // the visitor is counted in run.waiting
	in        bool          // let in: browses with the cookie that let it in
	pinned    bool          // resends the cookie it holds, whatever the room sets
	lost      bool          // the visitor's lost session is counted
}

// run is one simulated run: its instances on their store, the visitors
// and their clients, the virtual clock and the figures kept as it goes.
type run struct {
	o      Options
	method waitingroom.QueueingMethod
	total  int
	per    int
	sessMs int64

	rng      *mrand.Rand
	base     int64 // Unix ms of the start
	now      int64 // ms since the start: the rooms' clock
	sec      int64 // the second being simulated
	ctx      context.Context
	st       store.Store
	ownStore bool
	rooms    []*waitingroom.Room
	handlers []http.Handler
	order    []int
	// ticket is the Ticket.ID of the latest request that reached the
	// application; sessions holds, by Ticket.ID, the second at whose start
	// each session the room opened stops counting. A visitor's admissions
	// are the IDs it brought to the application first: the holders of
	// copies of one cookie share one.
	ticket   uint64
	sessions map[uint64]int64

	vs       []Visitor
	lv       []live  // by client
	owner    []int32 // visitor of each client from len(vs) on
	arrivals []int64 // ms since the start, sorted; index = visitor
	ties     []uint32
	next     int // next visitor to arrive

	ring     [][]event // by second
	ringMask int64

	w    *response
	reqs requests

	waiting   int   // visitors waiting now
	active    int   // sessions active now
	expiries  []int // by second: sessions that stop counting at its start
	expMask   int64
	clients   int   // clients around: arrived and not left
	replayFor int64 // ms; Options.ReplayFor, defaulted

	abandoned  []int64 // ms of each giving up, in order
	ghostSum   float64 // visitor-seconds abandoned visitors still counted
	ghostMax   int64   // ms
	undercount int

	lastSync, nextSync int64 // ms
	stateMinute        int64 // the next minute whose state size is sampled

	cur       Minute
	curActive int // active at the start of the current minute
	curEnded  int // sessions ended in the current minute
	minutes   []Minute

	res Result

	challenged bool // the rooms give a challenge: clients answer it
}

func nextPow2(n int64) int64 { return 1 << bits.Len64(uint64(n-1)) }

// newRun makes the run of o: its store, its instances and the visitors'
// schedule.
func newRun(o Options) (*run, error) {
	r := &run{
		o:    o,
		rng:  mrand.New(mrand.NewPCG(o.Seed, 0x5eed)),
		base: o.Start.UnixMilli(),
		ctx:  context.Background(),
		st:   o.Store,
		w:    newResponse(),
	}
	if o.Path != "" {
		r.reqs.url = &url.URL{Path: o.Path}
	}
	if r.st == nil {
		r.st, r.ownStore = memstore.New(), true
	}
	cfg, err := r.startRooms()
	if err != nil {
		r.close()
		return nil, err
	}
	// The room's own defaults fill what the Config (after Configure)
	// leaves unset.
	r.method = cmp.Or(cfg.QueueingMethod, waitingroom.FIFO)
	r.challenged = cfg.Challenge != nil && cfg.Challenge.Kind != challenge.Off
	r.total, r.per = cfg.TotalActiveUsers, cfg.NewUsersPerMinute
	session := cmp.Or(cfg.SessionDuration, 5*time.Minute)
	r.sessMs = session.Milliseconds()
	r.replayFor = cmp.Or(o.ReplayFor, session).Milliseconds()

	// Requests are due at most a refresh interval (≤ 5 minutes, jittered
	// by ≤ 50 %), a browsing step or a spamming step ahead.
	ahead := max(
		300*3/2,
		int64(o.BrowseEvery/time.Second),
		int64(o.SpamEvery/time.Second),
	) + int64(max(o.Latency, 0)/time.Second) + 3
	r.ring = make([][]event, nextPow2(ahead))
	r.ringMask = int64(len(r.ring) - 1)
	r.expiries = make([]int, nextPow2(r.sessMs/1000+2))
	r.sessions = map[uint64]int64{}
	r.expMask = int64(len(r.expiries) - 1)

	r.schedule()
	return r, nil
}

package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/template"
)

// simKey encrypts the visitors' cookies. A simulation has nothing to keep
// secret; every instance of a run needs the same key.
var simKey = []byte("waitingroom simulation key, 32+ bytes long")

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
	now := func() time.Time { return time.UnixMilli(r.base + r.now) }
	var cfg waitingroom.Config
	for i := range o.Instances {
		cfg = waitingroom.Config{
			Name:              o.Name,
			TotalActiveUsers:  o.TotalActiveUsers,
			NewUsersPerMinute: o.NewUsersPerMinute,
			SessionDuration:   o.SessionDuration,
			RefreshInterval:   o.RefreshInterval,
			QueueingMethod:    o.Method,
		}
		if o.Configure != nil {
			o.Configure(&cfg)
		}
		if len(cfg.Keys) == 0 {
			cfg.Keys = [][]byte{simKey}
		}
		if cfg.Logger == nil {
			cfg.Logger = o.Logger
		}
		cfg.Now = now
		cfg.Random = mrand.New(mrand.NewPCG(o.Seed, uint64(i)+1)).Float64
		// Identities too: random admission on several instances draws by
		// them.
		cfg.Identities = mrand.New(mrand.NewPCG(o.Seed^0x1d, uint64(i)+1)).Uint64
		cfg.SyncInterval = -1
		rm, err := waitingroom.New(cfg, r.st)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("sim: %w", err)
		}
		r.rooms = append(r.rooms, rm)
		r.handlers = append(r.handlers, rm.Handler(http.HandlerFunc(r.app)))
		r.order = append(r.order, i)
	}
	// The room's own defaults fill what the Config (after Configure)
	// leaves unset.
	r.method = cmp.Or(cfg.QueueingMethod, waitingroom.FIFO)
	r.challenged = cfg.Challenge != nil && cfg.Challenge.Kind != challenge.Off
	r.total, r.per = cfg.TotalActiveUsers, cfg.NewUsersPerMinute
	session := cmp.Or(cfg.SessionDuration, waitingroom.DefaultSessionDuration)
	r.sessMs = session.Milliseconds()
	r.replayFor = cmp.Or(o.ReplayFor, session).Milliseconds()

	// Requests are due at most a refresh interval (≤ 5 minutes, jittered
	// by ≤ 50 %), a browsing step or a spamming step ahead.
	ahead := max(
		int64(waitingroom.MaxRefreshInterval/time.Second)*3/2,
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

func (r *run) close() {
	for _, rm := range r.rooms {
		_ = rm.Close()
	}
	if r.ownStore {
		_ = r.st.Close()
	}
}

// schedule draws the arrivals and each visitor's kind.
func (r *run) schedule() {
	o := r.o
	n := o.Visitors
	span := float64(o.Arrivals.Milliseconds())
	arr := make([]int64, n)
	uniform := func(a []int64) {
		for i := range a {
			a[i] = int64((float64(i) + r.rng.Float64()) * span / float64(len(a)))
		}
	}
	switch o.Arrival {
	case Uniform:
		uniform(arr)
	case AllAtOnce:
		for i := range arr {
			arr[i] = r.rng.Int64N(1000)
		}
	case Spike:
		k := int(math.Round(o.SpikeShare * float64(n)))
		burst := max(o.SpikeSpan.Milliseconds(), 1)
		for i := range k {
			arr[i] = r.rng.Int64N(burst)
		}
		uniform(arr[k:])
	}
	slices.Sort(arr)
	// The bot farm's identities, merged in by arrival.
	var bot []bool
	if nb := o.BotsPerMinute * int(o.Arrivals/time.Minute); nb > 0 {
		bots := make([]int64, nb)
		uniform(bots)
		all := make([]int64, 0, n+nb)
		bot = make([]bool, 0, n+nb)
		for i, j := 0, 0; i < n || j < nb; {
			if j == nb || (i < n && arr[i] <= bots[j]) {
				all, bot = append(all, arr[i]), append(bot, false)
				i++
			} else {
				all, bot = append(all, bots[j]), append(bot, true)
				j++
			}
		}
		arr, n = all, n+nb
	}
	r.arrivals = arr
	r.ties = make([]uint32, n)
	r.vs = make([]Visitor, n)
	r.lv = make([]live, n)
	for i := range r.vs {
		r.ties[i] = r.rng.Uint32()
		if bot != nil && bot[i] {
			r.vs[i].Kind = Bot
			continue
		}
		if o.Spammers > 0 || o.Replayers > 0 || o.Cloners > 0 {
			k := kindOf(r.rng.Float64(), o.Spammers, o.Replayers, o.Cloners)
			r.vs[i].Kind, r.vs[i].Spammer = k, k == Spammer
		}
	}
}

// kindOf is the kind of a visitor whose draw in [0, 1) is u, given the
// shares of each dishonest or impatient kind.
func kindOf(u float64, shares ...float64) Kind {
	for k, share := range shares {
		if u < share {
			return Kind(k + 1)
		}
		u -= share
	}
	return Polite
}

func (r *run) loop(ctx context.Context) error {
	r.ctx = ctx
	// The rooms have synced before the first visitor comes: twice, so
	// that each knows of the others.
	for _, rm := range r.rooms {
		if err := rm.Sync(ctx); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	if err := r.sync(); err != nil {
		return err
	}
	end := cmp.Or(r.o.Duration, MaxDuration).Milliseconds()
	n := len(r.vs)
	for r.sec = 0; r.sec*1000 < end; r.sec++ {
		if r.o.Duration == 0 && r.next == n && r.clients == 0 {
			break
		}
		if r.sec%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := r.second(); err != nil {
			return err
		}
	}
	r.closeMinute()
	r.res.DurationSeconds = float64(r.sec)
	return nil
}

// second simulates one virtual second: sessions ending, the due requests
// in time order and one sync of every instance at a random instant.
func (r *run) second() error {
	s := r.sec
	ended := r.expiries[s&r.expMask]
	r.expiries[s&r.expMask] = 0
	r.active -= ended
	r.curEnded += ended
	if s%60 == 0 {
		if s > 0 {
			r.closeMinute()
		}
		r.cur = Minute{Minute: int(s / 60), WaitingAtStart: r.waiting, PeakActive: r.active}
		r.curActive, r.curEnded = r.active, 0
	}

	slot := &r.ring[s&r.ringMask]
	evs := *slot
	for r.next < len(r.arrivals) && r.arrivals[r.next] < (s+1)*1000 {
		evs = append(evs, event{at: r.arrivals[r.next], tie: r.ties[r.next], v: int32(r.next)})
		r.next++
	}
	slices.SortFunc(evs, func(a, b event) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.tie, b.tie))
	})
	for _, e := range evs {
		for r.nextSync <= e.at {
			if err := r.sync(); err != nil {
				return err
			}
		}
		r.visit(e.v, e.at)
	}
	for r.nextSync < (s+1)*1000 {
		if err := r.sync(); err != nil {
			return err
		}
	}
	*slot = evs[:0]
	return nil
}

// push schedules visitor v's next request at ms at.
func (r *run) push(v int32, at int64) {
	if at/1000-r.sec >= int64(len(r.ring)) {
		r.growRing(at/1000 - r.sec + 1)
	}
	slot := &r.ring[(at/1000)&r.ringMask]
	*slot = append(*slot, event{at: at, tie: r.rng.Uint32(), v: v})
}

// growRing makes room for requests due up to ahead seconds from now.
// Options bound how far ahead requests fall, so this is a safety net.
func (r *run) growRing(ahead int64) {
	old := r.ring
	r.ring = make([][]event, nextPow2(ahead+2))
	r.ringMask = int64(len(r.ring) - 1)
	for _, evs := range old {
		for _, e := range evs {
			slot := &r.ring[(e.at/1000)&r.ringMask]
			*slot = append(*slot, e)
		}
	}
}

var errDryRun = errors.New("sim: measuring the state, not changing it")

// sync syncs every instance, in random order, at the instant of the next
// sync, then compares the room's count of waiting visitors with the
// visitors really waiting. Like the rooms' own background loop, syncs come
// every SyncInterval ± 10 %.
func (r *run) sync() error {
	at := r.nextSync
	r.now = at
	r.rng.Shuffle(len(r.order), func(i, j int) { r.order[i], r.order[j] = r.order[j], r.order[i] })
	for _, i := range r.order {
		if err := r.rooms[i].Sync(r.ctx); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	// After the last sync every instance's counts are merged.
	counted := r.rooms[r.order[len(r.order)-1]].Stats().Waiting
	ghosts := counted - r.waiting
	if ghosts < 0 {
		r.undercount = max(r.undercount, -ghosts)
	} else if g := min(ghosts, len(r.abandoned)); g > 0 {
		// Visitors stop counting in the order they gave up, so the g
		// still counted are the latest g who gave up.
		r.ghostMax = max(r.ghostMax, at-r.abandoned[len(r.abandoned)-g])
		r.ghostSum += float64(g) * float64(at-r.lastSync) / 1000
	}
	if m := at / 60_000; m >= r.stateMinute {
		r.stateMinute = m + 1
		err := r.st.Update(r.ctx, r.o.Name, func(st *store.State) error {
			r.res.StateBytes = max(r.res.StateBytes, len(store.MarshalState(st)))
			return errDryRun
		})
		if err != nil && !errors.Is(err, errDryRun) {
			return fmt.Errorf("sim: %w", err)
		}
	}
	r.lastSync = at
	r.nextSync = at + int64(float64(r.o.SyncInterval.Milliseconds())*(0.9+0.2*r.rng.Float64()))
	return nil
}

// visit sends client c's request due at ms at through a room's Handler and
// acts on the response as a browser (or a client asking for JSON) would.
func (r *run) visit(c int32, at int64) {
	r.now = at
	i := r.visitorOf(c)
	v, l := &r.vs[i], &r.lv[c]
	if l.req == nil {
		// The visitor's first request: the other clients of a cloner
		// group have their request, and the group's cookie, from the
		// start.
		l.req = r.reqs.get()
		v.Arrival = time.Duration(at) * time.Millisecond
		r.cur.Arrivals++
		r.clients++
	}
	k := 0
	if len(r.handlers) > 1 {
		k = r.rng.IntN(len(r.handlers))
	}
	w := r.w
	w.reset()
	r.handlers[k].ServeHTTP(w, l.req)
	v.Requests++
	r.res.Requests++
	switch {
	case w.status == appStatus:
		r.admitted(c, i, at)
	case len(w.header["Refresh"]) > 0 && !l.in:
		r.waited(c, i, at)
	case l.in:
		// The session ended while the client browsed.
		if lead := &r.lv[i]; !lead.lost {
			lead.lost = true
			r.res.SessionsLost++
		}
		r.leave(c)
	default:
		// A closed room: the visitor is turned away when it leaves.
		r.leave(c)
	}
}

// app is the protected application: it answers appStatus and notes the
// request's ticket.
func (r *run) app(w http.ResponseWriter, req *http.Request) {
	t, _ := waitingroom.TicketFromContext(req.Context())
	r.ticket = t.ID
	w.WriteHeader(appStatus)
}

// admitted handles a response from the application to client c of visitor
// i.
func (r *run) admitted(c, i int32, at int64) {
	v, l := &r.vs[i], &r.lv[c]
	if _, seen := r.sessions[r.ticket]; !seen {
		// An admission: a session the room had not opened before.
		r.sessions[r.ticket] = 0
		v.Admissions++
		r.res.Admissions++
		r.cur.Admissions++
	}
	if !l.in {
		// The client had not been let in: its request carried no
		// cookie or a waiting one.
		if !v.WasAdmitted {
			v.WasAdmitted = true
			v.Admitted = time.Duration(at) * time.Millisecond
			r.cur.Admitted++
			r.res.Admitted++
			r.unwait(i)
		}
		if l.pinned && r.o.ReplayAfterAdmission {
			// It leaves the admitted cookie unused, a session that
			// counts until it ends, and replays its waiting cookie.
			if len(r.w.header["Set-Cookie"]) > 0 {
				r.renew(at)
			}
			r.again(c, i, at, r.o.SpamEvery)
			return
		}
		l.in, l.pinned = true, false
		l.browseEnd = at + max(r.o.Browse.Milliseconds(), 0)
	}
	if takeCookie(r.w, l.req) {
		r.renew(at)
	}
	if next := at + r.o.BrowseEvery.Milliseconds(); next <= l.browseEnd {
		r.push(c, next+r.latency())
	} else {
		r.leave(c)
	}
}

// renew counts the session of the latest ticket, whose cookie was set at
// ms at: it counts until SessionDuration after at, once however many
// clients hold copies of its cookies.
func (r *run) renew(at int64) {
	exp := (at + r.sessMs + 999) / 1000
	if old := r.sessions[r.ticket]; old > r.sec {
		r.expiries[old&r.expMask]--
	} else {
		r.active++
		r.cur.PeakActive = max(r.cur.PeakActive, r.active)
	}
	r.sessions[r.ticket] = exp
	r.expiries[exp&r.expMask]++
}

// waited handles a waiting page sent to client c of visitor i.
func (r *run) waited(c, i int32, at int64) {
	v, l := &r.vs[i], &r.lv[c]
	r.res.WaitingResponses++
	var fresh bool
	if l.pinned {
		fresh = len(r.w.header["Set-Cookie"]) > 0
	} else {
		fresh = takeCookie(r.w, l.req)
		// A replayer keeps the first waiting cookie.
		l.pinned = fresh && v.Kind == Replayer
	}
	var pg pageView
	ok := false
	if c != i || r.o.FirstEstimateOnly && v.FirstEstimate.Known {
		// Nothing left to read but when to come back, as a browser would:
		// the estimates are those the visitor's own client was shown.
		pg.refresh = refreshHeader(r.w)
	} else {
		pg, ok = readPage(r.w)
	}
	if ok {
		e := pg.estimate
		e.At = time.Duration(at) * time.Millisecond
		if e.Known && !v.FirstEstimate.Known {
			v.FirstEstimate = e
		}
		if !r.o.FirstEstimateOnly {
			if n := len(v.Estimates); n == 0 || !v.Estimates[n-1].same(e) {
				v.Estimates = append(v.Estimates, e)
			}
		}
	}
	if lead := &r.lv[i]; !v.WasAdmitted && !lead.waiting {
		lead.waiting = true
		r.waiting++
	}
	if fresh && v.Kind.honest() && r.o.Abandon > 0 && r.rng.Float64() < r.o.Abandon {
		v.Abandoned = true
		r.unwait(i)
		r.abandoned = append(r.abandoned, at)
		r.res.Abandoned++
		r.leave(c)
		return
	}
	if r.challenged && c == i {
		r.answer(v, l)
	}
	if v.Kind == Bot && at-v.Arrival.Milliseconds() >= r.o.BotGiveUp.Milliseconds() {
		r.leave(c)
		return
	}
	var wait time.Duration
	switch {
	case v.Kind == Spammer, v.Kind == Replayer, v.Kind == Cloner && r.o.CloneSpam:
		wait = r.o.SpamEvery
	case pg.refresh > 0:
		wait = pg.refresh
	default:
		wait = r.o.RefreshInterval
	}
	if v.Kind == Cloner && fresh && c == i && l.clients == 0 && !v.WasAdmitted {
		r.clone(i, at, wait)
	}
	r.again(c, i, at, wait)
}

// answer reads the challenge of the waiting page just sent to visitor v's
// client l and, unless v is a bot that does not solve, solves it (a proof
// of work, really solved: the run's rooms should use a small Difficulty,
// and the cost is charged after the run, by difficulty) and sends the
// answer with the next request, as the page's script or a JSON client
// does.
func (r *run) answer(v *Visitor, l *live) {
	delete(l.req.Header, challenge.Header)
	var d template.Data
	if !decodePage(r.w.body, &d) || d.ChallengePuzzle == "" || (v.Kind == Bot && !r.o.BotsSolve) {
		return
	}
	a, err := challenge.Solve(r.ctx, d.ChallengePuzzle)
	if err != nil {
		return
	}
	l.req.Header[challenge.Header] = []string{a}
	if v.Kind == Bot {
		r.res.BotSolves++
	} else {
		r.res.HumanSolves++
	}
}

// clone copies the waiting cookie the room just gave cloner group i's first
// client to the group's other clients. The first client comes back a step
// after at; the j-th of the others j/CloneSize of a step later.
func (r *run) clone(i int32, at int64, step time.Duration) {
	k := int64(r.o.CloneSize)
	cookie := r.lv[i].req.Header["Cookie"][0]
	r.lv[i].clients = int32(k)
	for j := int64(1); j < k; j++ {
		c := int32(len(r.lv))
		req := r.reqs.get()
		req.Header["Cookie"] = []string{cookie}
		r.lv = append(r.lv, live{req: req})
		r.owner = append(r.owner, i)
		r.clients++
		r.push(c, at+step.Milliseconds()*(k+j)/k+r.latency())
	}
}

// visitorOf returns the visitor of client c.
func (r *run) visitorOf(c int32) int32 {
	if int(c) < len(r.vs) {
		return c
	}
	return r.owner[int(c)-len(r.vs)]
}

// again schedules client c's next request, wait after ms at, unless its
// visitor i was let in more than ReplayFor before then: the client, still
// trying for an admission, leaves.
func (r *run) again(c, i int32, at int64, wait time.Duration) {
	next := at + wait.Milliseconds()
	if v := &r.vs[i]; v.WasAdmitted && next > v.Admitted.Milliseconds()+r.replayFor {
		r.leave(c)
		return
	}
	r.push(c, next+r.latency())
}

// latency draws the delay of a request after the first.
func (r *run) latency() int64 {
	if r.o.Latency <= 0 {
		return 0
	}
	return r.rng.Int64N(r.o.Latency.Milliseconds() + 1)
}

// unwait stops counting visitor i as waiting.
func (r *run) unwait(i int32) {
	if lead := &r.lv[i]; lead.waiting {
		lead.waiting = false
		r.waiting--
	}
}

// leave ends client c's visit: no more requests. A visitor leaves with
// their last client; one who leaves neither let in nor giving up was turned
// away.
func (r *run) leave(c int32) {
	l := &r.lv[c]
	r.reqs.put(l.req)
	l.req = nil
	r.clients--
	i := r.visitorOf(c)
	if lead := &r.lv[i]; lead.clients > 0 {
		if lead.clients--; lead.clients > 0 {
			return
		}
	}
	r.unwait(i)
	if v := &r.vs[i]; !v.WasAdmitted && !v.Abandoned {
		r.res.TurnedAway++
	}
}

func (r *run) closeMinute() {
	m := &r.cur
	m.Waiting = r.waiting
	m.Capacity = max(0, min(r.per, r.total-r.curActive+r.curEnded))
	m.Saturated = m.WaitingAtStart >= m.Capacity && m.Waiting > 0
	r.minutes = append(r.minutes, *m)
}

package waitingroom

import (
	"cmp"
	"hash/fnv"
	"math"
	"slices"
	"strconv"

	"github.com/go-waitingroom/waitingroom/store"
)

// slotSeconds is the length of a waiting visitor's check-in slot. Waiting
// visitors are counted by the slot of their latest check-in, so a count
// falls away at most one slot after the visitor stopped counting.
const slotSeconds = 10

// anyBucket marks the grant entry that any visitor may take: fresh arrivals
// in FIFO mode once every waiting visitor is covered, everyone in random
// mode.
const anyBucket = math.MaxInt64

// historyMinutes is how many minutes of admissions the state keeps.
const historyMinutes = 60

// trafficWeight is the weight of the latest sync in an instance's traffic
// average.
const trafficWeight = 0.2

// outflowMinutes is the window, in minutes, of the admission rate used for
// estimates.
const outflowMinutes = 5

func slotOf(ms int64) int64   { return floorDiv(ms, 1000*slotSeconds) }
func minuteOf(ms int64) int64 { return floorDiv(ms, 60_000) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// slotCounted reports whether a count kept under slot still counts at now
// (Unix ms) for visitors who stay counted for window ms after a check-in.
// Counts under slots further ahead than any instance's clock may run (one
// that ran hours ahead and was corrected) do not count: they would hold
// the room full until real time caught up with them.
func slotCounted(slot, now, window int64) bool {
	return (slot+1)*1000*slotSeconds+window > now && slot <= slotOf(now+maxClockLead)
}

type cellKey struct{ bucket, slot int64 }

// mergeSession merges the report b into a: the latest sign of life, the
// earliest admission and end, revoked if either is.
func mergeSession(a *store.Session, b store.Session) {
	if a.Admitted == 0 || (b.Admitted != 0 && b.Admitted < a.Admitted) {
		a.Admitted = b.Admitted
	}
	a.Seen = max(a.Seen, b.Seen)
	if b.End != 0 && (a.End == 0 || b.End < a.End) {
		a.End = b.End
	}
	a.Revoked = a.Revoked || b.Revoked
}

// sessionTimes are the lengths, in ms, that decide how long a session
// record counts and how long it is kept.
type sessionTimes struct {
	window int64 // a session lasts this long after its latest request
	margin int64 // and counts this much longer (reports still on their way)
	hold   int64 // its waiting cookies stay presentable this long after admission
}

// alive reports whether the session of x counts as active at now (Unix
// ms): not revoked, not past its end, and seen within the window and
// margin.
func (t sessionTimes) alive(x *store.Session, now int64) bool {
	if x.Revoked || (x.End != 0 && now >= x.End*1000) {
		return false
	}
	return now < (x.Seen+1)*1000+t.window+t.margin && x.Seen*1000 <= now+maxClockLead
}

// kept reports whether the record of x must still be kept at now: while
// any cookie of the visitor, admitted or waiting, could still be
// presented, so that none of them is taken for a new visitor's.
func (t sessionTimes) kept(x *store.Session, now int64) bool {
	if x.Seen*1000 > now+maxClockLead {
		return false // from a clock that ran hours ahead: not believed
	}
	until := max((x.Seen+1)*1000+t.window, x.Admitted*1000+t.hold) + t.margin
	return now < until
}

// delta is what one instance changed since its last sync.
type delta struct {
	sessions map[uint64]store.Session // by visitor ID
	waits    map[uint64]int64         // the wait, in ms, of each visitor this instance let in; nil until one
	waiting  map[cellKey]int64        // (bucket, slot) → change
	attempts int64                    // admission attempts (fresh visitors and due check-ins)
	asks     map[uint64]ask           // due visitors this instance had no slot for (picks.go); nil until one
}

func newDelta() *delta {
	return &delta{sessions: map[uint64]store.Session{}, waiting: map[cellKey]int64{}}
}

// session merges the report x into d.
func (d *delta) session(x store.Session) {
	if o, ok := d.sessions[x.ID]; ok {
		mergeSession(&o, x)
		x = o
	}
	d.sessions[x.ID] = x
}

// wait records the wait, in ms, of the visitor id this instance let in.
func (d *delta) wait(id uint64, w int64) {
	if d.waits == nil {
		d.waits = map[uint64]int64{}
	}
	d.waits[id] = w
}

// prune drops the waiting counts that no longer count at now (Unix ms):
// what an instance remembers of its contributions (rm.mine, which holds
// no sessions: rm.known has them) is bounded by one waiting window.
func (d *delta) prune(now, waitWindow int64) {
	for k := range d.waiting {
		if d.waiting[k] == 0 || !slotCounted(k.slot, now, waitWindow) {
			delete(d.waiting, k)
		}
	}
	d.attempts = 0
}

// add merges o into d.
func (d *delta) add(o *delta) {
	for _, x := range o.sessions {
		d.session(x)
	}
	for k, v := range o.waiting {
		d.waiting[k] += v
	}
	d.attempts += o.attempts
	for id, w := range o.waits {
		d.wait(id, w)
	}
	for id, a := range o.asks {
		d.ask(id, a.bucket, a.until)
	}
}

// syncParams is everything a sync needs besides the state and the delta.
type syncParams struct {
	now          int64 // Unix ms
	id           string
	seq          uint64   // this sync's sequence number
	settings     Settings // the live settings
	policy       policy   // the settings in force at now (events applied)
	times        sessionTimes
	waitWindow   int64 // ms a queued visitor stays counted after a check-in
	syncInterval int64 // ms
	instanceTTL  int64 // ms after which a silent instance loses its share
	// held is what the instance kept of its grant to use while this sync
	// is in flight.
	held int64
	// leaving reports that the instance is closing: the sync removes its
	// record (member.leaving).
	leaving bool
	// history reports that the store keeps the room's history: the state
	// keeps the tallies of the recent minutes (tally.go).
	history bool
	// dueWindow is how long, in ms, after a check-in a waiting visitor
	// holds a FIFO reservation: one longest refresh interval and a margin.
	// A visitor who misses a refresh still counts as waiting (waitWindow)
	// but holds no slot that newer visitors could use.
	dueWindow int64
	// round reports a sync made by the fleet's aggregator for an instance
	// (fleet.go), which refreshes the records of the instances from their
	// mailboxes before it drops the silent ones.
	round bool
	// keepSilent keeps the records of silent instances but expired
	// leases: the syncing instance has not synced without a failure for
	// an instance TTL yet, or the state went back (see Room.steadySince).
	keepSilent bool
	// reserved is, for a fleet's round, the newest bucket the reserve of
	// the aggregator's latest round covered (fleetState.reserved).
	reserved int64
	// scarceBelow is, for a fleet, the number of slots an instance below
	// which every slot goes by pick (fleetScarce); 0 for never.
	scarceBelow int64
}

// bucketCount is the number of visitors waiting in one arrival bucket and
// in all older ones.
type bucketCount struct {
	bucket  int64
	waiting int64
	before  int64
	due     int64 // those of waiting who are due to check in again (dueWindow)
}

// view is what an instance knows of the whole room after a sync.
type view struct {
	at              int64 // Unix ms of the sync
	settings        Settings
	settingsVersion uint64
	active          int64
	sessions        []store.Session // sorted by ID
	revoked         []revokedAt     // the revoked sessions, and from when their cookies are refused
	// picks are the visitors the fleet's aggregator picked (picks.go):
	// visitor ID → the shared-clock ms up to which any instance may let
	// them in. nil when there are none.
	picks map[uint64]int64
	// fleet reports a view of a fleet's aggregator (fleet.go): its
	// instances ask for the due visitors they have no slot for.
	fleet bool
	// scarce reports a fleet with few slots an instance while a queue
	// waits (fleetScarce): its instances ask for their waiting visitors
	// in either method.
	scarce bool
	// reservedTo is the newest bucket whose due visitors the aggregator
	// reserves slots for (picks.go); 0 for none.
	reservedTo         int64
	waiting            int64
	buckets            []bucketCount // oldest first
	admittedThisMinute int64
	perMinute          float64 // recent admissions per minute
	// ends is when the live sessions end unless renewed (ends.go).
	ends      endSchedule
	admitted  []store.Count // admissions by minute, oldest first
	instances int
	// fair is the share of the paced slots the latest carve gave the
	// instance it carved for (before what it held): what an instance of a
	// fleet keeps of the grant it adopts (fleet.go).
	fair int64
	// tallies are the figures of the minutes not yet written to the kept
	// history; due those this sync took out to write, observed what it
	// learnt (tally.go).
	tallies, due []store.Tally
	observed     observations
	// dropped are the fleet instances this sync dropped from the state:
	// their mailboxes are removed (fleet.go).
	dropped []string
}

// applySync merges d into st, drops what expired, settles this instance's
// previous grant and carves a new one from the free slots. It is the whole
// shared-state algorithm; it does no I/O and runs inside Store.Update.
func applySync(st *store.State, p syncParams, d *delta) (grant, *view) {
	out, v := applyRound(st, p, []member{{id: p.id, seq: p.seq, held: p.held, attempts: d.attempts, leaving: p.leaving}}, []*delta{d})
	v.fair = out[0].fair
	return out[0].g, v
}

// member is an instance whose news a sync applies: the classic sync's own,
// or each instance a round of the fleet's aggregator applies (fleet.go).
type member struct {
	id  string
	seq uint64 // its latest batch, now applied
	// held is what it may still admit beyond the admissions its batches
	// bring (Instance.Grant until the carve).
	held     int64
	attempts int64 // its admission attempts since its previous sync
	// noCarve: carve it nothing this time; its record holds held.
	noCarve bool
	// leaving: the instance is closing (Close): its news is its last, it
	// holds nothing, and its record goes with this sync, its grant back to
	// the pool.
	leaving bool
}

// carving is what applyRound carved for a member: its grant (nil: its
// holding stays as it is) and its share of the paced slots (view.fair).
type carving struct {
	g    grant
	fair int64
	// scarce: the round carved in a fleet with few slots an instance
	// (fleetScarce): the instance keeps none of its grant.
	scarce bool
}

// applyRound is applySync for several instances at once: ds holds the
// news of each member, which are merged into st together, once; then
// every member's record is settled, and a grant carved for each, in
// order, from the slots the merged state leaves free. p is the sync's
// parameters but for the member's own (p.id, p.seq, p.held). The merge,
// the pass over the sessions and the cells, is done once however many
// members there are: a round that applied every instance's news by a
// sync of its own went over the whole state once per instance.
//
// Each member's release (the pace, see carve) is the one it would have
// had from a sync of its own, the members after it not applied yet: it
// does not count the admissions the later members bring, which they made
// from grants carved (and paced) before. What every member may take is
// bounded by the merged state, so the limits are exact either way;
// pacing against every admission of the round would give the members
// carved first fewer slots than a round of syncs did (FIFO utilization
// at 40 instances, 0.931 against 0.958).
func applyRound(st *store.State, p syncParams, members []member, ds []*delta) ([]carving, *view) {
	ahead := laterAdmissions(st, minuteOf(p.now), ds)
	d := ds[0]
	if len(ds) > 1 {
		d = newDelta()
		for _, o := range ds {
			d.add(o)
		}
	}
	if lost := lostToSilence(st, &p, members); len(lost) > 0 {
		if d == ds[0] {
			d = newDelta() // the member's batch may be sent again
			d.add(ds[0])
		}
		for _, x := range lost {
			d.session(x)
		}
	}
	v, admitted, obs := mergeShared(st, &p, d)
	picked := settlePicks(st)
	at := settleMembers(st, &p, v, members)
	defer func() {
		for _, m := range members {
			if m.leaving {
				st.Instances = slices.DeleteFunc(st.Instances, func(in store.Instance) bool { return in.ID == m.id })
				v.dropped = append(v.dropped, m.id)
			}
		}
	}()
	v.due = tallySync(st, &p, v, &obs, admitted)
	v.observed = obs
	out := make([]carving, len(members))
	defer func() { v.picks, v.reservedTo = picksOf(st, p.now) }()
	if p.now < st.Grace {
		// Nothing is carved while a grace runs, but the reserve stays
		// (its visitors are told to come back soon rather than in a
		// refresh interval): the first round after sets it again, within
		// the slots free then.
		if p.round {
			keepReserve(st, p)
		}
		return out, v
	}
	// The share follows traffic, with a floor so that an instance that
	// happened to see nobody lately can still admit the next visitor.
	// Every slot held counts: the instances' grants, the picks' and the
	// reserve's (picks.go).
	grants := int64(len(st.Picks))
	if st.Reserve != nil {
		grants += max(st.Reserve.Slots, 0)
	}
	var traffic float64
	for _, in := range st.Instances {
		grants += max(in.Grant, 0)
		traffic += max(in.Traffic, 0)
	}
	fair := 1 / float64(max(v.instances, 1))
	buckets := reserveBuckets(v.buckets, &p.policy)
	// In an ordered queue, a fleet's round picks the visitors asked for
	// and may reserve the oldest bucket's due visitors once for the fleet
	// (picks.go); the instances' grants are laid out over the rest.
	lay := buckets
	scarce := p.round && fleetScarce(&p, v)
	v.scarce = scarce
	if p.round && (p.policy.method.ordered || scarce) {
		lay, grants = reserveAndPick(st, p, v, buckets, d.asks, picked, grants, ahead[0])
	}
	for i, m := range members {
		if m.noCarve || m.leaving {
			continue
		}
		me := &st.Instances[at[i]]
		share := fair
		switch {
		case scarce:
			share = 0 // every slot goes by pick
		case traffic > 0:
			share = max(max(me.Traffic, 0)/traffic, fair/2)
		}
		held := max(me.Grant, 0)
		g := carve(p, v, buckets, lay, share, grants-held, m.held, ahead[i])
		out[i] = carving{g: g, fair: v.fair, scarce: scarce}
		if g != nil {
			me.Grant = g.total()
			grants += g.total() - held
		}
	}
	return out, v
}

// laterAdmissions returns, for each of the deltas in order, how many
// visitors the deltas after it let in during the minute nowMin that st
// (before the merge) and the deltas before do not count yet.
func laterAdmissions(st *store.State, nowMin int64, ds []*delta) []int64 {
	later := make([]int64, len(ds))
	if len(ds) < 2 {
		return later
	}
	counted := map[uint64]bool{}
	for _, d := range ds[1:] {
		for id, x := range d.sessions {
			if floorDiv(x.Admitted, 60) == nowMin {
				counted[id] = false
			}
		}
	}
	if len(counted) == 0 {
		return later
	}
	for _, x := range st.Sessions {
		if _, ok := counted[x.ID]; ok {
			counted[x.ID] = true
		}
	}
	for id := range ds[0].sessions {
		if _, ok := counted[id]; ok {
			counted[id] = true
		}
	}
	// brings[i]: the admissions delta i is the first to bring; later[i]
	// sums those of the deltas after it.
	brings := make([]int64, len(ds))
	for i := 1; i < len(ds); i++ {
		for id, x := range ds[i].sessions {
			if floorDiv(x.Admitted, 60) == nowMin && !counted[id] {
				counted[id] = true
				brings[i]++
			}
		}
	}
	for i := len(ds) - 2; i >= 0; i-- {
		later[i] = later[i+1] + brings[i+1]
	}
	return later
}

// mergeShared merges d into what st shares among the instances (sessions,
// admissions, waiting cells), drops what expired there and returns the
// view of it, the admissions by minute and what the merge observed.
func mergeShared(st *store.State, p *syncParams, d *delta) (*view, map[int64]int64, observations) {
	now := p.now
	nowMin := minuteOf(now)

	admitted := make(map[int64]int64, len(st.Admitted)+1)
	for _, c := range st.Admitted {
		admitted[c.Key] += c.N
	}

	v := &view{at: now, settings: p.settings}
	// Sessions: one record per visitor, so a report merges into the
	// record of its ID however many holders of the cookie sent it. An
	// admission counts when it brings an ID the state did not have.
	times := p.times
	if len(st.Instances) <= 1 && (len(st.Instances) == 0 || st.Instances[0].ID == p.id) {
		// Alone, this instance's reports all arrive before it carves:
		// nothing is on its way.
		times.margin = 0
	}
	var obs observations
	st.Sessions = mergeSessions(st.Sessions, d.sessions, func(x *store.Session) {
		admitted[floorDiv(x.Admitted, 60)]++
		if w, ok := d.waits[x.ID]; ok {
			obs.waits = append(obs.waits, minuteValue{floorDiv(x.Admitted, 60), (w + 500) / 1000})
		}
	})
	st.Sessions = slices.DeleteFunc(st.Sessions, func(x store.Session) bool {
		if times.kept(&x, now) {
			return false
		}
		obs.sessions = append(obs.sessions, max(x.Seen-x.Admitted, 0))
		return true
	})
	ends := newEndCounter(now, times)
	for i := range st.Sessions {
		x := &st.Sessions[i]
		if times.alive(x, now) {
			v.active++
			ends.add(x)
		}
		if from, ok := revokedFrom(x); ok {
			v.revoked = append(v.revoked, revokedAt{id: x.ID, from: from})
		}
	}
	v.sessions = slices.Clone(st.Sessions)
	v.ends = ends.schedule()

	st.Admitted = st.Admitted[:0]
	for k, n := range admitted {
		if n != 0 && k > nowMin-historyMinutes && k <= nowMin+1 {
			st.Admitted = append(st.Admitted, store.Count{Key: k, N: n})
		}
	}
	slices.SortFunc(st.Admitted, func(a, b store.Count) int { return cmp.Compare(a.Key, b.Key) })
	v.admitted = slices.Clone(st.Admitted)
	v.admittedThisMinute = admitted[nowMin]
	v.perMinute = outflow(admitted, now, int64(p.policy.NewUsersPerMinute))

	// The waiting cells are the bulk of the state (a bucket per minute of
	// queue, a few check-in slots each). They are kept sorted, so this
	// instance's changes are merged in one pass, and the per-bucket totals
	// come out in order.
	st.Waiting = mergeCells(st.Waiting, d.waiting)
	kept := st.Waiting[:0]
	for _, c := range st.Waiting {
		if c.N == 0 || !slotCounted(c.Slot, now, p.waitWindow) {
			if c.Slot <= slotOf(now) {
				obs.abandoned += c.N // stopped refreshing, not let in
			}
			continue
		}
		kept = append(kept, c)
		n := len(v.buckets)
		if n == 0 || v.buckets[n-1].bucket != c.Bucket {
			v.buckets = append(v.buckets, bucketCount{bucket: c.Bucket})
			n++
		}
		v.buckets[n-1].waiting += c.N
		if slotCounted(c.Slot, now, p.dueWindow) {
			v.buckets[n-1].due += c.N
		}
	}
	st.Waiting = kept
	v.buckets = slices.DeleteFunc(v.buckets, func(b bucketCount) bool { return b.waiting <= 0 })
	for i := range v.buckets {
		v.buckets[i].due = max(v.buckets[i].due, 0)
	}
	for i := range v.buckets {
		v.buckets[i].before = v.waiting
		v.waiting += v.buckets[i].waiting
	}

	return v, admitted, obs
}

// silence is what a sync of members drops from st as silent: the
// instances, and the fleet's lease, picks and reserve (picks.go), not
// renewed within their time to live.
type silence struct {
	instance func(store.Instance) bool
	lease    bool
	pick     func(store.Pick) bool
	reserve  bool
}

// silentDrops returns what a sync of members drops from st as silent.
func silentDrops(st *store.State, p *syncParams, members []member) silence {
	now := p.now
	ttl := p.instanceTTL
	// While a live lease says an aggregator syncs the fleet, the records
	// of the fleet's instances are its to drop: it keeps them alive from
	// their mailboxes, which they write whether or not its rounds commit.
	// Dropped by another sync while the rounds stalled (the store slow or
	// back from an outage), an instance that never stopped writing its
	// mailbox would look to the aggregator like one the state went back
	// on (see aggregate).
	leased := st.Lease != nil && st.Lease.Renewed+ttl*fleetLeaseTTLs >= now
	syncing := make(map[string]bool, len(members))
	for _, m := range members {
		syncing[m.id] = true
	}
	// The picks and the reserve (picks.go) are kept with the silent
	// instances, and through a grace: read back from a state that went
	// back, or after an outage, they look stale but are the slots the
	// aggregator set aside for the oldest visitors (they hold slots, so
	// keeping them a while is on the safe side of every limit).
	held := !p.keepSilent && now >= st.Grace
	return silence{
		instance: func(in store.Instance) bool {
			return !syncing[in.ID] && in.Seen+ttl < now && !p.keepSilent && (p.round || !leased)
		},
		lease:   st.Lease != nil && st.Lease.Renewed+ttl*fleetLeaseTTLs < now,
		pick:    func(pk store.Pick) bool { return held && pk.Until+ttl < now },
		reserve: st.Reserve != nil && held && st.Reserve.Set+ttl < now,
	}
}

// lostToSilence returns a session record for each admission that the
// instances a sync of members drops as silent (silentDrops) may have made
// and not reported: an instance that stopped (it crashed, or was closed)
// or lost the store may have let visitors in from its grant after its
// latest sync, and reached the state with them no more. Their records
// count those admissions in the minute of the drop and as active for a
// session, so the grant that goes back to the pool does not let in a
// second visitor for a slot one may have taken. An instance may have let
// in any visitor picked for the fleet (picks.go) too: the picks still
// held count once more, whoever was dropped. What the records count that
// was not let in, or is reported later by another instance (a sign of
// life of such a session), is a slot or two lost, on the safe side of
// every limit, once for each instance that stops.
//
// The records' IDs are derived from the dropped records', so a sync that
// is tried again adds the same ones; they are no visitor's (a visitor's ID
// is random: one in 2^64 would be).
func lostToSilence(st *store.State, p *syncParams, members []member) []store.Session {
	drops := silentDrops(st, p, members)
	var lost []store.Session
	add := func(parts ...string) {
		h := fnv.New64a()
		for _, s := range parts {
			_, _ = h.Write([]byte(s))
			_, _ = h.Write([]byte{0})
		}
		sec := floorDiv(p.now, 1000)
		lost = append(lost, store.Session{ID: max(h.Sum64(), 1), Admitted: sec, Seen: sec, End: sessionEnd(&p.policy, p.now)})
	}
	dropped := false
	for _, in := range st.Instances {
		if !drops.instance(in) {
			continue
		}
		dropped = true
		seq := strconv.FormatUint(in.Seq, 10)
		for k := range max(in.Grant, 0) {
			add("lost", in.ID, seq, strconv.FormatInt(k, 10))
		}
	}
	if dropped {
		for _, pk := range st.Picks {
			if !drops.pick(pk) && !hasSession(st.Sessions, pk.Visitor) {
				add("lost-pick", strconv.FormatUint(pk.Visitor, 16), strconv.FormatInt(p.now, 10))
			}
		}
	}
	return lost
}

// settleMembers drops the silent records (the instances' grants return
// to the pool, counted first as admissions they may have made:
// lostToSilence), and settles the members': each record's sequence number,
// time and traffic, and its grant, which holds what the member still holds
// until a carve. It counts the instances into v, and returns where each
// member's record is in st.Instances.
func settleMembers(st *store.State, p *syncParams, v *view, members []member) []int {
	now := p.now
	drops := silentDrops(st, p, members)
	st.Instances = slices.DeleteFunc(st.Instances, func(in store.Instance) bool {
		drop := drops.instance(in)
		if drop {
			v.dropped = append(v.dropped, in.ID)
		}
		return drop
	})
	if drops.lease {
		st.Lease = nil
	}
	st.Picks = slices.DeleteFunc(st.Picks, drops.pick)
	if drops.reserve {
		st.Reserve = nil
	}
	index := make(map[string]int, len(st.Instances)+len(members))
	for i, in := range st.Instances {
		index[in.ID] = i
	}
	for _, m := range members {
		if _, ok := index[m.id]; !ok {
			st.Instances = append(st.Instances, store.Instance{ID: m.id})
			index[m.id] = len(st.Instances) - 1
		}
	}
	at := make([]int, len(members))
	for i, m := range members {
		at[i] = index[m.id]
		me := &st.Instances[at[i]]
		me.Traffic = (1-trafficWeight)*me.Traffic + trafficWeight*float64(m.attempts)
		me.Seen = now
		me.Seq = m.seq
		// What the member kept of its previous grant to use while its
		// sync is in flight stays on the books; the rest returns to the
		// pool.
		me.Grant = m.held
	}
	v.instances = len(st.Instances)
	return at
}

// mergeCells returns the cells of cs (sorted by bucket and slot) with the
// changes of d added, sorted. cs is sorted first if it is not (a state
// written elsewhere). The result may share cs's memory.
func mergeCells(cs []store.Cell, d map[cellKey]int64) []store.Cell {
	cmpCell := func(a, b store.Cell) int {
		return cmp.Or(cmp.Compare(a.Bucket, b.Bucket), cmp.Compare(a.Slot, b.Slot))
	}
	add := make([]store.Cell, 0, len(d))
	for k, n := range d {
		add = append(add, store.Cell{Bucket: k.bucket, Slot: k.slot, N: n})
	}
	return mergeSorted(cs, add, cmpCell, func(c *store.Cell, n store.Cell) { c.N += n.N })
}

// mergeSessions returns the records of ss (sorted by ID) with the reports
// of d merged in, sorted; admitted is called for every record whose ID ss
// did not have. Every record is an admitted visitor's, and the first
// report of it may come from any instance (a sign of life from another
// instance can arrive before the admitting one's report), so a new record
// is the admission, counted once however many instances report it. A
// record is dropped only once none of its cookies can be presented, so it
// comes back only with a state rebuilt after a loss, which is meant to
// count it again. The result may share ss's memory.
func mergeSessions(ss []store.Session, d map[uint64]store.Session, admitted func(*store.Session)) []store.Session {
	cmpID := func(a, b store.Session) int { return cmp.Compare(a.ID, b.ID) }
	if !slices.IsSortedFunc(ss, cmpID) {
		slices.SortFunc(ss, cmpID)
		// A state written elsewhere may hold an ID twice: merge them.
		ss = slices.CompactFunc(ss, func(a, b store.Session) bool { return a.ID == b.ID })
	}
	if len(d) == 0 {
		return ss
	}
	// Most reports are signs of life of sessions the state has: they
	// merge in place, and only new IDs cost a merge of the slices.
	var add []store.Session
	for _, x := range d {
		if i, ok := slices.BinarySearchFunc(ss, x.ID, func(s store.Session, id uint64) int { return cmp.Compare(s.ID, id) }); ok {
			mergeSession(&ss[i], x)
			continue
		}
		add = append(add, x)
	}
	if len(add) == 0 {
		return ss
	}
	slices.SortFunc(add, func(a, b store.Session) int { return cmp.Compare(a.ID, b.ID) })
	out := make([]store.Session, 0, len(ss)+len(add))
	i := 0
	for _, x := range add {
		for i < len(ss) && ss[i].ID < x.ID {
			out = append(out, ss[i])
			i++
		}
		admitted(&x)
		out = append(out, x)
	}
	return append(out, ss[i:]...)
}

// mergeSorted returns cs with add merged in, sorted by cmpFn, entries that
// compare equal combined with sum. cs is sorted first if it is not (a
// state written elsewhere); add is sorted in place. The result may share
// cs's memory.
func mergeSorted[T any](cs, add []T, cmpFn func(a, b T) int, sum func(*T, T)) []T {
	if !slices.IsSortedFunc(cs, cmpFn) {
		slices.SortFunc(cs, cmpFn)
	}
	if len(add) == 0 {
		return cs
	}
	slices.SortFunc(add, cmpFn)
	out := make([]T, 0, len(cs)+len(add))
	i, j := 0, 0
	for i < len(cs) || j < len(add) {
		switch {
		case j == len(add) || (i < len(cs) && cmpFn(cs[i], add[j]) < 0):
			out = append(out, cs[i])
			i++
		case i == len(cs) || cmpFn(cs[i], add[j]) > 0:
			out = append(out, add[j])
			j++
		default:
			c := cs[i]
			sum(&c, add[j])
			out = append(out, c)
			i++
			j++
		}
	}
	return out
}

// outflow is the recent admission rate per minute: admissions over the last
// outflowMinutes minutes, counted from the first minute in that window that
// had any, so a queue that just formed is not diluted by empty minutes. The
// minute under way counts as at least the part of it that has passed and
// at least the time its admissions take at limit a minute: a few
// admissions early in a minute are not taken for a rate (two admitted in
// the first 15 seconds are not 8 a minute). So the rate never exceeds
// limit while every minute kept to it, and it is capped at limit besides
// (a limit lowered live). A limit ≤ 0 caps nothing.
func outflow(admitted map[int64]int64, now int64, limit int64) float64 {
	nowMin := minuteOf(now)
	var sum int64
	first := int64(0)
	for m := nowMin - outflowMinutes + 1; m <= nowMin; m++ {
		if n := admitted[m]; n > 0 {
			if sum == 0 {
				first = m
			}
			sum += n
		}
	}
	if sum == 0 {
		return 0
	}
	part := float64(now-nowMin*60_000) / 60_000
	if limit > 0 {
		part = max(part, float64(admitted[nowMin])/float64(limit))
	}
	rate := float64(sum) / (float64(nowMin-first) + min(max(part, 0.25), 1))
	if limit > 0 {
		rate = min(rate, float64(limit))
	}
	return rate
}

package waitingroom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-waitingroom/waitingroom/store"
)

// Syncing a fleet. The classic sync (sync.go) reads and rewrites the whole
// shared state, which holds a record per instance, once per instance per
// interval: its cost per sync grows with the fleet, and past a few
// hundred syncs a second the store cannot keep up. With Config.FleetSync,
// once fleetMin live instances all have it, the room syncs through an
// aggregator instead:
//
//   - each instance has a mailbox, a state of its own in the store (the
//     room's name + "#fleet:" + its ID), in which it leaves its numbered
//     batches of counts and what it still holds of its grant, and from
//     which it takes the grant the aggregator carved for it: one Update
//     of a small value, contended by nobody but the aggregator;
//   - it reads the room's view (name + "#fleet-view"): the shared state
//     as the aggregator last wrote it, without the instance records;
//   - the aggregator, an instance holding a lease recorded in the shared
//     state, every interval reads every mailbox, applies the new batches
//     and carves every instance's grant in one Update of the shared state
//     (applySync, instance by instance, as their classic syncs would
//     have), writes each grant to its mailbox and publishes the view.
//
// So an instance moves its own counts and the view each interval, however
// many instances there are; the aggregator moves every mailbox once.
//
// Grants stay exact although an instance takes its grant one interval
// after it was carved: the aggregator carves from what the instance said
// it still holds (its held), which the new grant includes and never takes
// back; an instance that adopts a grant charges to it every admission it
// made since the write whose held the grant was carved from; a grant
// carved but not adopted yet counts as held; and an aggregator writes a
// grant only into a mailbox that no later aggregator has read (every
// mailbox keeps the term of the latest lease that read it). An instance
// whose classic sync is newer than its mailbox adopts no grant carved
// before it.
//
// The room falls back to classic syncs, instance by instance, whenever the
// fleet path cannot vouch for itself: before an instance's first sync, while
// an instance that does not advertise the fleet protocol (its ID lacks
// "f1": an earlier release) or reads older formats is live, when the
// lease or the view is older than the instance TTL (the aggregator
// stopped), when the view's epoch is not the one the instance knows (the
// state was lost), when the instance's batches stopped being applied for
// the instance TTL, and when the instance has counts of the previous
// release's formats to send. A classic sync takes the lease when nobody
// holds a live one and every live instance syncs the fleet way.

// fleetTag is the letter and number an instance ID carries when the
// instance syncs through an aggregator when it can (Config.FleetSync).
const fleetTag = "f1"

// leasePrefix starts the ID of the aggregator's lease record among the
// state's instances: "lease:" and the holder's ID. Its Seq is the lease's
// term (the state's Version when it was taken), Seen when it was last
// renewed; it holds no grant and no traffic.
const leasePrefix = "lease:"

// fleetMin is the fewest live instances that sync through an aggregator.
// A smaller fleet syncs the classic way: its store keeps up easily, and
// each instance takes its grant at once rather than an interval after it
// was carved. A variable for tests.
var fleetMin = 32

// fleetWorkers bounds the mailbox reads and writes an aggregator has in
// flight.
const fleetWorkers = 32

// errFleetFallback makes Sync fall back to a classic sync.
var errFleetFallback = errors.New("waitingroom: fleet sync not possible; classic sync")

// errNotLeader aborts an aggregator's round: another holds the lease.
var errNotLeader = errors.New("waitingroom: the lease is another instance's")

// errReadOnly aborts an Update that only reads.
var errReadOnly = errors.New("waitingroom: read only")

// fleetCapable reports whether the instance of ID id syncs the fleet way.
func fleetCapable(id string) bool {
	i := strings.LastIndexByte(id, '+')
	return i >= 0 && strings.Contains(id[i+1:], fleetTag)
}

func isLease(id string) bool { return strings.HasPrefix(id, leasePrefix) }

func mailboxKey(room, id string) string { return room + "#fleet:" + id }
func viewKey(room string) string        { return room + "#fleet-view" }

// fleetState is what an instance knows of the fleet protocol; under
// syncMu.
type fleetState struct {
	// on: the latest sync found a live lease and a fleet that syncs
	// through it.
	on bool
	// term is the lease this instance holds (its Seq), 0 if none.
	term uint64
	// peers are the fleet instances in the shared state (for the
	// aggregator's round).
	peers []string
	// classicVersion is the state's Version at this instance's latest
	// classic sync: no grant carved before it is adopted.
	classicVersion uint64
	// used are the admissions, by grant entry, made in each batch's
	// period, for the batches after the base of the grant last adopted.
	used []usedBatch
	// acked is the latest of this instance's batches the state applied;
	// ackedAt when it last moved (local ms).
	acked   uint64
	ackedAt int64
	// viewAt is when (local ms) the latest view was installed, or the
	// instance joined the fleet.
	viewAt int64
}

type usedBatch struct {
	seq  uint64
	used map[int64]int64
}

// mailbox is an instance's mailbox, kept as JSON in the Settings of a
// state of its own (a store keeps it like any room's state).
type mailbox struct {
	Term    uint64      `json:"t,omitempty"`  // the latest lease term that read it
	Seq     uint64      `json:"q,omitempty"`  // the instance's latest batch
	Seen    int64       `json:"s,omitempty"`  // shared-clock ms of its latest write
	Held    int64       `json:"h,omitempty"`  // what it may admit from its latest write on
	Batches []wireBatch `json:"b,omitempty"`  // not yet applied
	Acked   uint64      `json:"a,omitempty"`  // the latest batch the state applied
	Grant   [][2]int64  `json:"g,omitempty"`  // the latest grant carved: bucket, n
	Version uint64      `json:"gv,omitempty"` // the state's Version the grant was carved at
	Base    uint64      `json:"gb,omitempty"` // the batch whose Held it was carved from
	Adopted uint64      `json:"av,omitempty"` // the Version of the grant the instance adopted
	Epoch   uint64      `json:"e,omitempty"`  // the state's epoch the grant belongs to
	Fair    int64       `json:"f,omitempty"`  // the instance's share of the paced slots at the carve
}

type wireBatch struct {
	Seq      uint64          `json:"q"`
	Sessions []store.Session `json:"s,omitempty"`
	Waiting  [][3]int64      `json:"w,omitempty"` // bucket, slot, change
	Waits    [][2]int64      `json:"x,omitempty"` // visitor ID (as int64), wait in ms
	Attempts int64           `json:"n,omitempty"`
}

func readMailbox(st *store.State) mailbox {
	var mb mailbox
	if len(st.Settings) > 0 {
		if err := json.Unmarshal(st.Settings, &mb); err != nil {
			return mailbox{}
		}
	}
	return mb
}

func (mb *mailbox) write(st *store.State) {
	st.Settings, _ = json.Marshal(mb)
	st.Version++
	if st.Epoch == 0 {
		st.Epoch = 1
	}
}

// pendingGrant reports the grant carved and not adopted, if any.
func (mb *mailbox) pendingGrant() grant {
	if mb.Version <= mb.Adopted || mb.Grant == nil {
		return nil
	}
	g := make(grant, len(mb.Grant))
	for i, e := range mb.Grant {
		g[i] = grantEntry{bucket: e[0], n: e[1]}
	}
	return g
}

func toWire(b batch) wireBatch {
	w := wireBatch{Seq: b.seq, Attempts: b.d.attempts}
	for _, x := range b.d.sessions {
		w.Sessions = append(w.Sessions, x)
	}
	for k, n := range b.d.waiting {
		if n != 0 {
			w.Waiting = append(w.Waiting, [3]int64{k.bucket, k.slot, n})
		}
	}
	for id, ms := range b.d.waits {
		w.Waits = append(w.Waits, [2]int64{int64(id), ms})
	}
	return w
}

func (w wireBatch) delta() *delta {
	d := newDelta()
	for _, x := range w.Sessions {
		d.session(x)
	}
	for _, c := range w.Waiting {
		d.waiting[cellKey{c[0], c[1]}] += c[2]
	}
	for _, x := range w.Waits {
		d.wait(uint64(x[0]), x[1])
	}
	d.attempts = w.Attempts
	return d
}

// legacyEmpty reports whether l holds no counts of the previous release.
func (l *legacyDelta) empty() bool {
	return len(l.active) == 0 && len(l.admitted) == 0 && len(l.converted) == 0
}

// fleetPeers returns the fleet instances of st when every instance in it
// syncs the fleet way (nil otherwise), and the term of the lease id holds.
func fleetPeers(st *store.State, id string) ([]string, uint64) {
	var peers []string
	var term uint64
	for _, in := range st.Instances {
		switch {
		case isLease(in.ID):
			if in.ID == leasePrefix+id {
				term = in.Seq
			}
		case !fleetCapable(in.ID):
			return nil, 0
		default:
			peers = append(peers, in.ID)
		}
	}
	return peers, term
}

func leaseOf(st *store.State) *store.Instance {
	for i := range st.Instances {
		if isLease(st.Instances[i].ID) {
			return &st.Instances[i]
		}
	}
	return nil
}

// takeLease records a lease for this instance in st when nobody holds a
// live one (applySync dropped expired ones) and every instance syncs the
// fleet way.
func (rm *Room) takeLease(st *store.State, now int64, current bool) {
	if !current || leaseOf(st) != nil {
		return
	}
	if peers, _ := fleetPeers(st, rm.id); len(peers) < fleetMin {
		return
	}
	st.Instances = append(st.Instances, store.Instance{ID: leasePrefix + rm.id, Seq: st.Version, Seen: now})
}

// fleetSync is Sync the fleet way: the mailbox, the round if this
// instance holds the lease, the view. It returns errFleetFallback, with
// nothing lost, when a classic sync must be made instead.
func (rm *Room) fleetSync(ctx context.Context) error {
	f := &rm.fleet
	local := rm.localNow()
	if !f.on || local-f.ackedAt > rm.fleetPatience() {
		f.on = false
		return errFleetFallback
	}
	rm.mu.Lock()
	if !rm.pending.legacy.empty() {
		rm.mu.Unlock()
		f.on = false
		return errFleetFallback
	}
	d := rm.pending
	rm.pending = newDelta()
	rm.seq++
	b := batch{seq: rm.seq, d: d}
	rm.unacked = append(rm.unacked, b)
	if rm.inflight == nil {
		rm.inflight = map[int64]int64{}
	}
	f.used = append(f.used, usedBatch{seq: rm.seq, used: rm.inflight})
	rm.inflight = map[int64]int64{}
	// Of a grant it adopts, the instance keeps its fair share or what it
	// is likely to need until the next (about one and a half intervals of
	// the last one's attempts), whichever is more: the rest goes back to
	// the pool at the next round. Until then it keeps its budget.
	need := 1 + d.attempts + d.attempts/2
	budget := rm.grant.total()
	rm.mu.Unlock()

	started := time.Now()
	defer func() { rm.counters.syncNanos.Store(int64(time.Since(started))) }()
	rm.counters.syncs.Add(1)

	now := local + rm.offset.Load()
	var (
		adopt grant
		base  uint64
		acked uint64
		keep  int64
	)
	err := rm.store.Update(ctx, mailboxKey(rm.cfg.Name, rm.id), func(st *store.State) error {
		mb := readMailbox(st)
		adopt, base, acked = nil, 0, mb.Acked
		held := budget
		if g := mb.pendingGrant(); g != nil && mb.Version > f.classicVersion && mb.Epoch == rm.epoch {
			adopt, base = g, mb.Base
			// What may be admitted from this write on: admissions from
			// the budget while the write is on its way and what is kept
			// of the grant after it, which are charged to the grant
			// together (and the budget alone if the instance never
			// learns that the write committed).
			left := max(0, g.total()-rm.usedSince(base).total)
			keep = max(need, mb.Fair)
			held = min(budget+keep, left)
			mb.Adopted = mb.Version
		}
		mb.Batches = mb.Batches[:0]
		for _, u := range rm.unacked {
			if u.seq > mb.Acked {
				mb.Batches = append(mb.Batches, toWire(u))
			}
		}
		mb.Seq, mb.Seen, mb.Held = rm.seq, now, held
		mb.write(st)
		return nil
	})
	if err != nil {
		// The batch stays in rm.unacked; a classic sync sends it.
		f.on = false
		rm.log.Debug("waitingroom: fleet mailbox write failed; classic sync", "err", err)
		return errFleetFallback
	}
	for k, n := range b.d.waiting {
		rm.mine.waiting[k] += n
	}
	rm.mu.Lock()
	if adopt != nil {
		charge := rm.usedSince(base)
		for k, n := range rm.inflight {
			charge.byEntry[k] += n
			charge.total += n
		}
		adopt.charge(charge.byEntry)
		rm.grant = adopt.keep(keep)
		f.used = slices.DeleteFunc(f.used, func(u usedBatch) bool { return u.seq <= base })
	}
	rm.mu.Unlock()
	if acked > f.acked {
		f.acked, f.ackedAt = acked, local
		rm.unacked = slices.DeleteFunc(rm.unacked, func(u batch) bool { return u.seq <= acked })
	}
	if f.term != 0 {
		if err := rm.aggregate(ctx); err != nil {
			rm.log.Debug("waitingroom: aggregator round failed", "err", err)
			if errors.Is(err, errNotLeader) {
				f.term = 0
			}
		}
	}
	return rm.readView(ctx)
}

// usage is admissions by grant entry and their total.
type usage struct {
	byEntry map[int64]int64
	total   int64
}

// usedSince returns the admissions made in the periods of the batches
// after base (not the current period's). Under rm.mu or syncMu.
func (rm *Room) usedSince(base uint64) usage {
	u := usage{byEntry: map[int64]int64{}}
	for _, b := range rm.fleet.used {
		if b.seq > base {
			for k, n := range b.used {
				u.byEntry[k] += n
				u.total += n
			}
		}
	}
	return u
}

// readView reads the room's view and installs it, as a classic sync
// installs the state it wrote; it falls back to a classic sync when the
// view is missing, stale, or of another epoch.
func (rm *Room) readView(ctx context.Context) error {
	st, err := rm.read(ctx, viewKey(rm.cfg.Name))
	if err != nil {
		rm.fleet.on = false
		return errFleetFallback
	}
	local := rm.localNow()
	if st.Epoch == 0 && local-rm.fleet.viewAt <= rm.fleetPatience() {
		// The aggregator has not published a view yet (its lease is
		// new): the counts went out, the view of the latest sync stays.
		return nil
	}
	now := max(st.Clock, local+rm.offset.Load())
	lease := leaseOf(&st)
	if st.Epoch != rm.epoch || lease == nil || lease.Seen+rm.fleetPatience() < now || now > local+maxClockLead {
		rm.fleet.on = false
		return errFleetFallback
	}
	rm.fleet.viewAt = local
	fleetSize := int(lease.Traffic)
	lease.Traffic = 0
	p := rm.params(now)
	p.settings = rm.sharedSettings(&st)
	p.policy = rm.policyAt(&p.settings, now)
	p.times = rm.sessionTimes(&p.settings)
	_, v := applySync(&st, p, newDelta())
	v.instances = fleetSize
	v.due, v.observed = nil, observations{}
	rm.finish(ctx, p, v, st.Epoch, st.SettingsVersion, nil, func() {}, now-local)
	return nil
}

// read returns the state of key: with the store's read without a lock
// (store.Reader) when it has one, else with an Update whose function
// fails, which on SQL locks the row while it reads.
func (rm *Room) read(ctx context.Context, key string) (store.State, error) {
	if r, ok := rm.store.(store.Reader); ok {
		st, err := r.Read(ctx, key)
		if err != nil {
			return store.State{}, err
		}
		return *st, nil
	}
	var st store.State
	err := rm.store.Update(ctx, key, func(s *store.State) error {
		st = *s
		return errReadOnly
	})
	if err != nil && !errors.Is(err, errReadOnly) {
		return store.State{}, err
	}
	return st, nil
}

// maxGone bounds the mailboxes an instance remembers to remove.
const maxGone = 4096

// noteGone remembers the mailboxes of the fleet instances that a sync of
// this instance dropped from the state (silent for the instance TTL), to
// remove them once they have been silent for the fleet's patience: an
// instance that comes back before that still reads its mailbox (which of
// its batches were applied). Under syncMu.
func (rm *Room) noteGone(ids []string) {
	if len(ids) == 0 {
		return
	}
	if rm.gone == nil {
		rm.gone = map[string]int64{}
	}
	due := rm.localNow() + rm.fleetPatience() - rm.instanceTTL()
	for _, id := range ids {
		if len(rm.gone) >= maxGone {
			rm.log.Debug("waitingroom: too many fleet mailboxes to remove; some stay", "max", maxGone)
			return
		}
		if _, ok := rm.gone[id]; !ok {
			rm.gone[id] = due
		}
	}
}

// removeMailboxes removes the mailboxes noted gone whose time has come,
// each with an Update that leaves the zero State (sqlstore and memstore
// delete it; Redis lets it expire) if it has been silent for the fleet's
// patience; one written since is tried again once it has been. A
// mailbox whose Update fails is tried at the next sync; at most
// maxRemovals a sync. Under syncMu.
func (rm *Room) removeMailboxes(ctx context.Context) {
	local := rm.localNow()
	var due []string
	for id, at := range rm.gone {
		if at <= local && len(due) < maxRemovals {
			due = append(due, id)
		}
	}
	now := local + rm.offset.Load()
	patience := rm.fleetPatience()
	for _, id := range due {
		next := int64(0) // done
		err := rm.store.Update(ctx, mailboxKey(rm.cfg.Name, id), func(st *store.State) error {
			next = 0
			if st.Epoch == 0 {
				return errReadOnly // no mailbox
			}
			if mb := readMailbox(st); mb.Seen+patience >= now {
				next = local + mb.Seen + patience - now + 1
				return errReadOnly // written since: not yet
			}
			*st = store.State{}
			return nil
		})
		if err != nil && !errors.Is(err, errReadOnly) {
			next = local
		}
		if next == 0 {
			delete(rm.gone, id)
		} else {
			rm.gone[id] = next
		}
	}
}

// maxRemovals bounds the mailboxes one sync removes, one after the other:
// the rest wait for the next syncs.
const maxRemovals = 16

// fleetPatience is how long, in ms, an instance of a fleet goes on
// syncing through the aggregator without news of it (a view, its batches
// applied) before it falls back to classic syncs: three instance TTLs, so
// that an aggregator slowed down by a wave of classic syncs (a fleet
// starting, every instance joining the state) is not swamped by more of
// them. Its grants are safe meanwhile, and its batches wait in mailboxes.
func (rm *Room) fleetPatience() int64 { return fleetLeaseTTLs * rm.instanceTTL() }

// fleetLeaseTTLs is how many instance TTLs a lease outlives its latest
// renewal: as long as the instances' patience, so that an aggregator whose
// rounds a wave of classic syncs slows down keeps its lease.
const fleetLeaseTTLs = 3

// params are the sync parameters that do not depend on the state.
func (rm *Room) params(now int64) syncParams {
	return syncParams{
		now:          now,
		id:           rm.id,
		seq:          rm.seq,
		waitWindow:   rm.waitWindow,
		syncInterval: max(rm.cfg.SyncInterval, 0).Milliseconds(),
		instanceTTL:  rm.instanceTTL(),
		dueWindow:    rm.waitWindow/2 + dueMargin,
		history:      rm.kept.store != nil,
	}
}

// aggregate runs one round of the aggregator: every fleet instance's
// mailbox read (and fenced with this lease's term), their new batches
// applied and their grants carved in one Update of the shared state,
// the grants written to the mailboxes, the view published.
func (rm *Room) aggregate(sctx context.Context) error {
	// The round may take longer than an instance's sync: a wave of
	// classic syncs (a fleet starting) contends for the state. It ends
	// with the sync's context when that is cancelled (Close).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(sctx), 2*syncTimeout(max(rm.cfg.SyncInterval, time.Second)))
	defer cancel()
	defer context.AfterFunc(sctx, func() {
		if errors.Is(sctx.Err(), context.Canceled) {
			cancel()
		}
	})()
	f := &rm.fleet
	term := f.term
	peers := f.peers
	boxes := make([]*mailbox, len(peers))
	rm.eachPeer(peers, func(i int) {
		_ = rm.store.Update(ctx, mailboxKey(rm.cfg.Name, peers[i]), func(st *store.State) error {
			mb := readMailbox(st)
			if mb.Term > term {
				return errNotLeader
			}
			boxes[i] = &mb
			if mb.Term == term {
				return errReadOnly
			}
			mb.Term = term
			mb.write(st)
			return nil
		})
	})
	byID := make(map[string]*mailbox, len(peers))
	for i, mb := range boxes {
		if mb != nil {
			byID[peers[i]] = mb
		}
	}

	type carved struct {
		g       grant
		base    uint64
		applied uint64
		fair    int64
	}
	var (
		out     map[string]carved
		version uint64
		epoch   uint64
		pub     store.State
		merged  *view
		dropped []string
	)
	err := rm.store.Update(ctx, rm.cfg.Name, func(st *store.State) error {
		out = map[string]carved{}
		merged = nil
		local := rm.localNow()
		now := min(max(st.Clock, local+rm.offset.Load()), local+maxClockLead)
		lease := leaseOf(st)
		if lease == nil || lease.ID != leasePrefix+rm.id || lease.Seq != term || st.Epoch != rm.epoch {
			return errNotLeader
		}
		lease.Seen = now
		st.Version++
		st.Clock = now
		settings := rm.sharedSettings(st)
		pol := rm.policyAt(&settings, now)
		times := rm.sessionTimes(&settings)
		// An instance of the fleet is alive while it writes its mailbox:
		// its record is kept until its mailbox is older than the TTL,
		// however long the rounds take.
		for i := range st.Instances {
			in := &st.Instances[i]
			if mb := byID[in.ID]; mb != nil && !isLease(in.ID) {
				in.Seen = max(in.Seen, min(mb.Seen, now))
			}
		}
		var obs observations
		var due []store.Tally
		dropped = nil
		ids := make([]string, 0, len(st.Instances))
		for _, in := range st.Instances {
			ids = append(ids, in.ID)
		}
		for _, id := range ids {
			mb := byID[id]
			j := slices.IndexFunc(st.Instances, func(in store.Instance) bool { return in.ID == id })
			if mb == nil || j < 0 || mb.Seq <= st.Instances[j].Seq || mb.Seen+rm.instanceTTL() < now {
				continue // no news, or an instance in classic syncs
			}
			applied := st.Instances[j].Seq
			d := newDelta()
			for _, w := range mb.Batches {
				if w.Seq > applied {
					d.add(w.delta())
				}
			}
			held := mb.Held
			if g := mb.pendingGrant(); g != nil {
				held = max(held, g.total())
			}
			p := rm.params(now)
			p.id, p.seq, p.held = id, mb.Seq, held
			p.settings, p.policy, p.times = settings, pol, times
			g, v := applySync(st, p, d)
			obs.waits = append(obs.waits, v.observed.waits...)
			obs.sessions = append(obs.sessions, v.observed.sessions...)
			obs.abandoned += v.observed.abandoned
			due = append(due, v.due...)
			dropped = append(dropped, v.dropped...)
			out[id] = carved{g: g, base: mb.Seq, applied: mb.Seq, fair: v.fair}
			merged = v
		}
		if merged == nil {
			return errReadOnly // nobody had news: nothing to write
		}
		merged.observed, merged.due = obs, due
		f.peers, _ = fleetPeers(st, rm.id)
		if len(f.peers) < fleetMin/2 || !merged.current {
			// An instance that does not sync the fleet way joined, or
			// the fleet shrank to half the size that takes a lease: the
			// lease ends, every instance falls back to classic syncs.
			st.Instances = slices.DeleteFunc(st.Instances, func(in store.Instance) bool { return isLease(in.ID) })
		}
		version, epoch = st.Version, st.Epoch
		pub = *st
		pub.Instances = nil
		if l := leaseOf(st); l != nil {
			vl := *l
			vl.Traffic = float64(len(f.peers))
			pub.Instances = []store.Instance{vl}
		}
		pub.Sessions = slices.Clone(st.Sessions)
		pub.Waiting = slices.Clone(st.Waiting)
		pub.Admitted = slices.Clone(st.Admitted)
		pub.Tallies = cloneTallies(st.Tallies)
		return nil
	})
	if errors.Is(err, errReadOnly) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("waitingroom: aggregator round: %w", err)
	}
	rm.afterSync(ctx, merged)
	rm.noteGone(dropped)
	rm.eachPeer(peers, func(i int) {
		c, ok := out[peers[i]]
		if !ok {
			return
		}
		_ = rm.store.Update(ctx, mailboxKey(rm.cfg.Name, peers[i]), func(st *store.State) error {
			mb := readMailbox(st)
			if mb.Term != term || mb.Version >= version {
				return errReadOnly
			}
			mb.Acked = max(mb.Acked, c.applied)
			if c.g != nil {
				mb.Grant = mb.Grant[:0]
				for _, e := range c.g {
					mb.Grant = append(mb.Grant, [2]int64{e.bucket, e.n})
				}
				mb.Version, mb.Base, mb.Epoch, mb.Fair = version, c.base, epoch, c.fair
			}
			mb.write(st)
			return nil
		})
	})
	err = rm.store.Update(ctx, viewKey(rm.cfg.Name), func(st *store.State) error {
		if st.Epoch == pub.Epoch && st.Version >= pub.Version {
			return errReadOnly
		}
		*st = pub
		return nil
	})
	if errors.Is(err, errReadOnly) {
		return nil
	}
	return err
}

// eachPeer calls fn for every index of peers, fleetWorkers at a time.
func (rm *Room) eachPeer(peers []string, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(fleetWorkers, len(peers)) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range peers {
		next <- i
	}
	close(next)
	wg.Wait()
}

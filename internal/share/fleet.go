package share

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-waitingroom/waitingroom/store"
)

// Syncing a fleet. The classic sync (sync.go) reads and rewrites the whole
// shared state, which holds a record per instance, once per instance per
// interval: its cost per sync grows with the fleet, and past a few
// hundred syncs a second the store cannot keep up. Once FleetMin
// instances are live, the room syncs through an aggregator instead:
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
// A new instance joins without a classic sync when it can: it installs
// the view, writes its mailbox and names itself in a join record (one of
// joinShards), which the aggregator reads every round to bring it into the
// state; when no view is out yet but the state shows a fleet forming, it
// waits one sync for it. A lease not renewed for an instance TTL is taken
// over by one or two instances (takesOver), not by the whole fleet
// falling back.
//
// The room falls back to classic syncs, instance by instance, whenever the
// fleet path cannot vouch for itself: at an instance's first sync when
// there is no fleet to join, when the lease or the view is older than the
// instance TTL (the aggregator stopped), when the view's epoch is not the
// one the instance knows (the state was lost), and when the instance's
// batches stopped being applied for the instance TTL. A classic sync takes
// the lease when nobody holds a live one and FleetMin instances are live.

// fleetWorkers bounds the mailbox reads and writes an aggregator has in
// flight.
const fleetWorkers = 32

// errFleetFallback makes Sync fall back to a classic sync.
var errFleetFallback = errors.New("waitingroom: fleet sync not possible; classic sync")

// errNotLeader aborts an aggregator's round: another holds the lease.
var errNotLeader = errors.New("waitingroom: the lease is another instance's")

// errMailboxLost aborts the write of a mailbox that the store lost: the
// state may be lost too, which a classic sync finds out.
var errMailboxLost = errors.New("waitingroom: the fleet mailbox was lost")

// errReadOnly aborts an Update that only reads.
var errReadOnly = errors.New("waitingroom: read only")

// MailboxKey is the store key of the mailbox of instance id in room.
func MailboxKey(room, id string) string { return room + "#fleet:" + id }

// ViewKey is the store key of the fleet's view of room.
func ViewKey(room string) string { return room + "#fleet-view" }

// joinKey is the name of the join record id names itself in: one of
// joinShards, so that a fleet starting at once does not contend for one.
func joinKey(room, id string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return joinShard(room, int(h.Sum32()%joinShards))
}

func joinShard(room string, i int) string { return room + "#fleet-join:" + strconv.Itoa(i) }

// joinShards is how many join records a room has; the aggregator reads
// them all every round.
const joinShards = 16

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
	// mailboxAt is when (local ms) the instance last wrote its mailbox
	// (or the state, by a classic sync): the aggregator drops the record
	// of an instance whose mailbox is older than the instance TTL.
	mailboxAt int64
	// viewAt is when (local ms) the latest view was installed, or the
	// instance joined the fleet.
	viewAt int64
	// lease is the lease of the latest view (its Fleet the fleet's size):
	// when it stops being renewed, an instance or two take the lease over
	// (takeOver).
	lease store.Lease
	// waited reports that the instance, new, found a fleet forming and
	// waited a sync for its view (forming); named that it is named in a
	// join record.
	waited, named bool
	// namedAt is when (local ms) it last named itself in a join record.
	namedAt int64
	// wroteAt is when (shared-clock ms) it last wrote its mailbox.
	wroteAt int64
	// wrote reports that the instance wrote its mailbox since its latest
	// classic sync: a mailbox missing then was lost (a store restarted
	// empty, or emptied), and the state with it, likely.
	wrote bool
	// viewed reports that the latest sync installed a view (for Stats).
	viewed bool
	// adopted is the Version of the latest grant adopted: a mailbox that
	// went back with the store may offer an older one again.
	adopted uint64
	// back are, as aggregator, the instances whose mailbox has yet to be
	// told that the state went back without some of their batches.
	back map[string]goneBack
	// roundVersion is the state's Version this instance's latest round
	// committed: a state below it went back.
	roundVersion uint64
	// reserved is the newest bucket the reserve of this instance's latest
	// round covered (picks.go), 0 for none: a state that went back to
	// before it has it again (params.reserved).
	reserved int64
}

type usedBatch struct {
	seq  uint64
	used map[int64]int64
}

// goneBack is what an aggregator found a state that went back lacks of
// an instance's batches: those numbered above had up to upto.
type goneBack struct{ had, upto uint64 }

// mailboxOf returns a copy of the mailbox in st (the zero Mailbox for
// none), for an Update of it to change and write.
func mailboxOf(st *store.State) store.Mailbox {
	if st.Mailbox == nil {
		return store.Mailbox{}
	}
	return *st.Mailbox
}

// writeMailbox leaves mb in st, the state of a mailbox.
func writeMailbox(st *store.State, mb store.Mailbox) {
	st.Mailbox = &mb
	st.Version++
	if st.Epoch == 0 {
		st.Epoch = 1
	}
}

// pendingGrant reports the grant carved for the mailbox's instance and
// not adopted, if any.
func pendingGrant(mb *store.Mailbox) Grant {
	if mb.Version <= mb.Adopted || mb.Grant == nil {
		return nil
	}
	g := make(Grant, len(mb.Grant))
	for i, e := range mb.Grant {
		g[i] = GrantEntry{Bucket: e.Key, N: e.N}
	}
	return g
}

// toBatch is b as a mailbox carries it.
func toBatch(b batch) store.Batch {
	w := store.Batch{Seq: b.seq, Attempts: b.d.attempts}
	for _, x := range b.d.sessions {
		w.Sessions = append(w.Sessions, x)
	}
	slices.SortFunc(w.Sessions, func(x, y store.Session) int { return cmp.Compare(x.ID, y.ID) })
	for k, n := range b.d.waiting {
		if n != 0 {
			w.Waiting = append(w.Waiting, store.Cell{Bucket: k.bucket, Slot: k.slot, N: n})
		}
	}
	for id, ms := range b.d.waits {
		w.Waits = append(w.Waits, store.Count{Key: int64(id), N: ms})
	}
	for id, a := range b.d.asks {
		w.Asks = append(w.Asks, store.Ask{Visitor: id, Bucket: a.bucket, Until: a.until})
	}
	return w
}

// batchDelta is the delta of a mailbox's batch.
func batchDelta(w *store.Batch) *delta {
	d := newDelta()
	for _, x := range w.Sessions {
		d.session(x)
	}
	for _, c := range w.Waiting {
		d.waiting[cellKey{c.Bucket, c.Slot}] += c.N
	}
	for _, x := range w.Waits {
		d.wait(uint64(x.Key), x.N)
	}
	for _, a := range w.Asks {
		d.ask(a.Visitor, a.Bucket, a.Until)
	}
	d.attempts = w.Attempts
	return d
}

// fleetPeers returns the instances of st, and the term of the lease id
// holds (0 for none).
func fleetPeers(st *store.State, id string) ([]string, uint64) {
	var peers []string
	for _, in := range st.Instances {
		peers = append(peers, in.ID)
	}
	var term uint64
	if l := st.Lease; l != nil && l.Holder == id {
		term = l.Term
	}
	return peers, term
}

// takeLease records a lease for this instance in st when nobody holds a
// live one (applySync dropped an expired one) and FleetMin instances are
// live.
func (s *Syncer[S]) takeLease(st *store.State, now int64, leaving bool) {
	if leaving || st.Lease != nil || len(st.Instances) < s.cfg.FleetMin {
		return
	}
	st.Lease = &store.Lease{Holder: s.cfg.ID, Term: st.Version, Renewed: now}
}

// fleetSync is Sync the fleet way: the mailbox, the round if this
// instance holds the lease, the view. It returns errFleetFallback, with
// nothing lost, when a classic sync must be made instead. Leaving, it
// writes the instance's last batch to its mailbox marked Left (the next
// round applies it and removes the instance's record), runs that round
// if the instance holds the lease, and reads no view.
func (s *Syncer[S]) fleetSync(ctx context.Context, leaving bool) error {
	f := &s.fleet
	f.viewed = false
	local := s.LocalNow()
	// A new instance joins a fleet that syncs through an aggregator
	// without a classic sync: it installs the view (the epoch, the clock,
	// the settings), leaves its counts in its mailbox and names itself in
	// a join record, which the aggregator empties every round. It has no
	// grant until the aggregator carves one.
	joining := !f.on && f.classicVersion == 0
	if joining && leaving {
		return errFleetFallback // no record to remove: the classic sync applies what it let in
	}
	if joining {
		viewErr := s.readView(ctx)
		if err := ctx.Err(); err != nil {
			return s.syncFailed(ctx, err) // cancelled (Close) or timed out: no other way either
		}
		if viewErr != nil || s.epoch.Load() == 0 {
			f.on = false
			// No fleet's view: a fleet may be forming. The instance
			// waits for it once (its counts stay pending), else joins
			// the state by a classic sync.
			if !f.waited && s.forming(ctx) {
				f.waited = true
				return nil
			}
			return errFleetFallback
		}
		f.on, f.ackedAt, f.mailboxAt = true, local, local
	}
	if !f.on || local-f.ackedAt > s.fleetPatience() {
		if f.on {
			s.cfg.Log.Debug("waitingroom: classic sync: no round acknowledged this instance's mailbox within its patience")
		}
		f.on = false
		return errFleetFallback
	}
	if local-f.mailboxAt > s.instanceTTL() {
		// Its mailbox writes have failed for longer than the instance
		// TTL: the aggregator has dropped its record (and given its
		// grant to others). A classic sync brings it back into the
		// state, and finds out whether the state went back meanwhile.
		s.cfg.Log.Debug("waitingroom: classic sync: this instance's mailbox was not written for an instance TTL")
		f.on = false
		return errFleetFallback
	}
	s.local.mu.Lock()
	d := s.local.pending
	s.local.pending = newDelta()
	s.seq++
	b := batch{seq: s.seq, d: d}
	s.unacked = append(s.unacked, b)
	if s.local.inflight == nil {
		s.local.inflight = map[int64]int64{}
	}
	f.used = append(f.used, usedBatch{seq: s.seq, used: s.local.inflight})
	s.local.inflight = map[int64]int64{}
	// Of a grant it adopts, the instance keeps its fair share or what it
	// is likely to need until the next (about one and a half intervals of
	// the last one's attempts), whichever is more: the rest goes back to
	// the pool at the next round. Until then it keeps its budget.
	need := 1 + d.attempts + d.attempts/2
	budget := s.local.grant.Total()
	s.local.mu.Unlock()

	started := time.Now()
	defer func() { s.nanos.Store(int64(time.Since(started))) }()
	s.syncs.Add(1)

	now := local + s.offset.Load()
	var (
		adopt   Grant
		base    uint64
		acked   uint64
		keep    int64
		back    *goneBack
		adopted uint64
	)
	err := s.cfg.Store.Update(ctx, MailboxKey(s.cfg.Name, s.cfg.ID), func(st *store.State) error {
		if st.Epoch == 0 && f.wrote {
			return errMailboxLost
		}
		mb := mailboxOf(st)
		// The mailbox says which of the instance's batches the state
		// applied as far as the instance knows, though the mailbox itself
		// went back with the store: an aggregator that finds the state's
		// record of the instance behind it knows the state went back.
		mb.Acked = max(mb.Acked, f.acked)
		adopt, base, acked, back = nil, 0, mb.Acked, nil
		if mb.Back {
			back = &goneBack{had: mb.Had, upto: mb.Upto}
			mb.Back, mb.Had, mb.Upto = false, 0, 0
		}
		held := budget
		mb.Adopted = max(mb.Adopted, f.adopted)
		if g := pendingGrant(&mb); leaving {
			mb.Left = true
		} else if g != nil && mb.Version > f.classicVersion && mb.Epoch == s.epoch.Load() {
			adopt, base = g, mb.Base
			// What may be admitted from this write on: admissions from
			// the budget while the write is on its way and what is kept
			// of the grant after it, which are charged to the grant
			// together (and the budget alone if the instance never
			// learns that the write committed).
			left := max(0, g.Total()-s.usedSince(base).total)
			keep = max(need, mb.Fair)
			if mb.Scarce {
				keep = 0 // its slots go back to the pool, for picks
			}
			held = min(budget+keep, left)
			mb.Adopted = mb.Version
		} else if g != nil {
			// A grant this instance will never adopt (carved before its
			// latest classic sync, or in another epoch) is not pending:
			// the aggregator carves it a new one (see aggregate).
			mb.Grant = nil
		}
		mb.Batches = mb.Batches[:0]
		for _, u := range s.unacked {
			if u.seq > mb.Acked {
				mb.Batches = append(mb.Batches, toBatch(u))
			}
		}
		mb.Seq, mb.Seen, mb.Held, mb.In, mb.Prev = s.seq, now, held, s.epoch.Load(), f.wroteAt
		adopted = mb.Adopted
		writeMailbox(st, mb)
		return nil
	})
	if errors.Is(err, errMailboxLost) {
		// Not waiting for the fleet's patience to run out: a classic
		// sync now finds out whether the state was lost with it (and
		// rebuilds it), while the batch waits in s.unacked.
		f.on = false
		s.cfg.Log.Debug("waitingroom: the fleet mailbox was lost; classic sync")
		return errFleetFallback
	}
	f.wrote = f.wrote || err == nil
	if err == nil {
		f.wroteAt, f.mailboxAt = now, local
	}
	if err == nil && leaving {
		// Named or not, it is gone.
	} else if err == nil && f.classicVersion == 0 && f.acked == 0 && !f.named {
		err = s.nameSelf(ctx, now)
		f.named, f.namedAt = err == nil, local
	} else if err == nil && f.acked > 0 && local-f.ackedAt > s.instanceTTL() && local-f.namedAt > s.instanceTTL() {
		// Its batches have not been applied for an instance TTL: the
		// aggregator may not know it any more (the state went back to a
		// version without its record, which a classic sync then
		// dropped as silent). It names itself again, once a TTL; the
		// aggregator brings it in as one the state went back on.
		if s.nameSelf(ctx, now) == nil {
			f.namedAt = local
		}
	}
	if err != nil {
		// The write failed: a store that is down, or one too loaded to
		// answer in time (on SQL, a pool whose connections are all
		// busy). The instance tries its mailbox again at its next sync,
		// as long as its latest write is within the instance TTL (see
		// above), rather than falling back to a classic sync at once: that would take the room's row lock
		// where the store is already short of time, and others would
		// follow. The batch stays in s.unacked and goes out with the
		// next write (the state applies it once, by its sequence
		// number, whichever way it comes). As after a failed classic
		// sync, nobody new is let in until the store answers again:
		// the aggregator may soon give this instance's share to others.
		// A joining instance has no grant and no record in the state
		// to keep alive: it, too, tries again rather than joining by a
		// classic sync, which, with a fleet starting at once on a
		// loaded store, feeds the wave the join avoids.
		s.local.mu.Lock()
		s.local.grant = nil
		s.local.mu.Unlock()
		return s.syncFailed(ctx, err)
	}
	for k, n := range b.d.waiting {
		s.mine.waiting[k] += n
	}
	s.local.mu.Lock()
	if adopt != nil {
		charge := s.usedSince(base)
		for k, n := range s.local.inflight {
			charge.byEntry[k] += n
			charge.total += n
		}
		adopt.charge(charge.byEntry)
		s.local.grant = adopt.keep(keep)
		f.adopted = max(f.adopted, adopted)
		f.used = slices.DeleteFunc(f.used, func(u usedBatch) bool { return u.seq <= base })
	}
	s.local.mu.Unlock()
	if acked > f.acked {
		f.acked, f.ackedAt = acked, local
		// The batches applied are kept for a waiting window, in case the
		// state goes back to a version without them (as a classic sync's).
		i := 0
		for i < len(s.unacked) && s.unacked[i].seq <= acked {
			i++
		}
		s.keepApplied(s.unacked[:i], now)
		s.unacked = slices.Delete(s.unacked, 0, i)
	}
	if back != nil {
		// The state went back without some of the batches it had
		// applied: what they brought in goes out again with the next
		// batch, with every session the instance knows (merging makes a
		// session reported twice count once). The aggregator that found
		// it set the grace meanwhile.
		s.local.mu.Lock()
		for _, a := range s.applied {
			if a.seq > back.had && a.seq <= back.upto {
				s.local.pending.add(a.d)
			}
		}
		s.local.known.Each(s.local.pending.session)
		s.local.mu.Unlock()
		s.cfg.Log.Warn("waitingroom: the shared state went back to an earlier version (the store lost writes it had acknowledged); this instance contributes its counts again", "had", back.had, "applied", back.upto)
	}
	if f.term == 0 && !leaving && s.takesOver(now) {
		s.takeOver(ctx, now)
	}
	if f.term != 0 {
		if err := s.aggregate(ctx); err != nil {
			s.cfg.Log.Debug("waitingroom: aggregator round failed", "err", err)
			if errors.Is(err, errNotLeader) {
				f.term, f.reserved = 0, 0
			}
		}
	}
	if joining || leaving {
		return nil // the view was read before the mailbox was written, or is not needed
	}
	return s.readView(ctx)
}

// nameSelf names this instance in its join record, at now.
func (s *Syncer[S]) nameSelf(ctx context.Context, now int64) error {
	return s.cfg.Store.Update(ctx, joinKey(s.cfg.Name, s.cfg.ID), func(st *store.State) error {
		st.Instances = slices.DeleteFunc(st.Instances, func(in store.Instance) bool {
			return in.ID == s.cfg.ID || in.Seen+s.instanceTTL() < now
		})
		st.Instances = append(st.Instances, store.Instance{ID: s.cfg.ID, Seen: now})
		st.Version++
		if st.Epoch == 0 {
			st.Epoch = 1
		}
		return nil
	})
}

// takesOver reports whether this instance is one of the few that take
// over the lease of the latest view when it has not been renewed for an
// instance TTL (its holder stopped): about two of the fleet's instances
// then (drawn by their IDs and the lease's term), twice as many every
// half TTL after that, so that one of them takes it well within the
// fleet's patience, and the fleet never contends for it all at once.
//
// The lease is judged as of the latest view read: an instance whose reads
// of the view fail (a loaded store) does not take an old view's lease for
// an unrenewed one.
func (s *Syncer[S]) takesOver(now int64) bool {
	l := s.fleet.lease
	ttl := s.instanceTTL()
	now = min(now, s.fleet.viewAt+s.offset.Load())
	late := now - l.Renewed - ttl
	if l.Holder == "" || l.Holder == s.cfg.ID || late < 0 {
		return false
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(s.cfg.ID))
	_, _ = h.Write(binary.LittleEndian.AppendUint64(nil, l.Term))
	n := uint64(max(l.Fleet, 1))
	return h.Sum64()%n < uint64(2)<<min(late/max(ttl/2, 1), 20)
}

// takeOver replaces the lease of the latest view with one of this
// instance's, if the state still holds it unrenewed, every instance syncs
// the fleet way and writes this release's formats, and the fleet is at
// least half the size that takes a lease. The new term is the state's
// next Version, above the old one's: the old holder can write neither the
// state nor a grant into a mailbox the new term has read (see aggregate),
// so taking over at any moment keeps grants exact.
func (s *Syncer[S]) takeOver(ctx context.Context, now int64) {
	old := s.fleet.lease
	var (
		peers []string
		term  uint64
	)
	err := s.cfg.Store.Update(ctx, s.cfg.Name, func(st *store.State) error {
		l := st.Lease
		if st.Epoch != s.epoch.Load() || l != nil && (l.Holder != old.Holder || l.Term != old.Term || l.Renewed > old.Renewed) {
			return errReadOnly // another state, or the lease moved on
		}
		ps, _ := fleetPeers(st, s.cfg.ID)
		if len(ps) < s.cfg.FleetMin/2 {
			return errReadOnly
		}
		st.Version++
		st.Lease = &store.Lease{Holder: s.cfg.ID, Term: st.Version, Renewed: now}
		peers, term = ps, st.Version
		return nil
	})
	if err != nil {
		if !errors.Is(err, errReadOnly) {
			s.cfg.Log.Debug("waitingroom: taking over the fleet's lease failed", "err", err)
		}
		return
	}
	s.cfg.Log.Info("waitingroom: took over the fleet's lease", "from", old.Holder, "term", term)
	s.fleet.term, s.fleet.peers = term, peers
}

// usage is admissions by grant entry and their total.
type usage struct {
	byEntry map[int64]int64
	total   int64
}

// usedSince returns the admissions made in the periods of the batches
// after base (not the current period's). Under s.mu or syncMu.
func (s *Syncer[S]) usedSince(base uint64) usage {
	u := usage{byEntry: map[int64]int64{}}
	for _, b := range s.fleet.used {
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
func (s *Syncer[S]) readView(ctx context.Context) error {
	st, err := s.read(ctx, ViewKey(s.cfg.Name))
	local := s.LocalNow()
	if err != nil && s.epoch.Load() != 0 && local-s.fleet.viewAt <= s.fleetPatience() {
		// A read that failed (on a loaded store, most often one that
		// timed out) leaves the view of the latest sync in place, as a
		// view not yet published does; the instance reads it again at
		// its next sync rather than falling back to a classic sync. The
		// sync failed all the same, and says so as a classic one does
		// (the error count, Ready, the outage's log lines): an
		// aggregator's round that outlived the sync's deadline (a store
		// that stopped answering mid-round) ends here.
		return s.syncFailed(ctx, fmt.Errorf("reading the fleet's view: %w", err))
	}
	if err != nil {
		if s.fleet.on {
			s.cfg.Log.Debug("waitingroom: classic sync: the fleet's view could not be read within the patience", "err", err)
		}
		s.fleet.on = false
		return errFleetFallback
	}
	if st.Epoch == 0 && local-s.fleet.viewAt <= s.fleetPatience() {
		// The aggregator has not published a view yet (its lease is
		// new): the counts went out, the view of the latest sync stays.
		return nil
	}
	now := max(st.Clock, local+s.offset.Load())
	lease := st.Lease
	if st.Epoch != s.epoch.Load() && s.epoch.Load() != 0 || lease == nil || lease.Renewed+s.fleetPatience() < now || now > local+MaxClockLead {
		if s.fleet.on {
			s.cfg.Log.Debug("waitingroom: classic sync: the fleet's view is of another state, has no lease, or its lease was not renewed within the patience")
		}
		s.fleet.on = false
		return errFleetFallback
	}
	s.fleet.viewAt, s.fleet.lease, s.fleet.viewed = local, *lease, true
	s.install(ctx, &st, now, local, int(lease.Fleet))
	// A classic sync that finds the state older than this view knows it
	// went back (the fleet's instances have no classic Version of late).
	s.version = max(s.version, st.Version)
	return nil
}

// install installs st, a view or a state read without writing it, as a
// classic sync installs the state it wrote, with no grant.
func (s *Syncer[S]) install(ctx context.Context, st *store.State, now, local int64, fleetSize int) {
	p := s.params(now)
	set, rules := s.settle(st, now)
	p.rules = rules
	_, v := applySync(st, p, newDelta())
	v.Instances = fleetSize
	v.Fleet = true
	v.Scarce = fleetScarce(&p, v)
	v.due, v.observed = nil, observations{}
	s.finish(ctx, p, v, set, st.Epoch, st.SettingsVersion, nil, func() {}, now-local)
}

// forming reports whether the room's state, read without a write, shows a
// fleet forming: a lease whose view is not out yet, or at least half the
// instances that take one, every one syncing the fleet way. A new
// instance then installs that state as its view and waits a sync for the
// aggregator's view, rather than joining the state by a classic sync
// together with the rest of a fleet starting at once (the wave that would
// keep the lease from being taken and the aggregator's rounds from
// committing).
func (s *Syncer[S]) forming(ctx context.Context) bool {
	var st store.State
	err := s.cfg.Store.Update(ctx, s.cfg.Name, func(s *store.State) error {
		st = *s
		return errReadOnly
	})
	if !errors.Is(err, errReadOnly) || st.Epoch == 0 {
		return false
	}
	peers, _ := fleetPeers(&st, s.cfg.ID)
	if len(peers) == 0 || len(peers) < s.cfg.FleetMin/2 && st.Lease == nil {
		return false
	}
	local := s.LocalNow()
	now := min(max(st.Clock, local+s.offset.Load()), local+MaxClockLead)
	s.install(ctx, &st, now, local, len(peers))
	return true
}

// read returns the state of key: with the store's read without a lock
// (store.Reader) when it has one, else with an Update whose function
// fails, which on SQL locks the row while it reads.
func (s *Syncer[S]) read(ctx context.Context, key string) (store.State, error) {
	if r, ok := s.cfg.Store.(store.Reader); ok {
		st, err := r.Read(ctx, key)
		if err != nil {
			return store.State{}, err
		}
		return *st, nil
	}
	var st store.State
	err := s.cfg.Store.Update(ctx, key, func(s *store.State) error {
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
func (s *Syncer[S]) noteGone(ids []string) {
	if len(ids) == 0 {
		return
	}
	if s.gone == nil {
		s.gone = map[string]int64{}
	}
	due := s.LocalNow() + s.fleetPatience() - s.instanceTTL()
	for _, id := range ids {
		if len(s.gone) >= maxGone {
			s.cfg.Log.Debug("waitingroom: too many fleet mailboxes to remove; some stay", "max", maxGone)
			return
		}
		if _, ok := s.gone[id]; !ok {
			s.gone[id] = due
		}
	}
}

// removeMailboxes removes the mailboxes noted gone whose time has come,
// each with an Update that leaves the zero State (sqlstore and memstore
// delete it; Redis lets it expire) if it has been silent for the fleet's
// patience; one written since is tried again once it has been. A
// mailbox whose Update fails is tried at the next sync; at most
// maxRemovals a sync. Under syncMu.
func (s *Syncer[S]) removeMailboxes(ctx context.Context) {
	local := s.LocalNow()
	var due []string
	for id, at := range s.gone {
		if at <= local && len(due) < maxRemovals {
			due = append(due, id)
		}
	}
	now := local + s.offset.Load()
	patience := s.fleetPatience()
	for _, id := range due {
		next := int64(0) // done
		err := s.cfg.Store.Update(ctx, MailboxKey(s.cfg.Name, id), func(st *store.State) error {
			next = 0
			if st.Epoch == 0 {
				return errReadOnly // no mailbox
			}
			if mb := mailboxOf(st); mb.Seen+patience >= now {
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
			delete(s.gone, id)
		} else {
			s.gone[id] = next
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
func (s *Syncer[S]) fleetPatience() int64 { return fleetLeaseTTLs * s.instanceTTL() }

// fleetLeaseTTLs is how many instance TTLs a lease outlives its latest
// renewal: as long as the instances' patience, so that an aggregator whose
// rounds a wave of classic syncs slows down keeps its lease.
const fleetLeaseTTLs = 3

// params are the sync parameters that do not depend on the state.
func (s *Syncer[S]) params(now int64) params {
	return params{
		now:          now,
		id:           s.cfg.ID,
		seq:          s.seq,
		waitWindow:   s.cfg.WaitWindow,
		syncInterval: max(s.cfg.SyncInterval, 0).Milliseconds(),
		instanceTTL:  s.instanceTTL(),
		dueWindow:    s.cfg.WaitWindow/2 + dueMargin,
		history:      s.history,
		scarceBelow:  fleetScarceBelow,
	}
}

// aggregate runs one round of the aggregator: every fleet instance's
// mailbox read (and fenced with this lease's term), their new batches
// applied and their grants carved in one Update of the shared state,
// the grants written to the mailboxes, the view published.
func (s *Syncer[S]) aggregate(sctx context.Context) error {
	// The round may take longer than an instance's sync: a wave of
	// classic syncs (a fleet starting) contends for the state. It ends
	// with the sync's context when that is cancelled (Close).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(sctx), 2*SyncTimeout(max(s.cfg.SyncInterval, time.Second)))
	defer cancel()
	defer context.AfterFunc(sctx, func() {
		if errors.Is(sctx.Err(), context.Canceled) {
			cancel()
		}
	})()
	f := &s.fleet
	term := f.term
	joiners := s.joiners(ctx, f.peers)
	joining := make(map[string]bool, len(joiners))
	for _, id := range joiners {
		joining[id] = true
	}
	peers := append(slices.Clone(f.peers), joiners...)
	boxes := make([]*store.Mailbox, len(peers))
	s.eachPeer(peers, func(i int) {
		_ = s.cfg.Store.Update(ctx, MailboxKey(s.cfg.Name, peers[i]), func(st *store.State) error {
			if st.Epoch == 0 {
				// No mailbox: one the store lost (emptied, restarted
				// without its data). Stamping it would recreate it, and
				// its instance would not find it lost at its next write
				// (errMailboxLost), going on through a fleet whose state
				// is gone until its patience ran out.
				return errReadOnly
			}
			mb := mailboxOf(st)
			if mb.Term > term {
				return errNotLeader
			}
			boxes[i] = &mb
			if mb.Term == term {
				return errReadOnly
			}
			mb.Term = term
			writeMailbox(st, mb)
			return nil
		})
	})
	byID := make(map[string]*store.Mailbox, len(peers))
	for i, mb := range boxes {
		if mb != nil {
			byID[peers[i]] = mb
		}
	}

	type carved struct {
		g       Grant
		base    uint64
		applied uint64
		fair    int64
		scarce  bool
	}
	var (
		out      map[string]carved
		version  uint64
		epoch    uint64
		pub      store.State
		merged   *View
		dropped  []string
		gone     map[string]goneBack
		wentBack bool
	)
	err := s.cfg.Store.Update(ctx, s.cfg.Name, func(st *store.State) error {
		out = map[string]carved{}
		merged = nil
		local := s.LocalNow()
		now := min(max(st.Clock, local+s.offset.Load()), local+MaxClockLead)
		lease := st.Lease
		if lease == nil || lease.Holder != s.cfg.ID || lease.Term != term || st.Epoch != s.epoch.Load() {
			return errNotLeader
		}
		lease.Renewed = now
		// The state went back since this aggregator's latest round (a
		// failover, a restart from an older dump): the mailboxes did too.
		wentBack = st.Version < f.roundVersion
		// A mailbox holds a grant carved at a Version the state is below:
		// the state went back. Its Version goes on from the newest
		// carved, so that every grant this round carves is newer than
		// any in a mailbox (the mailboxes take none older than theirs).
		for _, mb := range byID {
			if mb.Epoch == st.Epoch {
				wentBack = wentBack || st.Version < max(mb.Version, mb.Adopted)
				st.Version = max(st.Version, mb.Version, mb.Adopted)
			}
		}
		st.Version++
		st.Clock = now
		_, rules := s.settle(st, now)
		// An instance of the fleet is alive while it writes its mailbox:
		// its record is kept until its mailbox is older than the TTL,
		// however long the rounds take.
		for i := range st.Instances {
			in := &st.Instances[i]
			if mb := byID[in.ID]; mb != nil {
				in.Seen = max(in.Seen, min(mb.Seen, now))
			}
		}
		// A state whose record of an instance is behind the batches its
		// mailbox says were applied went back (the store lost writes it
		// had acknowledged): that instance is told to send again what
		// the state lacks, and nobody is granted a slot until every
		// instance has had the time to (the grace, as a classic sync
		// that finds the state went back sets it).
		// A live instance of this epoch that the state has no record of
		// although its batches were applied, and that did not stop
		// writing its mailbox for an instance TTL (it cannot have been
		// dropped as silent), went back the same way (to before it
		// joined, or to a version a later sync dropped it from as
		// silent): it is brought in again. One that did stop is brought
		// in as it names itself again, as a joining instance.
		back := maps.Clone(f.back)
		lacks := func(id string, had, upto uint64) {
			if b, ok := back[id]; ok {
				had, upto = min(b.had, had), max(b.upto, upto)
			}
			if back == nil {
				back = map[string]goneBack{}
			}
			back[id] = goneBack{had: had, upto: upto}
			st.Grace = max(st.Grace, now+s.graceAfterGap())
		}
		recorded := make(map[string]bool, len(st.Instances))
		for _, in := range st.Instances {
			recorded[in.ID] = true
			if mb := byID[in.ID]; mb != nil && !mb.Left && in.Seq < mb.Acked && mb.Seen+s.instanceTTL() >= now {
				lacks(in.ID, in.Seq, mb.Acked)
			}
		}
		var unrecorded []string
		for _, id := range peers {
			// One this aggregator dropped as silent itself was silent,
			// though it wrote again since (a write that committed late,
			// after a round read its mailbox): it joins again.
			_, silent := s.gone[id]
			if mb := byID[id]; mb != nil && !mb.Left && !recorded[id] && !silent && mb.In == st.Epoch && mb.Acked > 0 && mb.Seen+s.instanceTTL() >= now &&
				mb.Prev != 0 && mb.Seen-mb.Prev <= s.instanceTTL() {
				lacks(id, 0, mb.Acked)
				unrecorded = append(unrecorded, id)
			}
		}
		dropped = nil
		ids := make([]string, 0, len(st.Instances)+len(joiners))
		present := make(map[string]bool, len(st.Instances))
		applied := make(map[string]uint64, len(st.Instances))
		for _, in := range st.Instances {
			ids = append(ids, in.ID)
			present[in.ID] = true
			applied[in.ID] = in.Seq
		}
		for _, id := range append(joiners, unrecorded...) {
			if !present[id] {
				ids = append(ids, id)
			}
		}
		// Every instance's news is merged into the state at once, then
		// each is carved a grant (applyRound): one pass over the state
		// whatever the fleet's size.
		var members []member
		var ds []*delta
		for _, id := range ids {
			mb := byID[id]
			if mb != nil && mb.Left {
				// Closing: its last batch is applied if it was not, and
				// its record removed, however long ago it wrote.
				if present[id] && mb.In == st.Epoch {
					md := newDelta()
					for i := range mb.Batches {
						if mb.Batches[i].Seq > applied[id] {
							md.add(batchDelta(&mb.Batches[i]))
						}
					}
					ds = append(ds, md)
					members = append(members, member{id: id, seq: max(mb.Seq, applied[id]), leaving: true})
				}
				continue
			}
			if mb == nil || mb.Seen+s.instanceTTL() < now {
				continue // an instance in classic syncs, or gone
			}
			if !present[id] && (mb.In != st.Epoch || !joining[id] && !slices.Contains(unrecorded, id)) {
				// Not in the state: it joins through its mailbox, and
				// only the state it joined (another's counts were
				// counted in a state that is lost; it rebuilds that
				// with a classic sync).
				continue
			}
			if mb.Seq <= applied[id] {
				continue // no news, or a classic sync applied it
			}
			md := newDelta()
			for i := range mb.Batches {
				if mb.Batches[i].Seq > applied[id] {
					md.add(batchDelta(&mb.Batches[i]))
				}
			}
			ds = append(ds, md)
			// A grant carved and not adopted yet counts as held. One
			// carved from an earlier write than the latest (it reached
			// the mailbox after the instance wrote again) is the
			// instance's to adopt at its next write, charged with every
			// admission since that earlier write: this round carves
			// nothing for it. A grant carved now would be charged only
			// from the latest write, and the admissions in between,
			// which the state counts from this round on, would be
			// counted twice as held and once as admitted, and admitted
			// again from the new grant (31 in a minute of 30, at the
			// start of a surge).
			held := mb.Held
			pending := pendingGrant(mb)
			if pending != nil {
				held = max(held, pending.Total())
			}
			members = append(members, member{id: id, seq: mb.Seq, held: held, attempts: md.attempts,
				noCarve: pending != nil && mb.Base < mb.Seq})
		}
		if len(members) == 0 {
			return errReadOnly // nobody had news: nothing to write
		}
		p := s.params(now)
		p.id, p.round = "", true
		p.keepSilent = wentBack || s.keepSilent(local)
		p.reserved = f.reserved
		p.rules = rules
		cs, v := applyRound(st, p, members, ds)
		for i, m := range members {
			out[m.id] = carved{g: cs[i].g, base: m.seq, applied: m.seq, fair: cs[i].fair, scarce: cs[i].scarce}
		}
		dropped = v.dropped
		merged = v
		f.peers, _ = fleetPeers(st, s.cfg.ID)
		if len(f.peers) < s.cfg.FleetMin/2 {
			// The fleet shrank to half the size that takes a lease: the
			// lease ends, every instance falls back to classic syncs.
			st.Lease = nil
		}
		version, epoch = st.Version, st.Epoch
		pub = viewOf(st, len(f.peers))
		gone = back
		return nil
	})
	if errors.Is(err, errReadOnly) {
		return nil
	}
	if err != nil {
		s.steadySince = -1
		return fmt.Errorf("waitingroom: aggregator round: %w", err)
	}
	if wentBack {
		s.steadySince = s.LocalNow()
	}
	f.roundVersion = version
	f.reserved = 0
	if pub.Reserve != nil {
		f.reserved = pub.Reserve.Upto
	}
	s.afterSync(ctx, merged)
	for id := range out {
		delete(s.gone, id) // in the state again: not gone
	}
	s.noteGone(dropped)
	// The instances the state went back on are told so in their
	// mailboxes; those whose mailbox is not written are told at the next
	// round.
	var backMu sync.Mutex
	f.back = maps.Clone(gone)
	s.eachPeer(peers, func(i int) {
		c, ok := out[peers[i]]
		if !ok {
			return
		}
		b, isBack := gone[peers[i]]
		err := s.cfg.Store.Update(ctx, MailboxKey(s.cfg.Name, peers[i]), func(st *store.State) error {
			mb := mailboxOf(st)
			if mb.Term != term || mb.Version >= version {
				return errReadOnly
			}
			if isBack {
				if mb.Back {
					b = goneBack{had: min(b.had, mb.Had), upto: max(b.upto, mb.Upto)}
				}
				mb.Back, mb.Had, mb.Upto = true, b.had, b.upto
			}
			mb.Acked = max(mb.Acked, c.applied)
			if c.g != nil {
				mb.Grant = make([]store.Count, 0, len(c.g))
				for _, e := range c.g {
					mb.Grant = append(mb.Grant, store.Count{Key: e.Bucket, N: e.N})
				}
				mb.Version, mb.Base, mb.Epoch, mb.Fair, mb.Scarce = version, c.base, epoch, c.fair, c.scarce
			}
			writeMailbox(st, mb)
			return nil
		})
		if err == nil && isBack {
			backMu.Lock()
			delete(f.back, peers[i])
			backMu.Unlock()
		}
	})
	return s.publish(ctx, pub)
}

// viewOf returns the view of st: a copy without the instance records,
// whose lease carries the fleet's size.
func viewOf(st *store.State, fleet int) store.State {
	pub := *st
	pub.Instances = nil
	if st.Lease != nil {
		l := *st.Lease
		l.Fleet = int64(fleet)
		pub.Lease = &l
	}
	if st.Reserve != nil {
		r := *st.Reserve
		pub.Reserve = &r
	}
	pub.Picks = slices.Clone(st.Picks)
	pub.Sessions = slices.Clone(st.Sessions)
	pub.Waiting = slices.Clone(st.Waiting)
	pub.Admitted = slices.Clone(st.Admitted)
	pub.Tallies = cloneTallies(st.Tallies)
	return pub
}

// publish writes pub as the room's view unless a newer one is there.
func (s *Syncer[S]) publish(ctx context.Context, pub store.State) error {
	err := s.cfg.Store.Update(ctx, ViewKey(s.cfg.Name), func(st *store.State) error {
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

// joiners returns the instances named in the room's join records and not
// among known (the fleet instances in the state), and empties the records
// of those that are known or gone: an instance stays named until a round
// has brought it into the state, and a round that fails loses nobody.
func (s *Syncer[S]) joiners(ctx context.Context, known []string) []string {
	in := make(map[string]bool, len(known))
	for _, id := range known {
		in[id] = true
	}
	now := s.Now()
	ttl := s.instanceTTL()
	keys := make([]string, joinShards)
	for i := range keys {
		keys[i] = joinShard(s.cfg.Name, i)
	}
	var (
		mu  sync.Mutex
		all []store.Instance
	)
	s.eachPeer(keys, func(i int) {
		var named []store.Instance
		err := s.cfg.Store.Update(ctx, keys[i], func(st *store.State) error {
			n := len(st.Instances)
			st.Instances = slices.DeleteFunc(st.Instances, func(x store.Instance) bool {
				return in[x.ID] || x.Seen+ttl < now
			})
			named = slices.Clone(st.Instances)
			if len(st.Instances) == n {
				return errReadOnly
			}
			st.Version++
			return nil
		})
		if err == nil || errors.Is(err, errReadOnly) {
			mu.Lock()
			all = append(all, named...)
			mu.Unlock()
		}
	})
	// In the order they joined, as classic syncs would have brought them.
	slices.SortFunc(all, func(a, b store.Instance) int { return cmp.Or(cmp.Compare(a.Seen, b.Seen), strings.Compare(a.ID, b.ID)) })
	out := make([]string, 0, len(all))
	for _, x := range all {
		if !in[x.ID] {
			in[x.ID] = true // named in two records: once
			out = append(out, x.ID)
		}
	}
	return out
}

// eachPeer calls fn for every index of peers, fleetWorkers at a time.
func (s *Syncer[S]) eachPeer(peers []string, fn func(i int)) {
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

package share

import (
	"context"
	"slices"
	"time"

	"github.com/go-waitingroom/waitingroom/store"
)

// Syncing a fleet. The classic sync (classic.go) reads and rewrites the whole
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

// fleetState is what an instance knows of the fleet protocol; under
// Syncer.mu.
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
	// brought is the latest of this instance's batches when a classic
	// sync that found the state lost or gone back brought them in again:
	// an aggregator's word that the state lacks batches up to it, from a
	// round that read the state before that sync, is no news (resend).
	brought uint64
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

// usage is admissions by grant entry and their total.
type usage struct {
	byEntry map[int64]int64
	total   int64
}

// usedSince returns the admissions made in the periods of the batches
// after base (not the current period's). Under s.mu.
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

// fleetPatience is how long, in ms, an instance of a fleet goes on
// syncing through the aggregator without news of it (a view, its batches
// applied) before it falls back to classic syncs: three instance TTLs, so
// that an aggregator slowed down by a wave of classic syncs (a fleet
// starting, every instance joining the state) is not swamped by more of
// them. Its grants are safe meanwhile, and its batches wait in mailboxes.
func (s *Syncer[S]) fleetPatience() int64 { return fleetLeaseTTLs * s.instanceTTL() }

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

// fleetSync is Sync the fleet way: the mailbox, the round if this
// instance holds the lease, the view. It returns classic, with nothing
// lost, when a classic sync must be made instead. Leaving, it writes the
// instance's last batch to its mailbox marked Left (the next round
// applies it and removes the instance's record), runs that round if the
// instance holds the lease, and reads no view.
func (s *Syncer[S]) fleetSync(ctx context.Context, leaving bool) (step, error) {
	f := &s.fleet
	f.viewed = false
	local := s.LocalNow()
	joining := !f.on && f.classicVersion == 0
	if joining && leaving {
		return classic, nil // no record to remove: the classic sync applies what it let in
	}
	if joining {
		if next, err := s.join(ctx, local); next != onward {
			return next, err
		}
	}
	if !s.fleetLive(local) {
		f.on = false
		return classic, nil
	}
	w := s.nextBatch(leaving)
	started := time.Now()
	defer func() { s.nanos.Store(int64(time.Since(started))) }()
	s.syncs.Add(1)
	w.now = local + s.offset.Load()
	wrote, err := s.update(ctx, MailboxKey(s.cfg.Name, s.cfg.ID), func(st *store.State) bool {
		return s.fillMailbox(st, w)
	})
	if w.lost && err == nil {
		// Not waiting for the fleet's patience to run out: a classic
		// sync now finds out whether the state was lost with it (and
		// rebuilds it), while the batch waits in s.unacked.
		f.on = false
		s.cfg.Log.Debug("waitingroom: the fleet mailbox was lost; classic sync")
		return classic, nil
	}
	if err = s.wroteMailbox(ctx, wrote, err, w, local); err != nil {
		return done, err
	}
	s.adopt(w)
	s.acknowledge(w.acked, w.now, local)
	s.resend(w.back)
	s.lead(ctx, w.now, leaving)
	if joining || leaving {
		return done, nil // the view was read before the mailbox was written, or is not needed
	}
	return s.readView(ctx)
}

// fleetLive reports whether the fleet path can vouch for itself at local
// (ms): the latest sync found the fleet, a round acknowledged the
// instance's mailbox within its patience, and its mailbox was written
// within the instance TTL.
func (s *Syncer[S]) fleetLive(local int64) bool {
	f := &s.fleet
	if !f.on || local-f.ackedAt > s.fleetPatience() {
		if f.on {
			s.cfg.Log.Debug("waitingroom: classic sync: no round acknowledged this instance's mailbox within its patience")
		}
		return false
	}
	if local-f.mailboxAt > s.instanceTTL() {
		// Its mailbox writes have failed for longer than the instance
		// TTL: the aggregator has dropped its record (and given its
		// grant to others). A classic sync brings it back into the
		// state, and finds out whether the state went back meanwhile.
		s.cfg.Log.Debug("waitingroom: classic sync: this instance's mailbox was not written for an instance TTL")
		return false
	}
	return true
}

// mailboxWrite is one write of the instance's mailbox: what goes in
// (the batch, what the instance needs and holds) and what comes out (the
// grant it adopts, what the state applied, whether it went back).
type mailboxWrite struct {
	b       batch
	leaving bool
	now     int64 // shared-clock ms
	// need is what the instance is likely to need until its next write;
	// budget, what it holds of its grant now.
	need, budget int64

	adopt   Grant  // the grant adopted, nil for none
	base    uint64 // the batch whose write the grant was carved from
	keep    int64  // what the instance keeps of it
	adopted uint64 // the Version of the latest grant adopted
	acked   uint64 // the latest of the instance's batches the state applied
	// back is what a state that went back lacks of the instance's
	// batches, nil if it did not.
	back *goneBack
	// lost reports a mailbox the store lost since the instance wrote it.
	lost bool
}

// nextBatch takes the pending reports out as the next numbered batch, to
// go to the mailbox with those not known to have been applied, and starts
// counting the admissions of the next period.
func (s *Syncer[S]) nextBatch(leaving bool) *mailboxWrite {
	f := &s.fleet
	l := s.local
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.pending
	l.pending, l.queued = newDelta(), nil
	s.seq++
	b := batch{seq: s.seq, d: d, carries: s.carry}
	s.carry = goneBack{}
	s.unacked = append(s.unacked, b)
	s.noteSent()
	if l.inflight == nil {
		l.inflight = map[int64]int64{}
	}
	f.used = append(f.used, usedBatch{seq: s.seq, used: l.inflight})
	l.inflight = map[int64]int64{}
	// Of a grant it adopts, the instance keeps its fair share or what it
	// is likely to need until the next (about one and a half intervals of
	// the last one's attempts), whichever is more: the rest goes back to
	// the pool at the next round. Until then it keeps its budget.
	return &mailboxWrite{b: b, leaving: leaving, need: 1 + d.attempts + d.attempts/2, budget: l.grant.Total()}
}

// fillMailbox writes w into the instance's mailbox st: its batches not
// known to have been applied, its sequence number, what it holds, and the
// grant it adopts, if one is pending. It reports false, and w.lost, when
// the mailbox the instance wrote is gone.
func (s *Syncer[S]) fillMailbox(st *store.State, w *mailboxWrite) bool {
	f := &s.fleet
	w.lost = st.Epoch == 0 && f.wrote
	if w.lost {
		return false
	}
	mb := mailboxOf(st)
	// The mailbox says which of the instance's batches the state
	// applied as far as the instance knows, though the mailbox itself
	// went back with the store: an aggregator that finds the state's
	// record of the instance behind it knows the state went back.
	mb.Acked = max(mb.Acked, f.acked)
	w.adopt, w.base, w.acked, w.back = nil, 0, mb.Acked, nil
	if mb.Back {
		w.back = &goneBack{had: mb.Had, upto: mb.Upto}
		mb.Back, mb.Had, mb.Upto = false, 0, 0
	}
	held := w.budget
	mb.Adopted = max(mb.Adopted, f.adopted)
	if g := pendingGrant(&mb); w.leaving {
		mb.Left = true
	} else if g != nil && mb.Version > f.classicVersion && mb.Epoch == s.epoch.Load() {
		w.adopt, w.base = g, mb.Base
		// What may be admitted from this write on: admissions from
		// the budget while the write is on its way and what is kept
		// of the grant after it, which are charged to the grant
		// together (and the budget alone if the instance never
		// learns that the write committed).
		left := max(0, g.Total()-s.usedSince(w.base).total)
		w.keep = max(w.need, mb.Fair)
		if mb.Scarce {
			w.keep = 0 // its slots go back to the pool, for picks
		}
		held = min(w.budget+w.keep, left)
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
	mb.Seq, mb.Seen, mb.Held, mb.In, mb.Prev = s.seq, w.now, held, s.epoch.Load(), f.wroteAt
	w.adopted = mb.Adopted
	writeMailbox(st, mb)
	return true
}

// wroteMailbox notes the outcome of the mailbox write w (wrote, or err)
// at local (ms): when it last wrote, and its naming in a join record. A
// write that failed fails the sync, which it returns.
func (s *Syncer[S]) wroteMailbox(ctx context.Context, wrote bool, err error, w *mailboxWrite, local int64) error {
	f := &s.fleet
	f.wrote = f.wrote || wrote
	if wrote {
		f.wroteAt, f.mailboxAt = w.now, local
	}
	if wrote && !w.leaving { // leaving, named or not, it is gone
		err = s.nameIfUnknown(ctx, w.now, local)
	}
	if err != nil {
		// The write failed: a store that is down, or one too loaded to
		// answer in time (on SQL, a pool whose connections are all
		// busy). The instance tries its mailbox again at its next sync,
		// as long as its latest write is within the instance TTL (see
		// fleetLive), rather than falling back to a classic sync at
		// once: that would take the room's row lock where the store is
		// already short of time, and others would follow. The batch
		// stays in s.unacked and goes out with the next write (the state
		// applies it once, by its sequence number, whichever way it
		// comes). As after a failed classic sync, nobody new is let in
		// until the store answers again: the aggregator may soon give
		// this instance's share to others. A joining instance has no
		// grant and no record in the state to keep alive: it, too, tries
		// again rather than joining by a classic sync, which, with a
		// fleet starting at once on a loaded store, feeds the wave the
		// join avoids.
		s.local.mu.Lock()
		s.local.grant = nil
		s.local.mu.Unlock()
		return s.syncFailed(ctx, err)
	}
	for k, n := range w.b.d.waiting {
		s.mine.waiting[k] += n
	}
	return nil
}

// nameIfUnknown names the instance in its join record when the aggregator
// may not know it: a new instance (once), and one whose batches have not
// been applied for an instance TTL (once a TTL). Only a new instance's
// naming that fails fails its sync.
func (s *Syncer[S]) nameIfUnknown(ctx context.Context, now, local int64) error {
	f := &s.fleet
	switch {
	case f.classicVersion == 0 && f.acked == 0 && !f.named:
		err := s.nameSelf(ctx, now)
		f.named, f.namedAt = err == nil, local
		return err
	case f.acked > 0 && local-f.ackedAt > s.instanceTTL() && local-f.namedAt > s.instanceTTL():
		// Its batches have not been applied for an instance TTL: the
		// aggregator may not know it any more (the state went back to a
		// version without its record, which a classic sync then
		// dropped as silent). It names itself again, once a TTL; the
		// aggregator brings it in as one the state went back on.
		if s.nameSelf(ctx, now) == nil {
			f.namedAt = local
		}
	}
	return nil
}

// adopt makes the grant w adopted the instance's, charged with every
// admission made since the write whose held it was carved from, and keeps
// of it what w says.
func (s *Syncer[S]) adopt(w *mailboxWrite) {
	if w.adopt == nil {
		return
	}
	f := &s.fleet
	s.local.mu.Lock()
	defer s.local.mu.Unlock()
	charge := s.usedSince(w.base)
	for k, n := range s.local.inflight {
		charge.byEntry[k] += n
		charge.total += n
	}
	w.adopt.charge(charge.byEntry)
	s.local.grant = w.adopt.keep(w.keep)
	f.adopted = max(f.adopted, w.adopted)
	f.used = slices.DeleteFunc(f.used, func(u usedBatch) bool { return u.seq <= w.base })
}

// acknowledge notes that the state applied the instance's batches up to
// acked (its mailbox says so), at now (shared-clock ms) and local: they
// are kept for a waiting window, in case the state goes back to a version
// without them (as a classic sync's).
func (s *Syncer[S]) acknowledge(acked uint64, now, local int64) {
	f := &s.fleet
	if acked <= f.acked {
		return
	}
	f.acked, f.ackedAt = acked, local
	i := 0
	for i < len(s.unacked) && s.unacked[i].seq <= acked {
		i++
	}
	s.keepApplied(s.unacked[:i], now)
	s.unacked = slices.Delete(s.unacked, 0, i)
}

// resend puts back into the pending reports what the state lacks of the
// instance's batches (back, nil when it went back on nothing), but for
// those a classic sync brought in again since (fleetState.brought) and
// those another of them carries again (batch.carries): what they brought
// in goes out again with the next batch, which says it carries them
// (Syncer.carry), with every session the instance knows (merging makes a
// session reported twice count once). The aggregator that found it set
// the grace meanwhile.
func (s *Syncer[S]) resend(back *goneBack) {
	if back == nil || back.upto <= s.fleet.brought {
		return
	}
	from := max(back.had, s.fleet.brought)
	carried := s.carried(from, back.upto, nil)
	s.local.mu.Lock()
	for _, a := range s.applied {
		if a.seq > from && a.seq <= back.upto && !carried(a.seq) {
			s.local.pending.add(a.d)
		}
	}
	// The next batch carries them (a classic sync that finds the state
	// gone back before it is applied brings them in once, with it).
	if s.carry.upto == 0 {
		s.carry = goneBack{had: from, upto: back.upto}
	} else {
		s.carry = goneBack{had: min(s.carry.had, from), upto: max(s.carry.upto, back.upto)}
	}
	s.local.known.Each(s.local.pending.session)
	s.local.queued = netsOf(s.local.pending.waiting)
	s.local.mu.Unlock()
	s.cfg.Log.Warn("waitingroom: the shared state went back to an earlier version (the store lost writes it had acknowledged); this instance contributes its counts again", "had", back.had, "applied", back.upto)
}

// lead takes the fleet's lease over when its holder stopped renewing it
// and this instance is one of those that take it (takesOver), and runs
// the aggregator's round if this instance holds the lease.
func (s *Syncer[S]) lead(ctx context.Context, now int64, leaving bool) {
	f := &s.fleet
	if f.term == 0 && !leaving && s.takesOver(now) {
		s.takeOver(ctx, now)
	}
	if f.term == 0 {
		return
	}
	lost, err := s.aggregate(ctx)
	if err != nil {
		s.cfg.Log.Debug("waitingroom: aggregator round failed", "err", err)
	}
	if lost {
		s.cfg.Log.Debug("waitingroom: aggregator round: the lease is another instance's")
		f.term, f.reserved = 0, 0
	}
}

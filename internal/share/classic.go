package share

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/go-waitingroom/waitingroom/store"
)

// Sync runs one sync with the store now: it merges this instance's counts
// since the previous sync, returns its unused grant and takes a new one,
// and installs the view it brings (Snapshot). The background loop calls it
// every SyncInterval, and sooner when woken (Wake); with a SyncInterval
// that is not positive, the caller calls it (tests and simulators, under
// their own clock). While a sync is in flight the instance admits at most
// what it kept of its grant, so the grants of all instances never add up
// to more than the free slots. Calls are serialized. On error nothing is
// lost: the counts are kept for the next sync.
//
// A failed sync's error wraps the store's, which says what is wrong (see
// Ready); one whose ctx's deadline passed wraps store.ErrUnavailable. The
// first failure of an outage is logged, at level ERROR, as a
// misconfiguration (store.ErrNoSchema, store.ErrAuth, store.ErrVersion) or
// an outage, and so is the recovery. A sync whose ctx is cancelled is no
// failure of the store: it is neither logged as one nor counted in
// Counters.Errors.
func (s *Syncer[S]) Sync(ctx context.Context) error {
	if s.closed.Load() {
		return s.cfg.Closed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sync(ctx, false)
}

// leave is the last sync of an instance that is closing, if its latest
// sync went through (else the state would learn nothing from it it may
// count on: it drops the instance as silent).
func (s *Syncer[S]) leave(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch.Load() == 0 || !s.healthy.Load() {
		return nil
	}
	err := s.sync(ctx, true)
	if err != nil {
		s.cfg.Log.Debug("waitingroom: the last sync before closing failed; the instance is dropped from the state as silent", "err", err)
	}
	return err
}

// sync is Sync, under s.mu; leaving, it is the last sync of an instance
// that is closing (leave). It syncs through the fleet's aggregator when
// the fleet path can vouch for itself, the classic way otherwise.
func (s *Syncer[S]) sync(ctx context.Context, leaving bool) error {
	if leaving {
		// Nobody is let in from here on: what was let in goes out with
		// this sync, and the instance's record goes with it (its grant
		// back to the pool, with nothing counted as lost: lostToSilence).
		s.local.mu.Lock()
		s.local.grant, s.local.inflight = nil, nil
		s.healthy.Store(false) // nor from a pick (Healthy)
		s.local.mu.Unlock()
	}
	s.updatedBefore = s.updated.Load()
	next, err := s.fleetSync(ctx, leaving)
	switch {
	case next == classic:
		return s.classicSync(ctx, leaving)
	case err != nil:
		return err
	}
	s.syncSucceeded()
	s.aggregated.Store(s.fleet.on && s.fleet.viewed)
	s.aggregating.Store(s.fleet.term != 0)
	s.removeMailboxes(ctx)
	s.writePlaces(ctx)
	return nil
}

// classicRun is one classic sync: what goes in (the parameters, the
// batches), what its Update of the shared state found and what it brings
// back.
type classicRun[S any] struct {
	p       params
	batches []batch
	recover bool // the previous sync failed

	offset   int64 // the shared clock's, ms
	rebuilt  bool  // the state this instance knew was lost
	wentBack bool  // the state went back to a version without some of its writes
	g        Grant
	v        *View
	set      S
	epoch    uint64
	version  uint64
	settings uint64 // the settings' version
	peers    []string
	term     uint64 // the lease this instance holds after the sync
	leased   bool   // the state holds a lease
	took     bool   // this sync took the lease: its view goes out now
	pub      store.State
}

// classicSync is Sync the classic way: one Update of the whole shared
// state, which applySync merges this instance's batches into and carves
// its new grant from.
func (s *Syncer[S]) classicSync(ctx context.Context, leaving bool) error {
	c := &classicRun[S]{p: s.params(0), recover: s.outage}
	c.p.leaving = leaving
	c.batches, c.p.held = s.sendBatches()
	c.p.seq = s.seq
	started := time.Now()
	defer func() { s.nanos.Store(int64(time.Since(started))) }()
	s.syncs.Add(1)
	err := s.cfg.Store.Update(ctx, s.cfg.Name, func(st *store.State) error {
		s.applyClassic(st, c)
		return nil
	})
	if err != nil {
		s.local.mu.Lock()
		// The counts stay in s.unacked, to go out again with the next
		// sync. Without a sync the store may soon give this instance's
		// share to others: nobody new is let in until it answers again.
		s.local.grant, s.local.inflight = nil, nil
		s.local.mu.Unlock()
		return s.syncFailed(ctx, err)
	}
	s.classicSynced(ctx, c)
	return nil
}

// sendBatches takes the pending reports out as the next numbered batch,
// and returns it with those of syncs that got no answer (the store
// applies only what it has not recorded yet), and what the instance keeps
// of its grant while the sync is in flight: about a tenth of what the
// last interval saw, at least one, so that visitors arriving meanwhile
// are not turned away for nothing. What is taken from it is charged to
// the grant the sync brings back; the rest returns to the pool.
func (s *Syncer[S]) sendBatches() ([]batch, int64) {
	l := s.local
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.pending
	l.pending, l.queued = newDelta(), nil
	l.grant = l.grant.keep(1 + d.attempts/10)
	s.seq++
	s.unacked = append(s.unacked, batch{seq: s.seq, d: d, carries: s.carry})
	s.carry = goneBack{}
	s.noteSent()
	l.inflight = map[int64]int64{}
	return s.unacked, l.grant.Total()
}

// noteSent sets Local's sent to the net waiting counts of the batches
// not known to be applied, which the view may not show. s.mu and the
// local lock are held.
func (s *Syncer[S]) noteSent() {
	s.local.sent = nil
	for _, b := range s.unacked {
		for k, n := range b.d.waiting {
			s.local.sent = s.local.sent.add(k.bucket, n)
		}
	}
}

// applyClassic is the classic sync's Update of the shared state st: the
// shared clock, what this instance must bring in again (the state was
// lost, or went back), the grace after a gap, the settings, applySync,
// and the fleet's lease.
func (s *Syncer[S]) applyClassic(st *store.State, c *classicRun[S]) {
	// The shared clock: never behind this instance's, never more than
	// MaxClockLead ahead of it. The local clock is read here, once the
	// state is in hand, so that another instance's write landing first
	// is not mistaken for skew. An instance that follows a faster
	// clock keeps its offset from sync to sync, so that all instances
	// agree on where minutes begin (a minute's admissions are counted
	// under one key); the offset is at most MaxClockLead.
	local := s.LocalNow()
	now := min(max(st.Clock, local+s.offset.Load()), local+MaxClockLead)
	c.offset = now - local
	c.p.now = now
	d := s.classicNews(st, c, local)
	c.p.keepSilent = c.wentBack || s.keepSilent(local)
	if c.rebuilt || c.wentBack || c.recover && !s.othersSyncedSince(st) {
		// After a loss or an outage, counts of other instances may not
		// be in the state yet: nobody is admitted until every instance
		// has had a sync, its retries included, to bring them in. After
		// this instance's failed syncs only, they are in: the others
		// synced since its last sync that went through.
		st.Grace = max(st.Grace, now+s.graceAfterGap())
	}
	c.set, c.p.rules = s.settle(st, now)
	c.settings = st.SettingsVersion
	st.Version++
	st.Clock = now
	keepSeeds(st, now, c.p.revealAfter(), s.cfg.Seed, c.p.rules.Shuffles)
	c.g, c.v = applySync(st, c.p, d)
	s.takeLease(st, now, c.p.leaving)
	c.epoch, c.version = st.Epoch, st.Version
	c.peers, c.term = fleetPeers(st, s.cfg.ID)
	c.leased = st.Lease != nil
	if c.took = c.term != 0 && c.term == st.Version; c.took {
		// The lease is new: its view goes out now, so that the
		// instances starting meanwhile join through their mailboxes
		// rather than by classic syncs (fleet.go).
		c.pub = viewOf(st, len(c.peers))
	}
}

// classicNews returns what the classic sync brings to st: the batches
// the state has not applied, and, when the state this instance knew was
// lost (c.rebuilt) or went back (c.wentBack), what it had brought in
// before.
func (s *Syncer[S]) classicNews(st *store.State, c *classicRun[S], local int64) *delta {
	epoch := s.epoch.Load()
	c.rebuilt = epoch != 0 && st.Epoch != epoch
	var applied uint64 // the latest of this instance's syncs the state has
	recorded := false
	if !c.rebuilt {
		for _, in := range st.Instances {
			if in.ID == s.cfg.ID {
				applied, recorded = in.Seq, true
			}
		}
	}
	// A state older than the one this instance wrote last, whose
	// record of it lacks batches it was told were applied (by its
	// mailbox, through the fleet's aggregator), or that has no record
	// of it although they were applied lately (less than an instance
	// TTL ago, so that its record cannot have been dropped as
	// silent), went back in time: the store lost writes it had
	// acknowledged (a failover of an asynchronously replicated store,
	// a restart from an older dump). What those writes brought in
	// must be brought in again.
	c.wentBack = !c.rebuilt && epoch != 0 && (st.Version < s.version ||
		recorded && applied < s.fleet.acked ||
		!recorded && s.fleet.acked > 0 && local-s.fleet.ackedAt < s.instanceTTL())
	d := newDelta()
	if c.wentBack {
		carried := s.carried(applied, math.MaxUint64, c.batches)
		for _, b := range s.applied {
			if b.seq > applied && !carried(b.seq) {
				d.add(b.d)
			}
		}
	}
	for _, b := range c.batches {
		if b.seq > applied {
			d.add(b.d)
		}
	}
	if c.rebuilt {
		// The state this instance knew was lost (or already recreated
		// by another instance that noticed first): contribute again
		// what it counted over the last session.
		d.add(s.mine)
	}
	if c.rebuilt || c.wentBack {
		// And every session it knows (merging makes a session
		// reported twice count once).
		s.local.mu.Lock()
		s.local.known.Each(d.session)
		s.local.mu.Unlock()
	}
	return d
}

// classicSynced installs what a classic sync that went through brought:
// the fleet's state as a classic sync leaves it, the counts it applied,
// the grant and the view; and publishes the fleet's view if it took the
// lease.
func (s *Syncer[S]) classicSynced(ctx context.Context, c *classicRun[S]) {
	s.syncSucceeded()
	local := s.LocalNow()
	s.fleet = fleetState{
		on:             len(c.peers) > 0 && c.leased,
		term:           c.term,
		peers:          c.peers,
		classicVersion: c.version,
		acked:          s.seq,
		ackedAt:        local,
		mailboxAt:      local,
		viewAt:         local,
		adopted:        s.fleet.adopted,
		brought:        s.fleet.brought,
	}
	if c.rebuilt || c.wentBack {
		s.fleet.brought = s.seq
	}
	if c.rebuilt {
		s.cfg.Log.Warn("waitingroom: the shared state was lost; this instance contributed its counts again", "old_epoch", s.epoch.Load(), "epoch", c.epoch)
	}
	if c.wentBack {
		s.steadySince = local
		s.cfg.Log.Warn("waitingroom: the shared state went back to an earlier version (the store lost writes it had acknowledged); this instance contributed its counts again", "version", s.version)
	}
	s.version = c.version
	s.keepApplied(c.batches, c.p.now)
	s.noteGone(c.v.dropped)
	s.unacked = nil
	s.finish(ctx, c.p, c.v, c.set, c.epoch, c.settings, c.batches, func() {
		if c.g != nil {
			c.g.charge(s.local.inflight)
			s.local.grant = c.g
		} else if c.rebuilt {
			// The grant was carved from the state that was lost: the
			// rebuilt one cannot vouch for it (TestStateLossVoidsGrants).
			s.local.grant = nil
		} // else nothing new was granted: what is left of the grant stays held
		s.local.inflight = nil
	}, c.offset)
	s.aggregated.Store(false)
	s.aggregating.Store(c.term != 0)
	if c.took {
		if err := s.publish(ctx, c.pub); err != nil {
			s.cfg.Log.Debug("waitingroom: publishing the fleet's view failed", "err", err)
		}
	}
	s.removeMailboxes(ctx)
	s.writePlaces(ctx)
}

// othersSyncedSince reports whether every other instance st records
// synced after this one's outage began (its first failed sync): its
// failures were its own, and the others' counts are in st. A store that
// failed syncs at random otherwise held a grace after each: four
// instances under Total Active Users, failing 10 % of their syncs, let in
// 116 visitors in six minutes, 20 % 10, against 137 without failures (141
// and 139 so). Counted from this one's latest sync that went through, an
// outage of the store for all held no grace for the instance that synced
// before the others did (new visitors let in ahead of those who waited
// through it, their counts not in yet).
func (s *Syncer[S]) othersSyncedSince(st *store.State) bool {
	return !slices.ContainsFunc(st.Instances, func(in store.Instance) bool { return in.ID != s.cfg.ID && in.Seen <= s.failedAt })
}

// syncFailed reports a sync that failed with err: it counts it, logs the
// outage once when it begins (and again if it turns out to be another
// misconfiguration), marks the room unready and returns the error Sync
// returns. A sync the caller cancelled (Close does) says nothing about
// the store and is only logged at debug level.
func (s *Syncer[S]) syncFailed(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		s.cfg.Log.Debug("waitingroom: sync cancelled", "err", err)
		return fmt.Errorf("waitingroom: sync: %w", err)
	}
	s.errors.Add(1)
	s.steadySince = -1 // see Syncer.steadySince
	f := failureOf(err)
	if f == failOther && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// The store did not say, but it did not answer in time.
		err, f = fmt.Errorf("%w: %w", store.ErrUnavailable, err), failUnavailable
	}
	_, _, prev := s.ready.get()
	if !s.outage {
		s.failedAt = s.Now()
	}
	if !s.outage || f.misconfigured() && f != failureOf(prev) {
		s.outage = true
		s.healthy.Store(false)
		s.cfg.Log.Error(f.line(ctx, err)+"; "+s.cfg.OutageEffect, "cause", f.String(), "err", err)
	}
	err = fmt.Errorf("waitingroom: sync: %w", err)
	s.ready.set(err)
	return err
}

// keepSilent reports that a sync at local (ms) must drop no instance as
// silent: this instance's syncs failed since, or less than an instance TTL
// before (see Syncer.steadySince). Under s.mu.
func (s *Syncer[S]) keepSilent(local int64) bool {
	return s.steadySince < 0 || s.steadySince > 0 && local-s.steadySince < s.instanceTTL()
}

// syncSucceeded ends an outage after a sync that went through: one line
// says so.
func (s *Syncer[S]) syncSucceeded() {
	if s.steadySince < 0 {
		s.steadySince = s.LocalNow()
	}
	if s.outage {
		s.outage = false
		s.healthy.Store(true)
		s.cfg.Log.Info("waitingroom: store reachable again")
	}
}

// finish installs what a sync learnt: the clock's offset, the counts sent
// (for a rebuild after a loss), what the instance remembers turned over,
// the grant (setGrant, under Local's lock) and the view, with the
// settings set and their version, as the next snapshot.
func (s *Syncer[S]) finish(ctx context.Context, p params, v *View, set S, epoch, settingsVersion uint64, sent []batch, setGrant func(), offset int64) {
	s.offset.Store(offset)
	for _, b := range sent {
		// The sessions are in Local's known already.
		for k, n := range b.d.waiting {
			s.mine.waiting[k] += n
		}
	}
	s.mine.prune(p.now, s.cfg.WaitWindow)
	s.epoch.Store(epoch)
	s.installing.Lock()
	old := s.snap.Load()
	snap := &Snapshot[S]{View: *v, Settings: set, SettingsEpoch: epoch, SettingsVersion: settingsVersion}
	// A settings transaction wrote later settings while this sync was in
	// flight (Updated): they stay, and what the sync carved and picked
	// under those it read goes (TestUpdateDuringASync); the next sync
	// carves under the later ones.
	later := old.SettingsEpoch == epoch && old.SettingsVersion > settingsVersion && s.updated.Load() != s.updatedBefore
	if later {
		snap.Settings, snap.SettingsVersion, snap.Picks = old.Settings, old.SettingsVersion, nil
	}
	s.local.mu.Lock()
	// What the instance remembers of sessions goes by turning over, in
	// periods as long as it must be kept: until none of its cookies can
	// be presented.
	s.local.known.Turn(p.now, p.rules.Times.remembered())
	setGrant()
	if later {
		s.local.grant = nil
	}
	s.noteSent() // the view about to be installed shows those applied
	s.local.mu.Unlock()
	s.host.Installed(old, snap)
	s.snap.Store(snap)
	s.installing.Unlock()
	s.afterSync(ctx, v)
	// Last: whoever Ready lets go finds the grant and the view in place.
	s.ready.set(nil)
}

// open readies st, read for a sync or an Update: a new state (its Epoch
// 0) gets an epoch of its own. It returns, for Host.Settle, the settings
// this instance last knew when st is new because the state it knew was
// lost, nil otherwise.
func (s *Syncer[S]) open(st *store.State) *S {
	if st.Epoch != 0 {
		return nil
	}
	st.Epoch, st.Version = newEpoch(), 0
	if s.epoch.Load() == 0 {
		return nil
	}
	set := s.snap.Load().Settings
	return &set
}

// settle returns the live settings of st, a state read for a sync at now,
// and the rules they mean then (Host.Settle).
func (s *Syncer[S]) settle(st *store.State, now int64) (S, Rules) {
	return s.host.Settle(st, now, s.open(st))
}

// dueMargin is how late, in ms, a waiting visitor may be for their next
// check-in and still hold their FIFO reservation.
const dueMargin = 5000

func newEpoch() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) | 1
}

// batch is the counts of one sync, numbered. carries are the earlier
// batches whose counts it brings again (resend), none when zero.
type batch struct {
	seq     uint64
	d       *delta
	carries goneBack
}

// applied is the counts of a sync the state applied, kept for a waiting
// window in case the state goes back to a version without them: the
// waiting counts and attempts (the sessions are in Local's known).
type applied struct {
	seq     uint64
	at      int64 // shared-clock ms of the sync
	d       *delta
	carries goneBack // as the batch's
}

// keepApplied keeps the counts of sent, a sync's batches the state
// applied at now, and forgets those older than the waiting window: by
// then their waiting counts have left the state anyway.
func (s *Syncer[S]) keepApplied(sent []batch, now int64) {
	i := 0
	for i < len(s.applied) && s.applied[i].at < now-s.cfg.WaitWindow {
		i++
	}
	s.applied = slices.Delete(s.applied, 0, i)
	for _, b := range sent {
		d := &delta{sessions: map[uint64]store.Session{}, waiting: b.d.waiting, attempts: b.d.attempts}
		s.applied = append(s.applied, applied{seq: b.seq, at: now, d: d, carries: b.carries})
	}
}

// carried returns whether the counts of this instance's applied batch
// numbered seq are carried again (resend) by one of its batches numbered
// from from (excluded) to upto, of those applied or unacked, which are
// brought in too: a state that went back to before both gets them once,
// from the batch that carries them.
func (s *Syncer[S]) carried(from, upto uint64, unacked []batch) func(seq uint64) bool {
	var cs []goneBack
	for _, b := range s.applied {
		if b.seq > from && b.seq <= upto && b.carries.upto > 0 {
			cs = append(cs, b.carries)
		}
	}
	for _, b := range unacked {
		if b.seq > from && b.seq <= upto && b.carries.upto > 0 {
			cs = append(cs, b.carries)
		}
	}
	return func(seq uint64) bool {
		for _, c := range cs {
			if seq > c.had && seq <= c.upto {
				return true
			}
		}
		return false
	}
}

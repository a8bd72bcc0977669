package waitingroom

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"time"

	"github.com/go-waitingroom/waitingroom/store"
)

// Sync runs one sync with the store now: it merges this instance's counts
// since the previous sync, returns its unused grant and takes a new one.
// The background loop calls it every SyncInterval, and sooner after a
// revoke (wakeSync); with a negative SyncInterval, tests and simulators
// call it themselves (under their own clock). While a sync is in flight
// the instance admits nobody new, so the grants of all instances never add
// up to more than the free slots. Calls are serialized. On error nothing is lost: the counts are kept for the
// next sync.
//
// A failed sync's error wraps the store's, which says what is wrong (see
// Ready); one whose ctx's deadline passed wraps store.ErrUnavailable. The
// room logs the first failure of an outage, at level ERROR, as a
// misconfiguration (store.ErrNoSchema, store.ErrAuth) or an outage, and
// the recovery. A sync whose ctx is cancelled is no failure of the store:
// it is neither logged as one nor counted in Counters.SyncErrors.
func (rm *Room) Sync(ctx context.Context) error {
	if rm.closed.Load() {
		return ErrClosed
	}
	return rm.sync(ctx, false)
}

// sync is Sync; leaving, it is the last sync of an instance that is
// closing (leave).
func (rm *Room) sync(ctx context.Context, leaving bool) error {
	rm.syncMu.Lock()
	defer rm.syncMu.Unlock()
	if leaving && (rm.epoch == 0 || !rm.healthy.Load()) {
		return errNoLeave
	}
	if leaving {
		// Nobody is let in from here on: what was let in goes out with
		// this sync, and the instance's record goes with it (its grant
		// back to the pool, with nothing counted as lost: lostToSilence).
		rm.mu.Lock()
		rm.grant, rm.inflight = nil, nil
		rm.healthy.Store(false) // nor from a pick (check)
		rm.mu.Unlock()
	}
	if err := rm.fleetSync(ctx, leaving); !errors.Is(err, errFleetFallback) {
		if err == nil {
			rm.syncSucceeded()
			rm.aggregated.Store(rm.fleet.on && rm.fleet.viewed)
			rm.aggregating.Store(rm.fleet.term != 0)
			rm.removeMailboxes(ctx)
		}
		return err
	}

	// A little of the grant stays in use while the sync is in flight, so
	// that visitors arriving meanwhile are not turned away for nothing:
	// about a tenth of what the last interval saw, at least one. What is
	// taken from it is charged to the grant the sync brings back; the
	// rest returns to the pool.
	rm.mu.Lock()
	d := rm.pending
	rm.pending = newDelta()
	rm.grant = rm.grant.keep(1 + d.attempts/10)
	// The counts go out numbered, with those of syncs that got no answer:
	// the store applies only what it has not recorded yet.
	rm.seq++
	rm.unacked = append(rm.unacked, batch{seq: rm.seq, d: d})
	batches := rm.unacked
	held := rm.grant.total()
	rm.inflight = map[int64]int64{}
	rm.mu.Unlock()

	started := time.Now()
	defer func() { rm.counters.syncNanos.Store(int64(time.Since(started))) }()
	rm.counters.syncs.Add(1)
	p := syncParams{
		id:           rm.id,
		seq:          rm.seq,
		waitWindow:   rm.waitWindow,
		syncInterval: max(rm.cfg.SyncInterval, 0).Milliseconds(),
		instanceTTL:  rm.instanceTTL(),
		held:         held,
		leaving:      leaving,
		dueWindow:    rm.waitWindow/2 + dueMargin,
		history:      rm.kept.store != nil,
	}
	var (
		g        grant
		v        *view
		epoch    uint64
		offset   int64
		rebuilt  bool
		wentBack bool
		recover  = rm.outage

		settingsVersion uint64
		version         uint64
		peers           []string
		term            uint64
		leased, took    bool
		pub             store.State
	)
	err := rm.store.Update(ctx, rm.cfg.Name, func(st *store.State) error {
		// The shared clock: never behind this instance's, never more than
		// maxClockLead ahead of it. The local clock is read here, once the
		// state is in hand, so that another instance's write landing first
		// is not mistaken for skew. An instance that follows a faster
		// clock keeps its offset from sync to sync, so that all instances
		// agree on where minutes begin (a minute's admissions are counted
		// under one key); the offset is at most maxClockLead.
		local := rm.localNow()
		now := min(max(st.Clock, local+rm.offset.Load()), local+maxClockLead)
		offset = now - local
		p.now = now
		rebuilt = rm.epoch != 0 && st.Epoch != rm.epoch
		var applied uint64 // the latest of this instance's syncs the state has
		recorded := false
		if !rebuilt {
			for _, in := range st.Instances {
				if in.ID == rm.id {
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
		wentBack = !rebuilt && rm.epoch != 0 && (st.Version < rm.version ||
			recorded && applied < rm.fleet.acked ||
			!recorded && rm.fleet.acked > 0 && local-rm.fleet.ackedAt < rm.instanceTTL())
		dd := newDelta()
		if wentBack {
			for _, b := range rm.applied {
				if b.seq > applied {
					dd.add(b.d)
				}
			}
		}
		for _, b := range batches {
			if b.seq > applied {
				dd.add(b.d)
			}
		}
		if rebuilt {
			// The state this instance knew was lost (or already recreated
			// by another instance that noticed first): contribute again
			// what it counted over the last session.
			dd.add(rm.mine)
		}
		if rebuilt || wentBack {
			// And every session it knows (merging makes a session
			// reported twice count once).
			rm.mu.Lock()
			rm.known.Each(dd.session)
			rm.mu.Unlock()
		}
		p.keepSilent = wentBack || rm.keepSilent(local)
		if rebuilt || wentBack || recover {
			// After a loss or an outage, counts of other instances may not
			// be in the state yet: nobody is admitted until every instance
			// has had a sync, its retries included, to bring them in.
			st.Grace = max(st.Grace, now+rm.graceAfterGap())
		}
		p.settings = rm.sharedSettings(st)
		p.policy = rm.policyAt(&p.settings, now)
		p.times = rm.sessionTimes(&p.settings)
		settingsVersion = st.SettingsVersion
		st.Version++
		st.Clock = now
		g, v = applySync(st, p, dd)
		rm.takeLease(st, now, leaving)
		epoch, version = st.Epoch, st.Version
		peers, term = fleetPeers(st, rm.id)
		leased = st.Lease != nil
		if took = term != 0 && term == st.Version; took {
			// The lease is new: its view goes out now, so that the
			// instances starting meanwhile join through their mailboxes
			// rather than by classic syncs (fleet.go).
			pub = viewOf(st, len(peers))
		}
		return nil
	})
	if err != nil {
		rm.mu.Lock()
		// The counts stay in rm.unacked, to go out again with the next
		// sync. Without a sync the store may soon give this instance's
		// share to others: nobody new is let in until it answers again.
		rm.grant, rm.inflight = nil, nil
		rm.mu.Unlock()
		return rm.syncFailed(ctx, err)
	}
	rm.syncSucceeded()
	rm.fleet = fleetState{
		on:             len(peers) > 0 && leased,
		term:           term,
		peers:          peers,
		classicVersion: version,
		acked:          rm.seq,
		ackedAt:        rm.localNow(),
		mailboxAt:      rm.localNow(),
		viewAt:         rm.localNow(),
		adopted:        rm.fleet.adopted,
	}
	if rebuilt {
		rm.log.Warn("waitingroom: the shared state was lost; this instance contributed its counts again", "old_epoch", rm.epoch, "epoch", epoch)
	}
	if wentBack {
		rm.steadySince = rm.localNow()
		rm.log.Warn("waitingroom: the shared state went back to an earlier version (the store lost writes it had acknowledged); this instance contributed its counts again", "version", rm.version)
	}
	rm.version = version
	rm.keepApplied(batches, p.now)
	rm.noteGone(v.dropped)
	rm.unacked = nil
	rm.finish(ctx, p, v, epoch, settingsVersion, batches, func() {
		if g != nil {
			g.charge(rm.inflight)
			rm.grant = g
		} else if rebuilt {
			// The grant was carved from the state that was lost: the
			// rebuilt one cannot vouch for it (TestStateLossVoidsGrants).
			rm.grant = nil
		} // else nothing new was granted: what is left of the grant stays held
		rm.inflight = nil
	}, offset)
	rm.aggregated.Store(false)
	rm.aggregating.Store(term != 0)
	if took {
		if err := rm.publish(ctx, pub); err != nil {
			rm.log.Debug("waitingroom: publishing the fleet's view failed", "err", err)
		}
	}
	rm.removeMailboxes(ctx)
	return nil
}

// syncFailed reports a sync that failed with err: it counts it, logs the
// outage once when it begins (and again if it turns out to be another
// misconfiguration), marks the room unready and returns the error Sync
// returns. A sync the caller cancelled (Close does) says nothing about
// the store and is only logged at debug level.
func (rm *Room) syncFailed(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		rm.log.Debug("waitingroom: sync cancelled", "err", err)
		return fmt.Errorf("waitingroom: sync: %w", err)
	}
	rm.counters.syncErrors.Add(1)
	rm.steadySince = -1 // see Room.steadySince
	f := failureOf(err)
	if f == failOther && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// The store did not say, but it did not answer in time.
		err, f = fmt.Errorf("%w: %w", store.ErrUnavailable, err), failUnavailable
	}
	_, _, prev := rm.ready.get()
	if !rm.outage || f.misconfigured() && f != failureOf(prev) {
		rm.outage = true
		rm.healthy.Store(false)
		rm.log.Error(f.message()+"; "+policyEffect(rm.cfg.OnStoreError), "cause", f.String(), "err", err)
	}
	err = fmt.Errorf("waitingroom: sync: %w", err)
	rm.ready.set(err)
	return err
}

// keepSilent reports that a sync at local (ms) must drop no instance as
// silent: this instance's syncs failed since, or less than an instance TTL
// before (see Room.steadySince). Under syncMu.
func (rm *Room) keepSilent(local int64) bool {
	return rm.steadySince < 0 || rm.steadySince > 0 && local-rm.steadySince < rm.instanceTTL()
}

// syncSucceeded ends an outage after a sync that went through: one line
// says so.
func (rm *Room) syncSucceeded() {
	if rm.steadySince < 0 {
		rm.steadySince = rm.localNow()
	}
	if rm.outage {
		rm.outage = false
		rm.healthy.Store(true)
		rm.log.Info("waitingroom: store reachable again")
	}
}

// finish installs what a sync learnt: the clock's offset, the counts sent
// (for a rebuild after a loss), the revoked IDs, what the instance
// remembers turned over, the grant (setGrant, under rm.mu) and the view.
func (rm *Room) finish(ctx context.Context, p syncParams, v *view, epoch, settingsVersion uint64, sent []batch, setGrant func(), offset int64) {
	rm.offset.Store(offset)
	for _, b := range sent {
		// The sessions are in rm.known already.
		for k, n := range b.d.waiting {
			rm.mine.waiting[k] += n
		}
	}
	rm.mine.prune(p.now, rm.waitWindow)
	rm.learnRevoked(v.revoked, p.now, p.times.window+p.times.hold+p.times.margin)
	rm.epoch = epoch
	rm.mu.Lock()
	// What the instance remembers of visitors goes by turning over, in
	// periods as long as it must be kept: a session until none of its
	// cookies can be presented, a chance while the count it left counts
	// (a waiting window after the end of its check-in slot).
	rm.known.Turn(p.now, p.times.window+p.times.hold+p.times.margin)
	rm.chances.Turn(p.now, rm.waitWindow+1000*slotSeconds)
	setGrant()
	rm.mu.Unlock()
	v.settingsVersion = settingsVersion
	old := rm.view.Load()
	if old.settingsVersion != 0 && old.settingsVersion != v.settingsVersion {
		rm.log.Info("waitingroom: settings changed", "settings", loggable(v.settings))
	}
	rm.logPhase(old, v)
	rm.view.Store(v)
	rm.history.observe(sample{at: v.at, active: int(v.active), waiting: int(v.waiting),
		admittedThisMinute: int(v.admittedThisMinute), outflowPerMinute: v.perMinute})
	rm.afterSync(ctx, v)
	// Last: whoever Ready lets go finds the grant and the view in place.
	rm.ready.set(nil)
}

// sharedSettings returns the room's live settings from st, first writing
// this instance's Config into it when st is new or was initialised from a
// different Config (a deploy that changed it). A state recreated after a
// loss gets the settings this instance last knew, so live changes survive.
func (rm *Room) sharedSettings(st *store.State) Settings {
	if st.Epoch == 0 {
		st.Epoch = newEpoch()
		st.Version = 0
		if rm.epoch != 0 {
			s := rm.view.Load().settings
			writeSettings(st, s)
			st.ConfigHash = rm.configHash
			return s
		}
	}
	if st.ConfigHash != rm.configHash {
		s := rm.cfg.settings()
		writeSettings(st, s)
		st.ConfigHash = rm.configHash
		return s
	}
	var s Settings
	if err := json.Unmarshal(st.Settings, &s); err != nil || s.QueueingMethod == "" || s.validateWith(rm.checkTemplate) != nil {
		s = rm.cfg.settings()
		writeSettings(st, s)
	}
	return s
}

// loggable is s for a log line: templates, the room's and its events',
// are given by their size rather than written out.
func loggable(s Settings) Settings {
	short := func(t string) string {
		if t == "" {
			return ""
		}
		return fmt.Sprintf("(%d bytes)", len(t))
	}
	s.Template = short(s.Template)
	s.Events = slices.Clone(s.Events)
	for i := range s.Events {
		s.Events[i].Template = short(s.Events[i].Template)
	}
	return s
}

func writeSettings(st *store.State, s Settings) {
	st.Settings, _ = json.Marshal(s)
	st.SettingsVersion++
}

func newEpoch() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) | 1
}

// dueMargin is how late, in ms, a waiting visitor may be for their next
// check-in and still hold their FIFO reservation.
const dueMargin = 5000

// maxClockLead bounds how far ahead of its own clock an instance follows
// the shared clock: a few seconds of skew between instances are absorbed,
// a grossly wrong clock elsewhere is not followed.
const maxClockLead = 10_000

// batch is the counts of one sync, numbered.
type batch struct {
	seq uint64
	d   *delta
}

// applied is the counts of a sync the state applied, kept for a waiting
// window in case the state goes back to a version without them: the
// waiting counts and attempts (the sessions are in rm.known).
type applied struct {
	seq uint64
	at  int64 // shared-clock ms of the sync
	d   *delta
}

// keepApplied keeps the counts of sent, a sync's batches the state
// applied at now, and forgets those older than the waiting window: by
// then their waiting counts have left the state anyway.
func (rm *Room) keepApplied(sent []batch, now int64) {
	i := 0
	for i < len(rm.applied) && rm.applied[i].at < now-rm.waitWindow {
		i++
	}
	rm.applied = slices.Delete(rm.applied, 0, i)
	for _, b := range sent {
		d := &delta{sessions: map[uint64]store.Session{}, waiting: b.d.waiting, attempts: b.d.attempts}
		rm.applied = append(rm.applied, applied{seq: b.seq, at: now, d: d})
	}
}

// graceAfterGap is how long, in ms, nobody is admitted after the shared
// state was lost or the store was unreachable: long enough for every live
// instance to sync, through its retry backoff, and bring its counts in.
func (rm *Room) graceAfterGap() int64 {
	if rm.cfg.SyncInterval <= 0 {
		return 2 * rm.instanceTTL() // syncs are the caller's: assume a few seconds
	}
	return (syncTimeout(rm.cfg.SyncInterval) + maxBackoff(rm.cfg.SyncInterval) + rm.cfg.SyncInterval).Milliseconds()
}

// syncTimeout bounds one background sync.
func syncTimeout(interval time.Duration) time.Duration { return max(2*interval, 2*time.Second) }

// maxBackoff is the longest wait between failed background syncs: long
// enough that instances contending on a slow store let it clear, short
// enough that every instance is back within graceAfterGap.
func maxBackoff(interval time.Duration) time.Duration { return max(2*interval, 2*time.Second) }

// sessionTimes are the lengths that decide how long session records count
// and are kept under settings s. The margin covers the reports of other
// instances still on their way: a request one of them let in just before
// the session would have ended reaches the state within a sync interval
// and its round trip.
func (rm *Room) sessionTimes(s *Settings) sessionTimes {
	return sessionTimes{
		window: rm.countWindow(s),
		margin: max(rm.cfg.SyncInterval, 0).Milliseconds() + 1000,
		hold:   rm.hold,
	}
}

// instanceTTL is how long, in ms, an instance that stopped syncing keeps its
// share and grant.
func (rm *Room) instanceTTL() int64 {
	return max(3*rm.cfg.SyncInterval, 3*time.Second).Milliseconds()
}

// now is the room's time in Unix ms: this instance's clock plus the offset
// that aligns it with the shared clock.
func (rm *Room) now() int64 {
	return rm.localNow() + rm.offset.Load()
}

// localNow is this instance's clock in Unix ms: Config.Now, or the wall
// clock read as time.Now reads it when Config.Now was left nil.
func (rm *Room) localNow() int64 {
	if rm.sysClock {
		return wallMillis()
	}
	return rm.cfg.Now().UnixMilli()
}

// Update changes the room's live settings: fn gets the current ones and
// changes them in place. The change goes into the shared state, so every
// instance follows it at its next sync; this instance follows at once.
// fn may be called more than once (stores may retry) and must only change
// its argument. Invalid settings make Update fail with an error wrapping
// ErrInvalidConfig, and nothing changes.
func (rm *Room) Update(ctx context.Context, fn func(*Settings)) error {
	if rm.closed.Load() {
		return ErrClosed
	}
	var (
		s       Settings
		version uint64
	)
	err := rm.store.Update(ctx, rm.cfg.Name, func(st *store.State) error {
		s = rm.sharedSettings(st)
		fn(&s)
		if s.QueueingMethod == "" {
			s.QueueingMethod = FIFO
		}
		if err := s.validate(); err != nil {
			return err
		}
		s.Challenge = cloneChallenge(s.Challenge) // the caller's stays theirs
		writeSettings(st, s)
		st.Version++
		version = st.SettingsVersion
		return nil
	})
	if err != nil {
		return fmt.Errorf("waitingroom: update: %w", err)
	}
	for {
		old := rm.view.Load()
		nv := *old
		nv.settings = s
		nv.settingsVersion = version
		if rm.view.CompareAndSwap(old, &nv) {
			break
		}
	}
	rm.log.Info("waitingroom: settings updated", "settings", loggable(s))
	return nil
}

// loop syncs every SyncInterval (up to 10 % sooner, so instances do not
// sync in step), and sooner when woken (wakeSync), until Close. A failing
// store is retried with backoff (maxBackoff); Sync logs the outage once
// when it begins and once when it ends. Close cancels the sync in flight.
func (rm *Room) loop() {
	defer close(rm.loopDone)
	base, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		select {
		case <-rm.stop:
			stop()
		case <-base.Done():
		}
	}()
	interval := rm.cfg.SyncInterval
	wait := time.Duration(0)
	failures := 0
	var began time.Time
	for {
		if !rm.pause(wait, began, failures == 0) {
			return
		}
		began = time.Now()
		ctx, cancel := context.WithTimeout(base, syncTimeout(interval))
		err := rm.Sync(ctx)
		cancel()
		if err != nil {
			failures++
		} else {
			failures = 0
		}
		// Back off, but retry within the grace that follows an outage, so
		// that every instance brings its counts in before anyone admits.
		wait = interval << min(failures, 10)
		wait = min(wait, maxBackoff(interval))
		wait = time.Duration(float64(wait) * (0.9 + 0.1*mrand.Float64()))
	}
}

// pause waits wait before the loop's next sync, or less if wakeable and
// woken meanwhile: then until wakeGap after the previous sync began
// (began), at once if that is past. It reports false when the room is
// closing.
func (rm *Room) pause(wait time.Duration, began time.Time, wakeable bool) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	var wake <-chan struct{}
	if wakeable {
		wake = rm.wake
	}
	select {
	case <-rm.stop:
		return false
	case <-t.C:
		return true
	case <-wake:
	}
	if d := time.Until(began.Add(wakeGap(rm.cfg.SyncInterval))); d > 0 {
		t.Reset(d)
		select {
		case <-rm.stop:
			return false
		case <-t.C:
		}
	}
	return true
}

// wakeSync asks the background loop to sync now rather than at its time,
// without waiting: a revoke then reaches the shared state, and through it
// the other instances, a SyncInterval sooner. The loop syncs no sooner
// than wakeGap after its previous sync began, so a burst of revokes costs
// at most ten syncs a SyncInterval; while the store fails, it keeps to its
// backoff.
func (rm *Room) wakeSync() {
	select {
	case rm.wake <- struct{}{}:
	default: // a sync is asked for already
	}
}

// wakeGap is the least time between the beginnings of two syncs of the
// background loop when a revoke wakes it: a tenth of the interval.
func wakeGap(interval time.Duration) time.Duration { return interval / 10 }

func policyEffect(p StoreErrorPolicy) string {
	if p == FailOpen {
		return "fail-open: everyone passes, uncounted, until it is back"
	}
	return "fail-closed: admitted visitors pass, everyone else waits until it is back"
}

// Close stops the background sync and makes Sync, Update and Ready return
// ErrClosed, and Handler answer with Config.ErrorHandler. It cancels the context of the sync in flight, if any,
// and waits for the background loop to stop: at once with a Store that
// honours its context's cancellation, as the stores of this module do.
// It logs no error for the sync it cancels.
//
// Then, if the instance's latest sync went through, Close makes its last
// one (within the time a sync is given, 2 s or two SyncIntervals): it
// brings in the admissions made since, and takes the instance's record
// out of the shared state, its grant back to the pool. An instance that
// stops without it (a crash, a Close that could not reach the store) is
// dropped from the state an instance TTL later, and the grant it held is
// counted as admitted then, since it may have been used (docs/design.md,
// "Instances that stop"). It does not close the store, which the caller
// owns. Close is idempotent.
func (rm *Room) Close() error {
	if rm.closed.CompareAndSwap(false, true) {
		close(rm.stop)
		<-rm.loopDone
		rm.leave()
		return nil
	}
	<-rm.loopDone
	return nil
}

// errNoLeave: the instance never synced, or its latest sync failed; it
// makes no last sync (Close).
var errNoLeave = errors.New("waitingroom: no last sync")

// leave is Close's last sync, if the latest went through.
func (rm *Room) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout(rm.cfg.SyncInterval))
	defer cancel()
	if err := rm.sync(ctx, true); err != nil && !errors.Is(err, errNoLeave) {
		rm.log.Debug("waitingroom: the last sync before closing failed; the instance is dropped from the state as silent", "err", err)
	}
}

// logPhase logs the room's state changes between two views: queueing
// started or stopped, an event's pre-queue or start or end.
func (rm *Room) logPhase(old, v *view) {
	if old.at == 0 {
		return
	}
	was, is := rm.policyAt(&old.settings, old.at), rm.policyAt(&v.settings, v.at)
	switch {
	case old.waiting == 0 && v.waiting > 0:
		rm.log.Info("waitingroom: queueing started", "waiting", v.waiting, "active", v.active)
	case old.waiting > 0 && v.waiting == 0:
		rm.log.Info("waitingroom: queueing stopped", "active", v.active)
	}
	if was.event != is.event || was.prequeue != is.prequeue {
		switch {
		case is.event != nil && is.prequeue:
			rm.log.Info("waitingroom: event pre-queue opened", "event", is.event.Name, "start", is.event.Start)
		case is.event != nil:
			rm.log.Info("waitingroom: event started", "event", is.event.Name, "end", is.event.End, "shuffle", is.event.ShuffleAtStart)
		default:
			rm.log.Info("waitingroom: event ended", "event", was.event.Name)
		}
	}
}

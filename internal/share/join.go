package share

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-waitingroom/waitingroom/store"
)

// How an instance of a fleet learns the room (fleet.go): it joins the
// fleet, reads the aggregator's view and installs it as a classic sync
// installs the state it wrote.

// errNoWrite is what update's function returns to the store to end a
// transaction without a write: it never leaves update.
var errNoWrite = errors.New("waitingroom: no write")

// update runs fn in one transaction of key's state; fn reports whether
// the transaction writes what it left in the state. A transaction that
// does not write is no error: wrote is false and err nil.
func (s *Syncer[S]) update(ctx context.Context, key string, fn func(st *store.State) bool) (wrote bool, err error) {
	err = s.cfg.Store.Update(ctx, key, func(st *store.State) error {
		if !fn(st) {
			return errNoWrite
		}
		return nil
	})
	if errors.Is(err, errNoWrite) {
		return false, nil
	}
	return err == nil, err
}

// read returns the state of key: with the store's read without a lock
// (store.Reader) when it has one, else with an Update that does not
// write, which on SQL locks the row while it reads.
func (s *Syncer[S]) read(ctx context.Context, key string) (store.State, error) {
	if r, ok := s.cfg.Store.(store.Reader); ok {
		st, err := r.Read(ctx, key)
		if err != nil {
			return store.State{}, err
		}
		return *st, nil
	}
	var st store.State
	_, err := s.update(ctx, key, func(x *store.State) bool {
		st = *x
		return false
	})
	if err != nil {
		return store.State{}, err
	}
	return st, nil
}

// step is what a step of the fleet's sync leaves the sync to do.
type step int

const (
	// done: the step did what it had to, or failed (its error says how).
	done step = iota
	// classic: the fleet path cannot vouch for itself; a classic sync is
	// made instead, with nothing lost.
	classic
	// onward: (joining) the instance joined the fleet; its sync goes on
	// through its mailbox.
	onward
)

// join is the first step of a new instance's sync (its first, with no
// classic sync yet): it joins a fleet that syncs through an aggregator
// without a classic sync, installing the view (the epoch, the clock, the
// settings); its counts go to its mailbox and it names itself in a join
// record, which the aggregator empties every round. It has no grant until
// the aggregator carves one. With no view out, a fleet may be forming: the
// instance waits for it once (its counts stay pending), else joins the
// state by a classic sync.
func (s *Syncer[S]) join(ctx context.Context, local int64) (step, error) {
	f := &s.fleet
	next, viewErr := s.readView(ctx)
	if err := ctx.Err(); err != nil {
		return done, s.syncFailed(ctx, err) // cancelled (Close) or timed out: no other way either
	}
	if next != done || viewErr != nil || s.epoch.Load() == 0 {
		f.on = false
		if !f.waited && s.forming(ctx) {
			f.waited = true
			return done, nil
		}
		return classic, nil
	}
	f.on, f.ackedAt, f.mailboxAt = true, local, local
	return onward, nil
}

// readView reads the room's view and installs it, as a classic sync
// installs the state it wrote; a classic sync must be made instead when
// the view is missing, stale, or of another epoch.
func (s *Syncer[S]) readView(ctx context.Context) (step, error) {
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
		return done, s.syncFailed(ctx, fmt.Errorf("reading the fleet's view: %w", err))
	}
	if err != nil {
		if s.fleet.on {
			s.cfg.Log.Debug("waitingroom: classic sync: the fleet's view could not be read within the patience", "err", err)
		}
		s.fleet.on = false
		return classic, nil
	}
	if st.Epoch == 0 && local-s.fleet.viewAt <= s.fleetPatience() {
		// The aggregator has not published a view yet (its lease is
		// new): the counts went out, the view of the latest sync stays.
		return done, nil
	}
	now := max(st.Clock, local+s.offset.Load())
	lease := st.Lease
	if st.Epoch != s.epoch.Load() && s.epoch.Load() != 0 || lease == nil || lease.Renewed+s.fleetPatience() < now || now > local+MaxClockLead {
		if s.fleet.on {
			s.cfg.Log.Debug("waitingroom: classic sync: the fleet's view is of another state, has no lease, or its lease was not renewed within the patience")
		}
		s.fleet.on = false
		return classic, nil
	}
	s.fleet.viewAt, s.fleet.lease, s.fleet.viewed = local, *lease, true
	s.install(ctx, &st, now, local, int(lease.Fleet))
	// A classic sync that finds the state older than this view knows it
	// went back (the fleet's instances have no classic Version of late).
	s.version = max(s.version, st.Version)
	return done, nil
}

// install installs st, a view or a state read without writing it, as a
// classic sync installs the state it wrote, with no grant.
func (s *Syncer[S]) install(ctx context.Context, st *store.State, now, local int64, fleetSize int) {
	p := s.params(now)
	set, rules := s.settle(st, now)
	p.rules, p.view = rules, true
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
	_, err := s.update(ctx, s.cfg.Name, func(x *store.State) bool {
		st = *x
		return false
	})
	if err != nil || st.Epoch == 0 {
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

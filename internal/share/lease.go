package share

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"slices"

	"github.com/go-waitingroom/waitingroom/store"
)

// The fleet's lease (fleet.go): who aggregates, and the view the
// aggregator publishes.

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
	took, err := s.update(ctx, s.cfg.Name, func(st *store.State) bool {
		l := st.Lease
		if st.Epoch != s.epoch.Load() || l != nil && (l.Holder != old.Holder || l.Term != old.Term || l.Renewed > old.Renewed) {
			return false // another state, or the lease moved on
		}
		ps, _ := fleetPeers(st, s.cfg.ID)
		if len(ps) < s.cfg.FleetMin/2 {
			return false
		}
		st.Version++
		st.Lease = &store.Lease{Holder: s.cfg.ID, Term: st.Version, Renewed: now}
		peers, term = ps, st.Version
		return true
	})
	if err != nil {
		s.cfg.Log.Debug("waitingroom: taking over the fleet's lease failed", "err", err)
	}
	if !took {
		return
	}
	s.cfg.Log.Info("waitingroom: took over the fleet's lease", "from", old.Holder, "term", term)
	s.fleet.term, s.fleet.peers = term, peers
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
	pub.Seeds = slices.Clone(st.Seeds)
	return pub
}

// publish writes pub as the room's view unless a newer one is there.
func (s *Syncer[S]) publish(ctx context.Context, pub store.State) error {
	_, err := s.update(ctx, ViewKey(s.cfg.Name), func(st *store.State) bool {
		if st.Epoch == pub.Epoch && st.Version >= pub.Version {
			return false
		}
		*st = pub
		return true
	})
	return err
}

package share

import (
	"hash/fnv"
	"slices"
	"strconv"

	"github.com/go-waitingroom/waitingroom/store"
)

// fleetLeaseTTLs is how many instance TTLs a lease outlives its latest
// renewal: as long as the instances' patience, so that an aggregator whose
// rounds a wave of classic syncs slows down keeps its lease.
const fleetLeaseTTLs = 3

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
func silentDrops(st *store.State, p *params, members []member) silence {
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
func lostToSilence(st *store.State, p *params, members []member) []store.Session {
	drops := silentDrops(st, p, members)
	var lost []store.Session
	add := func(parts ...string) {
		h := fnv.New64a()
		for _, s := range parts {
			_, _ = h.Write([]byte(s))
			_, _ = h.Write([]byte{0})
		}
		sec := FloorDiv(p.now, 1000)
		lost = append(lost, store.Session{ID: max(h.Sum64(), 1), Admitted: sec, Seen: sec, End: p.rules.sessionEnd(p.now)})
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
func settleMembers(st *store.State, p *params, v *View, members []member) []int {
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
	v.Instances = len(st.Instances)
	return at
}

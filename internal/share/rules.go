package share

// Rules are what the room's settings in force at a moment mean to the
// shared state's algorithm: the host works them out (Host.Settle) from
// the settings and the event in force; the algorithm knows nothing of
// either.
type Rules struct {
	// TotalActiveUsers and NewUsersPerMinute are the limits in force.
	TotalActiveUsers, NewUsersPerMinute int64
	// Layout lays n free slots out over the buckets of waiting visitors
	// (oldest first, with how many of each are due) as a grant: the
	// queueing method's slot algorithm. nil for a method that grants no
	// slots (everyone passes, or nobody does).
	Layout func(n int64, buckets []Bucket) Grant
	// Ordered: visitors are let in by arrival bucket, oldest first (FIFO):
	// a bucket whose due visitors the free slots cover entirely is not
	// paced, and a fleet's round reserves slots and picks in order.
	Ordered bool
	// Closed: nobody is let in from a grant (suspended, QueueAll, an
	// event's pre-queue): nothing is carved.
	Closed bool
	// Odds are the odds of the lottery's draw (View.Drawn) in the refresh
	// interval of now (Unix ms), as of view v: the method's draw, fixed
	// once an interval in the state (keepOdds). nil for a method that does
	// not draw. Refresh is the refresh interval's length, in ms.
	Odds    func(v *View, now int64) float64
	Refresh int64
	// Lottery merges the arrival seconds [Lottery[0], Lottery[1]) of an
	// event's pre-queue into one bucket once the event starts
	// (ShuffleAtStart); zero for none. Its visitors are let in in the
	// order of their places in the shuffle (View.Placed), as far as the
	// cut of each refresh interval (keepCuts): Slots is how many visitors
	// the interval of now may let in, as of view v, fractions included.
	Lottery [2]int64
	Slots   func(v *View, now int64) float64
	// Shuffles are the spans [opening of the pre-queue, end) of the
	// scheduled events that shuffle their pre-queue, in Unix seconds,
	// ordered and apart: each is a period of the lottery of its own
	// (periodAt).
	Shuffles [][2]int64
	// Event is the name of the event in force, for the tallies; "" for
	// none. Since is when, in Unix ms, an event last opened, started or
	// ended, or the live settings changed the flow (Floors.Flow;
	// math.MinInt64 for none): the admission rate is counted from then
	// (View.PerMinute), as one from before says nothing of the limits and
	// the queue now.
	Event string
	Since int64
	// Session is the session's length, in ms; Renew, that requests renew
	// it (without, a session ends Session after its admission).
	Session int64
	Renew   bool
	// Times are how long session records count and are kept.
	Times SessionTimes
}

// Bucket is the bucket a visitor of arrival second b competes in: the
// pre-queue's seconds all count as its first one once the shuffle is on,
// so that those visitors race for the same slots in random order, all
// ahead of later arrivals.
func (r *Rules) Bucket(b int64) int64 {
	if r.Lottery[1] != 0 && b >= r.Lottery[0] && b < r.Lottery[1] {
		return r.Lottery[0]
	}
	return b
}

// perRefresh is how many visitors the limits let in over a refresh
// interval of refresh ms (the due window), at least one.
func (r *Rules) perRefresh(refresh int64) int64 {
	return max(1, min(r.NewUsersPerMinute, r.TotalActiveUsers)*refresh/60_000)
}

// sessionEnd is the Unix second at which a session admitted at acceptedAt
// (Unix ms) ends whatever the visitor does: 0 with session renewal.
func (r *Rules) sessionEnd(acceptedAt int64) int64 {
	if r.Renew {
		return 0
	}
	return -FloorDiv(-(acceptedAt + r.Session), 1000) // rounded up
}

// params is everything a sync needs besides the state and the delta.
type params struct {
	now   int64 // Unix ms
	id    string
	seq   uint64 // this sync's sequence number
	rules Rules  // the settings in force at now
	// waitWindow is how long, in ms, a queued visitor stays counted after
	// a check-in.
	waitWindow   int64
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
	// view reports a state read, not written (a fleet instance's view):
	// the odds and cuts it lacks are the aggregator's to fix, not this
	// instance's (it would show visitors odds the record does not hold).
	view bool
	// keepSilent keeps the records of silent instances but expired
	// leases: the syncing instance has not synced without a failure for
	// an instance TTL yet, or the state went back (see Syncer.steadySince).
	keepSilent bool
	// reserved is, for a fleet's round, the newest bucket the reserve of
	// the aggregator's latest round covered (fleetState.reserved).
	reserved int64
	// scarceBelow is, for a fleet, the number of slots an instance below
	// which every slot goes by pick (fleetScarce); 0 for never.
	scarceBelow int64
}

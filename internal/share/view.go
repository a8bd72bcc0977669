package share

import (
	"cmp"
	"math"
	"slices"

	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store"
)

// Bucket counts the visitors waiting in one arrival bucket and in all
// older ones.
type Bucket struct {
	// Arrival is the bucket: the visitors' arrival second (Unix
	// seconds), or, mapped through an event's shuffle (Rules.Bucket), the
	// first second of its pre-queue.
	Arrival int64
	// Waiting are the visitors counted in the bucket, Before those in
	// every older one.
	Waiting int64
	Before  int64
	// Due are those of Waiting who are due to check in again: they hold a
	// FIFO reservation.
	Due int64
}

// Revoked is a revoked session of a view, and the Unix ms from which its
// cookies are refused (at once, or at the end of its hold under passes).
type Revoked struct {
	ID   uint64 // the session's visitor
	From int64  // Unix ms
}

// View is what an instance knows of the whole room after a sync: the
// shared state as the algorithm sees it (applySync). Requests read it
// without a lock, through the latest Snapshot: nothing changes it once
// installed.
type View struct {
	At       int64           // Unix ms of the sync (the shared clock)
	Active   int64           // the active visitors
	Sessions []store.Session // the session records, sorted by ID (Session looks one up)
	// Revoked are the revoked sessions, and from when their cookies are
	// refused.
	Revoked []Revoked
	// Picks are the visitors the fleet's aggregator picked (picks.go),
	// by ID: any instance may let them in from the pick's From to its
	// Until. nil when there are none.
	Picks map[uint64]store.Pick
	// Asked are the visitors asked for (State.Asks), by ID: the moment
	// each said they would be back (shared-clock ms). No instance gives
	// them a chance before it. nil when there are none.
	Asked map[uint64]int64
	// Fleet reports a view of a fleet's aggregator (fleet.go): its
	// instances ask for the due visitors they have no slot for.
	Fleet bool
	// Scarce reports a fleet with few slots an instance while a queue
	// waits (fleetScarce): its instances ask for their waiting visitors
	// in either method.
	Scarce bool
	// ReservedTo is the newest bucket whose due visitors the aggregator
	// reserves slots for (picks.go); 0 for none.
	ReservedTo int64
	// Waiting are the visitors waiting, Buckets the same by arrival
	// bucket, oldest first.
	Waiting int64
	Buckets []Bucket
	// AdmittedThisMinute are the admissions of the minute of At;
	// PerMinute the recent admissions per minute (outflow).
	AdmittedThisMinute int64
	PerMinute          float64
	// Ends is when the live sessions end unless renewed.
	Ends EndSchedule
	// Admitted are the admissions by minute, oldest first, over the last
	// hour.
	Admitted []store.Count
	// Instances is the number of instances sharing the room.
	Instances int
	// Tallies are the figures of the minutes not yet written to the kept
	// history (tally.go), the admissions of each counted.
	Tallies []store.Tally
	// Lottery are the lottery's periods as they may be shown: their
	// commitments, and the seeds revealed (lottery.go).
	Lottery []lottery.Record
	// seeds are the lottery's seeds, secrets included, for the draw
	// (Drawn); never shown.
	seeds []store.Seed

	// fair is the share of the paced slots the latest carve gave the
	// instance it carved for (before what it held): what an instance of a
	// fleet keeps of the grant it adopts (fleet.go).
	fair int64
	// due are the tallies this sync took out to write, observed what it
	// learnt (tally.go).
	due      []store.Tally
	observed observations
	// dropped are the fleet instances this sync dropped from the state:
	// their mailboxes are removed (fleet.go).
	dropped []string
}

// Session returns the record of visitor id as of the view's sync.
func (v *View) Session(id uint64) (store.Session, bool) {
	i, ok := slices.BinarySearchFunc(v.Sessions, id, func(x store.Session, id uint64) int { return cmp.Compare(x.ID, id) })
	if !ok {
		return store.Session{}, false
	}
	return v.Sessions[i], true
}

// Near reports whether fewer than n visitors wait in buckets older than
// b: a due visitor of bucket b is about to be let in, and asks for a
// slot when the instance they reached has none (picks.go).
func (v *View) Near(b, n int64) bool {
	for _, bc := range v.Buckets {
		if bc.Arrival >= b {
			return bc.Before < n
		}
	}
	// b is newer than every bucket counted: every visitor waits ahead.
	return v.Waiting < n
}

// Ahead is how many visitors are ahead in line of one competing in bucket
// b (an arrival second): everyone waiting in an older one, none of those
// of the same second (whichever asks first goes first); a fresh visitor
// is behind everyone. In the bucket of an event's shuffled pre-queue
// (lottery: Rules.Lottery; b its first second), the visitors ahead are
// those of it whose places lie between the cut in force and visitor id's
// (View.Placed, refresh intervals of refresh ms): their share of the
// places above the cut, of the others waiting in it (the expected count,
// to the nearest); half of them without a seed.
func (v *View) Ahead(b int64, lottery [2]int64, fresh bool, id uint64, refresh int64) int64 {
	if fresh {
		return v.Waiting
	}
	for _, bc := range v.Buckets {
		if bc.Arrival < b {
			continue
		}
		if lottery[1] == 0 || b != lottery[0] {
			return bc.Before
		}
		in := v.Shuffled(lottery) // the pre-queue's; the visitor is one of them
		return bc.Before + int64(math.Round(float64(max(in-1, 0))*v.placeShare(id, refresh, in)))
	}
	return v.Waiting
}

// Tied is how many of the visitors waiting in bucket b (an arrival
// second) besides one of them are expected ahead of it: half, as those of
// one second go in whichever order they ask (Ahead counts none of them);
// none for a fresh visitor, behind everyone.
func (v *View) Tied(b int64, fresh bool) int64 {
	i, ok := slices.BinarySearchFunc(v.Buckets, b, func(x Bucket, b int64) int { return cmp.Compare(x.Arrival, b) })
	if !ok || fresh {
		return 0
	}
	return max(v.Buckets[i].Waiting-1, 0) / 2
}

// placeShare is the share of the shuffled pre-queue's waiting visitors
// (waiting of them) whose places lie below visitor id's, taken as spread
// over the places above the lowest still waiting: the cut in force at
// the view's time or, when fewer were let in than it says (Total Active
// Users binds), the share of the pre-queue let in (Seed.Prequeued less
// those waiting). 0 when their turn has come, a half without a seed.
func (v *View) placeShare(id uint64, refresh, waiting int64) float64 {
	x, w := v.seedAt(v.At, refresh)
	if x == nil {
		return 0.5
	}
	lo, _ := cutAt(x, w)
	if x.Prequeued > 0 {
		lo = min(lo, max(0, float64(x.Prequeued-waiting)/float64(x.Prequeued)))
	}
	if lo >= 1 {
		return 0
	}
	return max(0, lottery.Place(x.Secret, id)-lo) / (1 - lo)
}

// Snapshot is the view requests read: the algorithm's View, and the live
// settings of the room (S: the host's settings type) with their version
// in the shared state. The Syncer installs a new one after each sync, and
// after a settings transaction (Syncer.Amend); nobody changes one once
// installed.
type Snapshot[S any] struct {
	View
	Settings        S      // the live settings
	SettingsEpoch   uint64 // the epoch of the shared state they are of
	SettingsVersion uint64 // their version in that state; 0 before the first sync
}

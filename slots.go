package waitingroom

import (
	"math"

	"github.com/go-waitingroom/waitingroom/internal/share"
)

// The slot algorithms of the queueing methods that grant slots (FIFO,
// random): how a grant is laid out over the buckets of waiting visitors,
// which the sync carves (share.Rules.Layout), and random's draw on several
// instances. The algorithm of the shared state, and the grant's
// arithmetic, are internal/share's.

// The room's units of time (share's).
const (
	slotSeconds  = share.SlotSeconds
	anyBucket    = share.AnyBucket
	maxClockLead = share.MaxClockLead
)

func slotOf(ms int64) int64                    { return share.SlotOf(ms) }
func minuteOf(ms int64) int64                  { return share.MinuteOf(ms) }
func secondOf(ms int64) int64                  { return share.FloorDiv(ms, 1000) }
func floorDiv(a, b int64) int64                { return share.FloorDiv(a, b) }
func slotCounted(slot, now, window int64) bool { return share.SlotCounted(slot, now, window) }

// grant and grantEntry are share's: what an instance may admit until its
// next sync, by bucket.
type (
	grant      = share.Grant
	grantEntry = share.GrantEntry
)

// fifoLayout reserves for the oldest buckets first; fresh arrivals get
// what is left once every waiting visitor is covered. Every instance
// reserves for the whole of an older bucket, not for its traffic share of
// it: whichever instance an older visitor reaches, no newer visitor gets
// in before them. What goes unused returns at the next sync.
func fifoLayout(n int64, buckets []share.Bucket) grant {
	g := grant{}
	for _, b := range buckets {
		if r := min(n, b.Due); r > 0 {
			g = append(g, grantEntry{Bucket: b.Arrival, N: r})
			n -= r
		}
	}
	if n > 0 {
		g = append(g, grantEntry{Bucket: anyBucket, N: n})
	}
	return g
}

// randomLayout lets any waiting visitor take any slot: one pool.
func randomLayout(n int64, _ []share.Bucket) grant {
	return grant{{Bucket: anyBucket, N: n}}
}

// The draw: random admission with several instances.
//
// One instance remembers every waiting visitor's chance: one a refresh
// interval, whichever copy of the cookie asks. Several instances each
// remember only the chances they gave, so a cookie resent to all of them,
// or shared by clients that reach different ones, would get a chance at
// each, and a slot sooner than a visitor who waits as asked. With several
// instances, a random room therefore lets in only the visitors the draw
// holds: those whose draw in the shared clock's refresh interval, or in
// one of the lottery.Hold-1 before it (the lottery's: their identity and
// the interval's number under the hour's seed, share.View.Drawn), fell
// under the interval's odds (or the one before's, until the instance has
// them). The draw is a function of the visitor, the clock and the seed:
// every copy of a cookie, at every instance, at any moment, draws the
// same, and a visitor who comes back once a refresh interval sees every
// draw made since their last request, as one who polls every second does. A visitor who holds the draw takes a slot as
// before, from the instance's grant, even before their next chance is due
// there; one who finds none comes back soon, while the draw is theirs
// (drawRetry). A new visitor without a cookie is not drawn: their first
// request takes a slot free then, as on one instance (a request without a
// cookie is a new visitor every time, so a draw would gain nothing); a
// cookie whose place lapsed brings a new place (successor), drawn like any
// other. Every slot by pick (fleetScarce) draws its own way
// (internal/share: picks.go).

// drawMargin is how many visitors the odds let win the draw for each slot
// an interval brings. More race for the slots, and whoever asks most
// often takes them first: groups of five clients sharing a cookie across
// four instances, polling every second, waited 0.74 of polite visitors'
// wait with 1.25, 0.89 with 1 (five runs pooled). The instances' grants
// bound the admissions whatever it is.
const drawMargin = 1.0

// drawScarceMargin is drawMargin where every slot goes by pick
// (fleetScarce): the visitors the draw holds are asked for, and the round
// draws among those asked (internal/share: picks.go). More than one for
// each slot, so that a pick finds a visitor who asked in time: with the
// draw's odds alone, polite visitors waited 525 s at 40 instances and 60
// a minute, 67 s with twice them.
const drawScarceMargin = 2.0

// drawOdds is the chance that one waiting visitor wins a refresh
// interval's draw at now (Unix ms), as of view v under policy p: the
// slots an interval brings (New Users Per Minute's share, or, when Total
// Active Users binds, as many as were let in lately) over the visitors
// waiting; or, when the slots released and not taken yet are more, what
// they exceed a quarter of an interval's by. Copies of a cookie counted
// waiting at several instances swell the count (up to a fold for each
// instance), and odds that small would leave slots unused: a crowd half
// replayers on four instances waited 69 s on average, against 57 s
// without the draw, and 62 s with the slots not taken counted so. Counted
// whole, they raise the odds whenever a few slots lie unused for a
// moment, which a client asking every second finds: groups of five
// sharing a cookie waited 0.75 of polite visitors' wait, 0.86 to 0.88 so;
// counted beyond a whole interval's, four instances at 20 a minute with a
// 20-second interval used 0.954 of it, 0.979 so. The odds are those times
// drawMargin, or drawScarceMargin where every slot goes by pick, at most
// one. The state fixes them at the first sync of each interval
// (internal/share: keepOdds), and every instance draws with them.
func drawOdds(v *share.View, p *policy, refresh, now int64) float64 {
	margin := drawMargin
	if v.Scarce {
		margin = drawScarceMargin
	}
	limit := int64(p.NewUsersPerMinute)
	slots := float64(limit) * float64(refresh) / 60_000
	room := int64(p.TotalActiveUsers) - v.Active
	if float64(room) < slots {
		// Total Active Users binds: the slots come as sessions end,
		// about as fast as visitors were let in lately.
		slots = max(float64(room), v.PerMinute*float64(refresh)/60_000)
	}
	admitted := v.AdmittedThisMinute
	if minuteOf(v.At) != minuteOf(now) {
		admitted = 0
	}
	// Released: New Users Per Minute's pace, an interval ahead.
	target := int64(math.Ceil(float64(limit) * float64(now-minuteOf(now)*60_000+refresh) / 60_000))
	free := max(0, min(room, min(limit, target)-admitted))
	return min(1, margin*max(slots, float64(free)-slots/4, 1)/float64(max(1, v.Waiting)))
}

// drawRetry is how long, in ms, a visitor the draw holds who found no slot
// waits before coming back: a quarter of the refresh interval of refresh
// ms, in whole seconds (what the page can say), at least one. Every
// second, the visitors the draw holds doubled the requests of four
// instances at 300 a minute and a 20-second interval (76,911 against
// 33,462 on one instance; 43,678 at a quarter), for no fairer a wait.
func drawRetry(refresh int64) int64 {
	return max(1, refresh/4/1000) * 1000
}

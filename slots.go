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

// randomLayout lets any waiting visitor take any slot, and keeps as many
// as are due to check in from fresh arrivals: those get what is left once
// every waiting visitor is covered, as in FIFO. (Taking the slots free at
// their first request, fresh arrivals went ahead of the waiting visitors
// the draw holds, who come at their chances: on one instance, the
// waiting got in within the median shown 0.40 of the time, not 0.5.)
func randomLayout(n int64, buckets []share.Bucket) grant {
	var due int64
	for _, b := range buckets {
		due += b.Due
	}
	g := grant{}
	if k := min(n, due); k > 0 {
		g = append(g, grantEntry{Bucket: waitingBucket, N: k})
		n -= k
	}
	if n > 0 {
		g = append(g, grantEntry{Bucket: anyBucket, N: n})
	}
	return g
}

// waitingBucket marks the entry of a random grant that visitors waiting
// may take and fresh arrivals may not: every waiting visitor's bucket is
// older.
const waitingBucket = anyBucket - 1

// The draw: random admission, on one instance or many. Only the visitors
// the lottery's draw holds take a slot (share.View.Drawn: their identity
// and the refresh interval under the period's seed, below the interval's
// odds), so that who gets in follows from public facts (docs/lottery.md);
// and, where each instance remembers only the chances it gave, copies of
// a cookie at several instances draw the same at each. With several
// instances, one the draw holds who finds no slot comes back soon
// (drawRetry). A new visitor without a cookie is not drawn: they take a
// slot not kept for the visitors due (randomLayout). An event's shuffled pre-queue is let in the same way, in the
// order of the places the seed gives (share.View.Placed), on any number
// of instances. docs/fairness.md and docs/lottery.md tell the rest.

// drawMargin is how many visitors the odds let win the draw for each slot
// an interval brings. More race for the slots, and whoever asks most often
// takes them first (groups of five sharing a cookie across four instances
// waited 0.74 of polite visitors' wait with 1.25, 0.89 with 1).
const drawMargin = 1.0

// drawScarceMargin is drawMargin where every slot goes by pick
// (fleetScarce): the visitors the draw holds are asked for, and the round
// draws among those asked (internal/share: picks.go). More than one for
// each slot, so that a pick finds a visitor who asked in time.
const drawScarceMargin = 2.0

// drawSlots is how many visitors the draw of a refresh interval at now
// (Unix ms) lets in, as of view v under policy p: the odds of one waiting
// visitor are these over the visitors waiting (drawOdds), and the share
// of an event's shuffled pre-queue the interval's cut adds, these over
// its visitors still waiting (internal/share: keepCuts). They are the
// slots an interval brings (New Users Per Minute's share, or, when Total
// Active Users binds, as many as were let in lately), or, when the slots
// released and not taken yet are more, what they exceed a quarter of an
// interval's by (copies of a cookie counted waiting at several instances
// swell the count, and odds that small would leave slots unused:
// docs/fairness.md). The state fixes the odds and cuts at the first sync
// of each interval, and every instance draws with them.
func drawSlots(v *share.View, p *policy, refresh, now int64) float64 {
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
	return max(slots, float64(free)-slots/4, 1)
}

// drawOdds is the chance that one waiting visitor wins the draw of a
// refresh interval at now (Unix ms): drawSlots over the visitors waiting,
// times drawMargin, or drawScarceMargin where every slot goes by pick.
func drawOdds(v *share.View, p *policy, refresh, now int64) float64 {
	margin := drawMargin
	if v.Scarce {
		margin = drawScarceMargin
	}
	return min(1, margin*drawSlots(v, p, refresh, now)/float64(max(1, v.Waiting)))
}

// drawRetry is how long, in ms, a visitor the draw holds who found no slot
// waits before coming back: a quarter of the refresh interval of refresh
// ms, in whole seconds (what the page can say), at least one. Back every
// second, they doubled four instances' requests (76,911 against 43,678 at
// a quarter), for no fairer a wait.
func drawRetry(refresh int64) int64 {
	return max(1, refresh/4/1000) * 1000
}

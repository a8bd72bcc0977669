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
	anyBucket    = share.AnyBucket
	maxClockLead = share.MaxClockLead
)

func slotOf(ms int64) int64     { return share.SlotOf(ms) }
func minuteOf(ms int64) int64   { return share.MinuteOf(ms) }
func secondOf(ms int64) int64   { return share.FloorDiv(ms, 1000) }
func floorDiv(a, b int64) int64 { return share.FloorDiv(a, b) }

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
// as are due from fresh arrivals, who get the rest (docs/fairness.md).
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

// waitingBucket marks a random grant's entry for the waiting only.
const waitingBucket = anyBucket - 1

// The draw: in random, only the visitors the lottery's draw holds take a
// slot (View.Drawn), the same for every copy at every instance; on
// several, one who finds none is back soon (drawRetry) and asked for, one
// the next interval's will hold at its start (View.NextDrawn). A shuffled
// pre-queue goes in by the seed's places (View.Placed): docs/lottery.md.

// drawMargin is how many visitors the odds let win the draw for each slot
// an interval brings (docs/fairness.md weighs fairness against filling).
const drawMargin = 1.0

// drawScarceMargin is drawMargin where every slot goes by pick
// (fleetScarce: internal/share, picks.go): more than one for each slot,
// so that a pick finds a visitor who asked in time.
const drawScarceMargin = 2.0

// intervalSlots is how many visitors a refresh interval at now (Unix ms)
// lets in, as of v under p: New Users Per Minute's share (as many as were
// let in lately when Total Active Users binds), or the slots released and
// untaken less a quarter interval's, if more (copies counted at several
// instances swell the count); fractions included, as a shuffle's cut moves.
func intervalSlots(v *share.View, p *policy, refresh, now int64) float64 {
	limit := int64(p.NewUsersPerMinute)
	slots := float64(limit) * float64(refresh) / 60_000
	room := int64(p.TotalActiveUsers) - v.Active
	if activeBinds(v, p, refresh) {
		// Slots come as sessions end, as fast as visitors were let in lately.
		slots = max(float64(room), v.PerMinute*float64(refresh)/60_000)
	}
	admitted := v.AdmittedThisMinute
	if minuteOf(v.At) != minuteOf(now) {
		admitted = 0
	}
	// Released: New Users Per Minute's pace, an interval ahead.
	target := int64(math.Ceil(float64(limit) * float64(now-minuteOf(now)*60_000+refresh) / 60_000))
	free := max(0, min(room, min(limit, target)-admitted))
	return max(slots, float64(free)-slots/4)
}

// activeBinds reports whether Total Active Users binds, as of v under p:
// fewer slots left among the active than a refresh interval's brings.
func activeBinds(v *share.View, p *policy, refresh int64) bool {
	return float64(int64(p.TotalActiveUsers)-v.Active) < float64(p.NewUsersPerMinute)*float64(refresh)/60_000
}

// drawOdds is the chance that one waiting visitor wins the draw of a
// refresh interval at now (Unix ms): intervalSlots, at least one, over the
// visitors waiting, times drawMargin, or drawScarceMargin where every slot
// goes by pick; of those an event's shuffled pre-queue (let in by places
// first) leaves, for the others. The first sync of an interval fixes them.
func drawOdds(v *share.View, p *policy, refresh, now int64) float64 {
	margin := drawMargin
	if v.Scarce {
		margin = drawScarceMargin
	}
	slots, waiting := max(intervalSlots(v, p, refresh, now), 1), float64(max(1, v.Waiting))
	pre := float64(v.Shuffled(p.lottery)) // the shuffled pre-queue's
	if slots, waiting = slots-pre, waiting-pre; slots <= 0 || waiting <= 0 {
		return 0
	}
	return min(1, margin*slots/waiting)
}

// drawRetry is how long, in ms, a visitor the draw holds who found no slot
// waits before coming back: a quarter of the refresh interval of refresh
// ms, in whole seconds, at least one (docs/fairness.md).
func drawRetry(refresh int64) int64 {
	return max(1, refresh/4/1000) * 1000
}

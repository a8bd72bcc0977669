package waitingroom

// The draw: random admission with several instances.
//
// One instance remembers every waiting visitor's chance: one a refresh
// interval, whichever copy of the cookie asks. Several instances each
// remember only the chances they gave, so a cookie resent to all of them,
// or shared by clients that reach different ones, would get a chance at
// each, and a slot sooner than a visitor who waits as asked. With several
// instances, a random room therefore lets in only the visitors the draw
// holds: a visitor holds it for drawClaims refresh intervals of the shared
// clock after one whose draw (their identity mixed with the interval's
// number) fell under the odds. The draw is a function of the visitor and
// the clock alone: every copy of a cookie, at every instance, at any
// moment, draws the same, and a visitor who comes back once a refresh
// interval sees every draw made since their last request, as one who
// polls every second does. A visitor who holds the draw takes a slot as
// before, from the instance's grant, even before their next chance is due
// there; one who finds none comes back soon, while the draw is theirs
// (drawRetry). A new visitor without a cookie is not drawn: their first
// request takes a slot free then, as on one instance (a request without a
// cookie is a new visitor every time, so a draw would gain nothing); a
// cookie whose place lapsed brings a new place (successor), drawn like any
// other. Every slot by pick (fleetScarce) draws its own way (picks.go).

// drawClaims is how many refresh intervals a winning draw is held: the
// interval it was made for and the next two, so that a visitor who comes
// back once an interval (late by up to one) finds it.
const drawClaims = 3

// drawMargin is how many visitors the odds let win the draw for each slot
// an interval brings. More race for the slots, and whoever asks most
// often takes them first: groups of five clients sharing a cookie across
// four instances, polling every second, waited 0.74 of polite visitors'
// wait with 1.25, 0.89 with 1 (five runs pooled). The instances' grants
// bound the admissions whatever it is.
const drawMargin = 1.0

// drawn reports whether a random room's draw holds visitor id at now
// (Unix ms, the shared clock), as of view v under policy p with a refresh
// interval of refresh ms: whether one of the draws of the latest
// drawClaims refresh intervals fell under the odds (drawOdds).
func drawn(v *view, p *policy, id uint64, now, refresh int64) bool {
	odds := drawOdds(v, p, refresh)
	w := floorDiv(now, refresh)
	for k := range int64(drawClaims) {
		if unitDraw(successor(id, w-k)) < odds {
			return true
		}
	}
	return false
}

// drawOdds is the chance that one waiting visitor wins a refresh
// interval's draw: drawMargin times the slots an interval brings (New
// Users Per Minute's share, or what Total Active Users leaves when it
// binds; at least one), over the visitors waiting.
func drawOdds(v *view, p *policy, refresh int64) float64 {
	limit := int64(p.NewUsersPerMinute)
	slots := float64(limit) * float64(refresh) / 60_000
	room := int64(p.TotalActiveUsers) - v.active
	if float64(room) < slots {
		// Total Active Users binds: the slots come as sessions end,
		// about as fast as visitors were let in lately.
		slots = max(float64(room), v.perMinute*float64(refresh)/60_000)
	}
	return min(1, drawMargin*max(slots, 1)/float64(max(1, v.waiting)))
}

// unitDraw maps a mixed identity to [0, 1).
func unitDraw(x uint64) float64 { return float64(x>>11) / (1 << 53) }

// drawRetry is how long, in ms, a visitor the draw holds who found no slot
// waits before coming back: a quarter of the refresh interval of refresh
// ms, in whole seconds (what the page can say), at least one. Every
// second, the visitors the draw holds doubled the requests of four
// instances at 300 a minute and a 20-second interval (76,911 against
// 33,462 on one instance; 43,910 at a quarter), for no fairer a wait.
func drawRetry(refresh int64) int64 {
	return max(1, refresh/4/1000) * 1000
}

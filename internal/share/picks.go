package share

import (
	"cmp"
	"maps"
	"math"
	"slices"

	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store"
)

// Admission by visitor in a fleet's ordered queue (docs/design.md,
// "Picks and the reserve").
//
// Every instance of a fleet reserves its grant for the due visitors of the
// oldest buckets, so that whichever instance an older visitor reaches, no
// newer visitor gets in before them. Once only a few of the oldest
// bucket's visitors are due, that holds the whole fleet's slots for them:
// with a grant of a slot or two an instance, every instance reserves its
// slots for those few, who reach the one instance holding a slot after
// several refreshes, or never (those who gave up count as due until their
// due window ends). So a fleet's round reserves them once, for the fleet
// (the reserve), and lays the instances' grants out over the newer
// buckets; an instance that has no slot for a due visitor asks for them
// (delta.asks, sent with its batch; the state keeps the ask until the
// visitor is back, State.Asks), the round picks the oldest asked
// visitors (picks), and whichever instance a picked visitor reaches next
// lets them in, from no grant of its own. A visitor of a bucket the
// reserve covers is told to come back once the pick can be in the view
// (pickWait), so the newer visitors let in meanwhile are ahead of them by
// seconds, not by refreshes.
//
// The reserve and every pick are records of the state (State.Reserve,
// State.Picks) whose slots every limit counts: a pick until the visitor's
// session is in the state (the admission counts instead) or it expires;
// the reserve until the next round sets it again.

// picksOf returns the picks of st still good at now, by visitor ID (nil
// for none), and the newest bucket the reserve covers (0 for none).
func picksOf(st *store.State, now int64) (map[uint64]store.Pick, int64) {
	var picks map[uint64]store.Pick
	for _, pk := range st.Picks {
		if pk.Until > now {
			if picks == nil {
				picks = map[uint64]store.Pick{}
			}
			picks[pk.Visitor] = pk
		}
	}
	var upto int64
	if st.Reserve != nil {
		upto = st.Reserve.Upto
	}
	return picks, upto
}

// askSlack is how long, in ms, an ask holds after the moment its visitor
// said they would be back, and a pick of them: the lateness a visitor is
// allowed (half a refresh interval) and a sync (a pick may reach the
// instance they come back to a sync late).
func askSlack(p *params) int64 { return p.rules.Refresh/2 + syncEvery(p.syncInterval) }

// keepAsks sets st.Asks to the asks that still hold at p.now, of those
// st had and of asks (the latest moment each visitor gave), but for the
// visitors st has a pick or a session of; and returns them, by visitor:
// the moment each said they would be back.
func keepAsks(st *store.State, asks map[uint64]ask, p *params) map[uint64]int64 {
	all := delta{asks: maps.Clone(asks)} // merged as a sync's news are
	for _, a := range st.Asks {
		all.ask(a.Visitor, a.Bucket, a.At)
	}
	for _, pk := range st.Picks {
		delete(all.asks, pk.Visitor)
	}
	st.Asks = st.Asks[:0]
	var at map[uint64]int64
	for id, a := range all.asks {
		if a.at+askSlack(p) <= p.now || hasSession(st.Sessions, id) {
			continue
		}
		if at == nil {
			at = make(map[uint64]int64, len(all.asks))
		}
		at[id] = a.at
		st.Asks = append(st.Asks, store.Ask{Visitor: id, Bucket: a.bucket, At: a.at})
	}
	slices.SortFunc(st.Asks, func(x, y store.Ask) int { return cmp.Compare(x.Visitor, y.Visitor) })
	return at
}

// settlePicks drops the picks whose visitor's session is in st (let in:
// the admission counts instead of the pick) and returns the picks left,
// by the bucket they were asked in.
func settlePicks(st *store.State) map[int64]int64 {
	var byBucket map[int64]int64
	st.Picks = slices.DeleteFunc(st.Picks, func(pk store.Pick) bool {
		if hasSession(st.Sessions, pk.Visitor) {
			return true
		}
		if byBucket == nil {
			byBucket = map[int64]int64{}
		}
		byBucket[pk.Bucket]++
		return false
	})
	return byBucket
}

// hasSession reports whether ss (sorted by ID) holds a record of id.
func hasSession(ss []store.Session, id uint64) bool {
	_, ok := slices.BinarySearchFunc(ss, id, func(s store.Session, id uint64) int { return cmp.Compare(s.ID, id) })
	return ok
}

// keepReserve keeps the reserve of st through a grace, when a round
// carves nothing: its record is marked as set at p.now, and covers the
// buckets the aggregator's latest round reserved (p.reserved) if the
// state went back to before that. A record the state did not have holds
// no slot: the visitors it covers are told to come back soon, and the
// first round after the grace reserves for them what it can.
func keepReserve(st *store.State, p params) {
	switch r := st.Reserve; {
	case r != nil:
		r.Set = max(r.Set, p.now)
		r.Upto = max(r.Upto, p.reserved)
	case st.Lease != nil && p.reserved > 0:
		st.Reserve = &store.Reserve{Upto: p.reserved, Set: p.now}
	}
}

// fleetScarce reports whether a fleet's round, or an instance of it,
// sees few slots for its instances while a queue waits (more visitors
// waiting than may be let in now): New Users Per Minute, or Total Active
// Users, below p.scarceBelow slots an instance (fleetScarceBelow). A
// grant carved then is a slot or two, or none, and an instance holding
// one waits for a visitor who may take it while the visitors waiting at
// the others find none: 1,000 instances at 100 a minute let in a quarter
// of it in FIFO and under two thirds in random; 40 at 100 a minute, 0.985
// in FIFO. So every slot goes by pick: the round carves the instances
// nothing more, they keep none of the grants they adopt, and they ask
// for their waiting visitors in either method (in random, the round
// draws among them).
func fleetScarce(p *params, v *View) bool {
	if p.rules.Layout == nil || v.Instances <= 0 {
		return false
	}
	slots := min(p.rules.NewUsersPerMinute, p.rules.TotalActiveUsers)
	return slots < int64(v.Instances)*p.scarceBelow && v.Waiting > freeSlots(&p.rules, v)
}

// fleetScarceBelow is the number of slots an instance below which a fleet
// admits its waiting visitors by pick only (fleetScarce).
const fleetScarceBelow = 4

// reserveAndPick is a fleet's round's part in an ordered queue, before it
// carves the instances' grants: it picks asked visitors and sets the
// reserve, from the slots free and released (carve, as for one instance
// holding every share) beyond what the instances hold, and returns the
// buckets for the instances' grants to be laid out over (the due visitors
// of each that no pick or reserve covers) and the slots held in all
// (grants, plus the change). picked are the picks st holds, by bucket
// (settlePicks); ahead is what carve leaves out of the release.
func reserveAndPick(st *store.State, p params, v *View, buckets []Bucket, grp grouping, asks map[uint64]ask, picked map[int64]int64, grants, ahead int64) ([]Bucket, int64) {
	lay := slices.Clone(buckets)
	coverDue(lay, grp, picked)
	if st.Lease == nil {
		return lay, grants
	}
	var picks, before int64
	for _, n := range picked {
		picks += n
	}
	// The reserve is the aggregator's to set again: its slots and the
	// picks' are what this part holds.
	// was: the newest bucket the reserve covered (a record kept through
	// a grace may hold no slot yet), or the aggregator's latest round's
	// if the state went back to before it.
	was := p.reserved
	if r := st.Reserve; r != nil {
		before = max(r.Slots, 0)
		was = max(was, r.Upto)
		r.Slots = 0
	}
	// The picks are held: each is a slot promised to a visitor. So is
	// the reserve (the release does not take back what it gave), but
	// only as far as the slots free now allow: nobody is let in from it
	// but by a pick. (Kept whole, a reserve read back from a state that
	// went back, where the admissions of the lost seconds are reported
	// again, would give out slots that those admissions took.)
	kept := min(before, max(0, freeSlots(&p.rules, v)-(grants-before)))
	held := picks + kept
	limit := held
	if g := carve(p, v, buckets, buckets, 1, grants-before-picks, held, ahead); g != nil {
		limit = g.Total()
	}
	made := pick(st, &p, asks, lay, grp, limit-picks)
	var n int64
	for _, k := range made {
		n += k
	}
	coverDue(lay, grp, made)
	if !p.rules.Ordered {
		// Random (fleetScarce): no order to keep, so no reserve. (Its
		// record, if the room was FIFO, is left with no slot.)
		if r := st.Reserve; r != nil {
			*r = store.Reserve{Set: p.now}
		}
		return lay, grants + n - before
	}
	// The oldest bucket's due visitors, if the rest covers them
	// entirely, are reserved once for the fleet (not a newer bucket's:
	// its visitors would ask and wait for a pick where fresh arrivals
	// take the instances' slots). A bucket the reserve covered keeps what
	// it can have of it (more of its visitors were counted due since, or
	// the state went back: p.reserved), and stays covered with no slot
	// left: those told to come back for their pick find it, or ask again
	// soon rather than in a refresh interval (a state that went back 20 s
	// swelled the bucket's count past the slots, and its visitors, told to
	// come back in a refresh, missed the instances holding one, 71 to 83 s
	// late); every instance reserves for the rest.
	left := max(0, limit-picks-n)
	var r, upto int64
	for i := range lay {
		if lay[i].Due <= 0 {
			continue
		}
		if k := min(lay[i].Due, left); k == lay[i].Due || lay[i].Arrival <= was {
			r, upto = k, lay[i].Arrival
			lay[i].Due -= k
		}
		break
	}
	if st.Reserve != nil || upto > 0 {
		st.Reserve = &store.Reserve{Slots: r, Upto: upto, Set: p.now}
	}
	return lay, grants + n + r - before
}

// pickWinners turns the slots of grant g, carved for an instance of a
// random room, into picks of the visitors asked for (asks): winners of
// the draw an instance had no slot for (the room asks for them while New
// Users Per Minute binds). Whichever instance a picked winner reaches
// next lets them in, so a win waits for its visitor rather than going to
// whichever copy of another cookie asks first at the instance holding a
// slot (docs/fairness.md). It returns what is left of g (nil stays nil:
// the instance's holding is unchanged).
func pickWinners(st *store.State, p *params, asks map[uint64]ask, g Grant) Grant {
	if g == nil || len(asks) == 0 {
		return g
	}
	var n int64
	for _, k := range pick(st, p, asks, nil, grouping{}, g.Total()) {
		n += k
	}
	out := Grant{}
	for _, e := range g {
		k := min(n, e.N)
		n -= k
		if e.N > k {
			out = append(out, GrantEntry{Bucket: e.Bucket, N: e.N - k})
		}
	}
	return out
}

// pick adds to st a pick of each of up to n of the asked visitors whose
// ask still holds at p.now and whom st has neither a session nor a pick
// of (nor back only once a pick of them would end), and returns the
// picks made, by bucket. A pick lets its visitor in from when they said
// they would be back (not sooner: a copy of their cookie at another
// instance would), for askSlack more, and never past the longest a
// waiting visitor stays counted (an ask is an instance's word). Ordered,
// it picks the oldest buckets first, and the visitors
// of a bucket only while no due visitor of an older one is left (lay: the
// due visitors of each bucket that no pick covers yet): those will ask
// too, and a newer visitor picked before them would be let in first;
// those of an event's shuffled pre-queue in the order of their places
// (ranks). Otherwise (random) it picks the lowest ranks: the instances
// ask for the visitors the draw holds, or will next interval, at their
// chances. A rank above 1 is not picked (a place that has not come, a
// win that does not hold), nor a pick made past the bound ranks give. A
// visitor asked for again while picked keeps their pick until their ask
// holds (it may not have reached the instance they came to), from the
// same moment.
func pick(st *store.State, p *params, asks map[uint64]ask, lay []Bucket, grp grouping, n int64) map[int64]int64 {
	if len(asks) == 0 {
		return nil
	}
	now, slack, ordered := p.now, askSlack(p), p.rules.Ordered
	last := now + p.waitWindow // the latest a pick lasts
	have := map[uint64]bool{}
	for i := range st.Picks {
		pk := &st.Picks[i]
		have[pk.Visitor] = true
		if a, ok := asks[pk.Visitor]; ok {
			pk.Until = max(pk.Until, min(a.at+slack, last))
		}
	}
	if n <= 0 {
		return nil
	}
	type asked struct {
		id          uint64
		bucket      int64
		from, until int64
		place       float64
	}
	ranks := pickRanks(st, p)
	var cs []asked
	for id, a := range asks {
		if a.at+slack > now && !have[id] && !hasSession(st.Sessions, id) {
			place, end := ranks(id, a.bucket)
			if until := min(a.at+slack, end, last); a.at < until {
				cs = append(cs, asked{id, a.bucket, a.at, until, place})
			}
		}
	}
	if ordered {
		slices.SortFunc(cs, func(x, y asked) int {
			return cmp.Or(cmp.Compare(x.bucket, y.bucket), cmp.Compare(x.place, y.place),
				cmp.Compare(x.from, y.from), cmp.Compare(x.id, y.id))
		})
	} else {
		// The seed's draws: a retried round draws the same.
		slices.SortFunc(cs, func(x, y asked) int { return cmp.Or(cmp.Compare(x.place, y.place), cmp.Compare(x.id, y.id)) })
	}
	var out map[int64]int64
	byKey := map[int64]int64{} // the picks made, by the key of lay's group
	i := 0                     // lay[:i] are the groups older than the one picked from
	var older int64
	for _, c := range cs[:min(int64(len(cs)), n)] {
		if c.place > 1 {
			continue // a shuffled pre-queue's visitor whose place has not come
		}
		// Blocked by the due visitors of an older minute only: spans
		// of seconds held the picks back behind a few visitors of the
		// oldest span who had not asked (200 instances at 20 a minute
		// used 0.961 to 0.979 of it, 0.986 by the minute).
		key := grp.key(c.bucket)
		for i < len(lay) && FloorDiv(lay[i].Arrival, 60) < FloorDiv(key, 60) {
			older += max(0, lay[i].Due-byKey[lay[i].Arrival])
			i++
		}
		if older > 0 && ordered {
			break
		}
		st.Picks = append(st.Picks, store.Pick{Visitor: c.id, Bucket: c.bucket, From: c.from, Until: c.until})
		if out == nil {
			out = map[int64]int64{}
		}
		out[c.bucket]++
		byKey[key]++
	}
	return out
}

// pickRanks returns the ranks pick orders the asked visitors by, under
// the seed of the interval of p.now: in the bucket of the shuffled
// pre-queue of the event in force (Rules.Lottery), their places
// (View.Placed), 2 (not to be picked) where the place is not below the
// cut in force or there is no seed; elsewhere, ordered, 0 (the order of
// arrival decides); random, in a fleet's round, their lowest winning
// draw and until when the win holds them (drawRank), in a classic sync
// their draw of the interval, or a mix of the visitor and the time
// without a seed. The second value bounds the pick (math.MaxInt64: none).
func pickRanks(st *store.State, p *params) func(id uint64, bucket int64) (float64, int64) {
	r := &p.rules
	var x *store.Seed
	var w, first int64
	cut, o, held := 0.0, 0.0, false
	if r.Refresh > 0 {
		w = FloorDiv(p.now, r.Refresh)
		if x = intervalSeed(st.Seeds, w, r.Refresh); x != nil && x.Interval == r.Refresh {
			cut, _ = cutAt(x, w)
		}
		if x != nil {
			first = firstInterval(x, r.Refresh)
			o, held = heldOdds(x, w)
		}
	}
	return func(id uint64, bucket int64) (float64, int64) {
		switch {
		case r.Lottery[1] != 0 && bucket == r.Lottery[0]:
			if x == nil || cut == 0 {
				return 2, math.MaxInt64
			}
			if pl := lottery.Place(x.Secret, id); pl < cut {
				return pl, math.MaxInt64
			}
			return 2, math.MaxInt64
		case r.Ordered:
			return 0, math.MaxInt64
		case x == nil:
			return float64(Mix(id, p.now)>>11) / (1 << 53), math.MaxInt64
		}
		if !p.round {
			// A classic sync's picks are of the winners of its own
			// instance, back within a second, let in while Drawn.
			return lottery.Draw(x.Secret, id, w), math.MaxInt64
		}
		return drawRank(x, id, w, first, o, held, r.Refresh, p.now+3*syncEvery(p.syncInterval))
	}
}

// drawRank is the rank of visitor id among the winners asked for in
// random, in refresh interval w of refresh ms (first: the first of seed
// x's period; o the odds in force, if held): the lowest of their draws
// that hold them (View.Drawn), so that a win waits for its visitor
// through the intervals it holds, ahead of later wins, whenever they
// ask; and until when (ms) it holds them. A visitor it does not hold
// until by (a pick could not reach them in time: they are asked to come
// back within three syncs, PickWait) ranks 2, not picked: nobody is let
// in whom the draw does not hold (docs/lottery.md).
func drawRank(x *store.Seed, id uint64, w, first int64, o float64, held bool, refresh, by int64) (float64, int64) {
	d, end := 2.0, int64(0)
	for i := w; i > w-lottery.Hold && i >= first; i-- {
		di := lottery.Draw(x.Secret, id, i)
		if oi, ok := winOdds(x, i, o, held); !ok || di >= oi {
			continue
		}
		d = min(d, di)
		// A win under its own interval's odds holds Hold intervals from
		// it; one under the odds in force only, to the interval's end.
		if own, ok := heldOdds(x, i); ok && di < own {
			end = max(end, (i+lottery.Hold)*refresh)
		} else {
			end = max(end, (w+1)*refresh)
		}
	}
	// Nor past the period's end.
	end = min(end, FloorDiv(x.End*1000, refresh)*refresh)
	if d > 1 || end < by {
		return 2, end
	}
	return d, end
}

// coverDue takes from the due visitors of buckets (oldest first, grouped
// as grp says: groupBuckets) those that n (arrival second →
// slots) holds slots for.
func coverDue(buckets []Bucket, grp grouping, n map[int64]int64) {
	for b, k := range n {
		b = grp.key(b)
		if i, ok := slices.BinarySearchFunc(buckets, b, func(c Bucket, b int64) int { return cmp.Compare(c.Arrival, b) }); ok {
			buckets[i].Due = max(0, buckets[i].Due-k)
		}
	}
}

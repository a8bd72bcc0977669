package share

import (
	"slices"

	"github.com/go-waitingroom/waitingroom/store"
)

// applySync merges d into st, drops what expired, settles this instance's
// previous grant and carves a new one from the free slots. It is the whole
// shared-state algorithm; it does no I/O and runs inside Store.Update.
func applySync(st *store.State, p params, d *delta) (Grant, *View) {
	out, v := applyRound(st, p, []member{{id: p.id, seq: p.seq, held: p.held, attempts: d.attempts, leaving: p.leaving}}, []*delta{d})
	v.fair = out[0].fair
	return out[0].g, v
}

// member is an instance whose news a sync applies: the classic sync's own,
// or each instance a round of the fleet's aggregator applies (fleet.go).
type member struct {
	id  string
	seq uint64 // its latest batch, now applied
	// held is what it may still admit beyond the admissions its batches
	// bring (Instance.Grant until the carve).
	held     int64
	attempts int64 // its admission attempts since its previous sync
	// noCarve: carve it nothing this time; its record holds held.
	noCarve bool
	// leaving: the instance is closing (Close): its news is its last, it
	// holds nothing, and its record goes with this sync, its grant back to
	// the pool.
	leaving bool
}

// carving is what applyRound carved for a member: its grant (nil: its
// holding stays as it is) and its share of the paced slots (View.fair).
type carving struct {
	g    Grant
	fair int64
	// scarce: the round carved in a fleet with few slots an instance
	// (fleetScarce): the instance keeps none of its grant.
	scarce bool
}

// applyRound is applySync for several instances at once: ds holds the
// news of each member, which are merged into st together, once; then
// every member's record is settled, and a grant carved for each, in
// order, from the slots the merged state leaves free. p is the sync's
// parameters but for the member's own (p.id, p.seq, p.held). The merge,
// the pass over the sessions and the cells, is done once however many
// members there are: a round that applied every instance's news by a
// sync of its own went over the whole state once per instance.
//
// Each member's release (the pace, see carve) is the one it would have
// had from a sync of its own, the members after it not applied yet: it
// does not count the admissions the later members bring, which they made
// from grants carved (and paced) before. What every member may take is
// bounded by the merged state, so the limits are exact either way;
// pacing against every admission of the round would give the members
// carved first fewer slots than a round of syncs did (FIFO utilization
// at 40 instances, 0.931 against 0.958).
func applyRound(st *store.State, p params, members []member, ds []*delta) ([]carving, *View) {
	ahead := laterAdmissions(st, MinuteOf(p.now), ds)
	d := roundNews(st, &p, members, ds)
	v, admitted, obs := mergeShared(st, &p, d)
	picked := settlePicks(st)
	at := settleMembers(st, &p, v, members)
	out := make([]carving, len(members))
	if p.now < st.Grace {
		// Nothing is carved while a grace runs, but the reserve stays
		// (its visitors are told to come back soon rather than in a
		// refresh interval): the first round after sets it again, within
		// the slots free then.
		if p.round {
			keepReserve(st, p)
		}
	} else {
		if !p.view {
			keepCuts(st, &p, v) // before the picks, which follow it
		}
		carveMembers(st, p, v, members, at, d.asks, picked, ahead, out)
		if !p.view {
			keepOdds(st, &p, v)
		}
	}
	// The minutes written now hold the odds and cuts fixed above.
	v.due = tallySync(st, &p, v, &obs, admitted)
	v.observed = obs
	v.Picks, v.ReservedTo = picksOf(st, p.now)
	v.Asked = keepAsks(st, d.asks, &p)
	v.Lottery = publicSeeds(st.Seeds, p.now, p.revealAfter())
	v.seeds = slices.Clone(st.Seeds)
	// The members that leave go, their grants back to the pool.
	for _, m := range members {
		if m.leaving {
			st.Instances = slices.DeleteFunc(st.Instances, func(in store.Instance) bool { return in.ID == m.id })
			v.dropped = append(v.dropped, m.id)
		}
	}
	return out, v
}

// roundNews is the news a sync of members brings to st: their deltas
// merged, and a session record for each admission the instances it drops
// as silent may have made (lostToSilence).
func roundNews(st *store.State, p *params, members []member, ds []*delta) *delta {
	d := ds[0]
	if len(ds) > 1 {
		d = newDelta()
		for _, o := range ds {
			d.add(o)
		}
	}
	lost := lostToSilence(st, p, members)
	if d == ds[0] && (len(lost) > 0 || p.round && len(st.Asks) > 0) {
		d = newDelta() // the member's batch may be sent again
		d.add(ds[0])
	}
	for _, x := range lost {
		d.session(x)
	}
	// A fleet's round weighs again the asks that still hold: a visitor
	// is asked for from one chance to the next, however many rounds
	// their asks reached (a cookie at several instances reached more,
	// and was picked ahead of visitors as likely to win). A classic sync
	// picks (in random) the winners of its own instance only: its grant
	// is its own.
	if p.round {
		for _, a := range st.Asks {
			if a.At+askSlack(p) > p.now {
				d.ask(a.Visitor, a.Bucket, a.At)
			}
		}
	}
	return d
}

// carveMembers carves, into out, a grant for each member (their records
// at st.Instances[at[i]]) from the slots the merged state v leaves free;
// a fleet's round first picks the visitors asked for (asks) and sets the
// reserve (picks.go). picked are the picks st holds, by bucket; ahead,
// what each member's release leaves out (laterAdmissions).
func carveMembers(st *store.State, p params, v *View, members []member, at []int, asks map[uint64]ask, picked map[int64]int64, ahead []int64, out []carving) {
	// The share follows traffic, with a floor so that an instance that
	// happened to see nobody lately can still admit the next visitor.
	// Every slot held counts: the instances' grants, the picks' and the
	// reserve's (picks.go).
	if n := freeSlots(&p.rules, v); int64(len(st.Picks)) > n {
		st.Picks = st.Picks[:n] // the limits went down: the latest picks go
	}
	grants := int64(len(st.Picks))
	if st.Reserve != nil {
		grants += max(st.Reserve.Slots, 0)
	}
	var traffic float64
	for _, in := range st.Instances {
		grants += max(in.Grant, 0)
		traffic += max(in.Traffic, 0)
	}
	fair := 1 / float64(max(v.Instances, 1))
	scarce := p.round && fleetScarce(&p, v)
	v.Scarce = scarce
	buckets, grp := reserveBuckets(v.Buckets, &p.rules), grouping{}
	if p.rules.Ordered && !scarce {
		// Every slot by pick (scarce) goes to a visitor who asked, by
		// second: grouped, 200 instances at 20 a minute used 0.96 to
		// 0.98 of it, 0.996 to 1 by second.
		buckets, grp = groupBuckets(buckets, p.rules.perRefresh(p.dueWindow), int64(v.Instances))
	}
	// In an ordered queue, a fleet's round picks the visitors asked for
	// and may reserve the oldest bucket's due visitors once for the fleet
	// (picks.go); the instances' grants are laid out over the rest.
	lay := buckets
	if p.round && (p.rules.Ordered || scarce) {
		lay, grants = reserveAndPick(st, p, v, buckets, grp, asks, picked, grants, ahead[0])
	}
	for i, m := range members {
		if m.noCarve || m.leaving {
			continue
		}
		me := &st.Instances[at[i]]
		part := fair
		switch {
		case scarce:
			part = 0 // every slot goes by pick
		case traffic > 0:
			part = max(max(me.Traffic, 0)/traffic, fair/2)
		}
		held := max(me.Grant, 0)
		g := carve(p, v, buckets, lay, part, grants-held, m.held, ahead[i])
		if !p.rules.Ordered && !scarce {
			n := len(st.Picks)
			g = pickWinners(st, &p, asks, g)
			grants += int64(len(st.Picks) - n) // the picks hold them now
		}
		out[i] = carving{g: g, fair: v.fair, scarce: scarce}
		if g != nil {
			me.Grant = g.Total()
			grants += g.Total() - held
		}
	}
}

// laterAdmissions returns, for each of the deltas in order, how many
// visitors the deltas after it let in during the minute nowMin that st
// (before the merge) and the deltas before do not count yet.
func laterAdmissions(st *store.State, nowMin int64, ds []*delta) []int64 {
	later := make([]int64, len(ds))
	if len(ds) < 2 {
		return later
	}
	counted := map[uint64]bool{}
	for _, d := range ds[1:] {
		for id, x := range d.sessions {
			if FloorDiv(x.Admitted, 60) == nowMin {
				counted[id] = false
			}
		}
	}
	if len(counted) == 0 {
		return later
	}
	for _, x := range st.Sessions {
		if _, ok := counted[x.ID]; ok {
			counted[x.ID] = true
		}
	}
	for id := range ds[0].sessions {
		if _, ok := counted[id]; ok {
			counted[id] = true
		}
	}
	// brings[i]: the admissions delta i is the first to bring; later[i]
	// sums those of the deltas after it.
	brings := make([]int64, len(ds))
	for i := 1; i < len(ds); i++ {
		for id, x := range ds[i].sessions {
			if FloorDiv(x.Admitted, 60) == nowMin && !counted[id] {
				counted[id] = true
				brings[i]++
			}
		}
	}
	for i := len(ds) - 2; i >= 0; i-- {
		later[i] = later[i+1] + brings[i+1]
	}
	return later
}

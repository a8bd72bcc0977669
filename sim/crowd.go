package sim

import (
	"math"
	"slices"
	"time"
)

// schedule draws the arrivals and each visitor's kind.
func (r *run) schedule() {
	o := r.o
	n := o.Visitors
	span := float64(o.Arrivals.Milliseconds())
	arr := make([]int64, n)
	uniform := func(a []int64) {
		for i := range a {
			a[i] = int64((float64(i) + r.rng.Float64()) * span / float64(len(a)))
		}
	}
	switch o.Arrival {
	case Uniform:
		uniform(arr)
	case AllAtOnce:
		for i := range arr {
			arr[i] = r.rng.Int64N(1000)
		}
	case Spike:
		k := int(math.Round(o.SpikeShare * float64(n)))
		burst := max(o.SpikeSpan.Milliseconds(), 1)
		for i := range k {
			arr[i] = r.rng.Int64N(burst)
		}
		uniform(arr[k:])
	}
	slices.Sort(arr)
	// The bot farm's identities, merged in by arrival.
	var bot []bool
	if nb := o.BotsPerMinute * int(o.Arrivals/time.Minute); nb > 0 {
		bots := make([]int64, nb)
		uniform(bots)
		all := make([]int64, 0, n+nb)
		bot = make([]bool, 0, n+nb)
		for i, j := 0, 0; i < n || j < nb; {
			if j == nb || (i < n && arr[i] <= bots[j]) {
				all, bot = append(all, arr[i]), append(bot, false)
				i++
			} else {
				all, bot = append(all, bots[j]), append(bot, true)
				j++
			}
		}
		arr, n = all, n+nb
	}
	r.arrivals = arr
	r.ties = make([]uint32, n)
	r.vs = make([]Visitor, n)
	r.lv = make([]live, n)
	for i := range r.vs {
		r.ties[i] = r.rng.Uint32()
		if bot != nil && bot[i] {
			r.vs[i].Kind = Bot
			continue
		}
		if o.Spammers > 0 || o.Replayers > 0 || o.Cloners > 0 {
			k := kindOf(r.rng.Float64(), o.Spammers, o.Replayers, o.Cloners)
			r.vs[i].Kind, r.vs[i].Spammer = k, k == Spammer
		}
	}
}

// kindOf is the kind of a visitor whose draw in [0, 1) is u, given the
// shares of each dishonest or impatient kind.
func kindOf(u float64, shares ...float64) Kind {
	for k, share := range shares {
		if u < share {
			return Kind(k + 1)
		}
		u -= share
	}
	return Polite
}

// clone copies the waiting cookie the room just gave cloner group i's first
// client to the group's other clients. The first client comes back a step
// after at; the j-th of the others j/CloneSize of a step later.
func (r *run) clone(i int32, at int64, step time.Duration) {
	k := int64(r.o.CloneSize)
	cookie := r.lv[i].req.Header["Cookie"][0]
	r.lv[i].clients = int32(k)
	for j := int64(1); j < k; j++ {
		c := int32(len(r.lv))
		req := r.reqs.get()
		req.Header["Cookie"] = []string{cookie}
		r.lv = append(r.lv, live{req: req})
		r.owner = append(r.owner, i)
		r.clients++
		r.push(c, at+step.Milliseconds()*(k+j)/k+r.latency())
	}
}

// visitorOf returns the visitor of client c.
func (r *run) visitorOf(c int32) int32 {
	if int(c) < len(r.vs) {
		return c
	}
	return r.owner[int(c)-len(r.vs)]
}

// unwait stops counting visitor i as waiting.
func (r *run) unwait(i int32) {
	if lead := &r.lv[i]; lead.waiting {
		lead.waiting = false
		r.waiting--
	}
}

// leave ends client c's visit: no more requests. A visitor leaves with
// their last client; one who leaves neither let in nor giving up was turned
// away.
func (r *run) leave(c int32) {
	l := &r.lv[c]
	r.reqs.put(l.req)
	l.req = nil
	r.clients--
	i := r.visitorOf(c)
	if lead := &r.lv[i]; lead.clients > 0 {
		if lead.clients--; lead.clients > 0 {
			return
		}
	}
	r.unwait(i)
	if v := &r.vs[i]; !v.WasAdmitted && !v.Abandoned {
		r.res.TurnedAway++
	}
}

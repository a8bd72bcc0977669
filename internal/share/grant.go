package share

import (
	"cmp"
	"math"
	"slices"
)

// GrantEntry is a number of admissions reserved for visitors of a bucket
// (or of any bucket: AnyBucket).
type GrantEntry struct {
	Bucket int64 // the bucket's second, or AnyBucket
	N      int64 // admissions
}

// Grant is what an instance may admit until its next sync, sorted by
// bucket, oldest first. The instance's grant is used under Local's lock.
type Grant []GrantEntry

// Total is the number of admissions g holds.
func (g Grant) Total() int64 {
	var n int64
	for _, e := range g {
		n += e.N
	}
	return n
}

// take consumes one admission for a visitor of bucket b; fresh visitors
// (no place in the queue yet) may only take the AnyBucket entry. A queued
// visitor takes from their own bucket first, then from the newest entries
// down to their own: an older visitor may take a newer visitor's slot,
// never the other way round.
// It reports the bucket of the entry it took from.
func (g Grant) take(b int64, fresh bool) (int64, bool) {
	if !fresh {
		if i, ok := slices.BinarySearchFunc(g, b, func(e GrantEntry, b int64) int { return cmp.Compare(e.Bucket, b) }); ok && g[i].N > 0 {
			g[i].N--
			return g[i].Bucket, true
		}
	}
	for i := len(g) - 1; i >= 0 && g[i].Bucket >= b; i-- {
		if fresh && g[i].Bucket != AnyBucket {
			break
		}
		if g[i].N > 0 {
			g[i].N--
			return g[i].Bucket, true
		}
	}
	return 0, false
}

// olderHeld reports whether g holds an admission for a bucket older than
// b.
func (g Grant) olderHeld(b int64) bool {
	return slices.ContainsFunc(g, func(e GrantEntry) bool { return e.Bucket < b && e.N > 0 })
}

// keep returns what of g to keep using while a sync is in flight: up to n
// admissions, from the newest entries (fresh arrivals first). g itself is
// left as it was.
func (g Grant) keep(n int64) Grant {
	var k Grant
	for i := len(g) - 1; i >= 0 && n > 0; i-- {
		if m := min(n, g[i].N); m > 0 {
			k = append(k, GrantEntry{Bucket: g[i].Bucket, N: m})
			n -= m
		}
	}
	slices.Reverse(k)
	return k
}

// charge takes from g the admissions made from entries of the given
// buckets while g was being carved: from the same entry where it can, else
// from the newest ones.
func (g Grant) charge(used map[int64]int64) {
	var rest int64
	for b, n := range used {
		if i, ok := slices.BinarySearchFunc(g, b, func(e GrantEntry, b int64) int { return cmp.Compare(e.Bucket, b) }); ok {
			k := min(n, g[i].N)
			g[i].N -= k
			n -= k
		}
		rest += n
	}
	for i := len(g) - 1; i >= 0 && rest > 0; i-- {
		k := min(rest, g[i].N)
		g[i].N -= k
		rest -= k
	}
}

// carve sizes this instance's grant: its share (part) of the free slots,
// never more than what the other instances' grants leave, and lays it out
// over the buckets. The grant includes what the instance still holds
// (held), taken back only beyond the free slots; a nil grant leaves the
// holding as it is. ahead are admissions v counts that the release (the pace) leaves
// out: those of the instances a round carves for after this one
// (applyRound). The grant is laid out over lay: buckets, or, in a fleet's
// round, what the round has not reserved yet of their due visitors.
func carve(p params, v *View, buckets, lay []Bucket, part float64, others, held, ahead int64) Grant {
	r := &p.rules
	if r.Closed || r.Layout == nil {
		if held > freeSlots(r, v) {
			return Grant{} // the limits went down while it was closed: it goes
		}
		return nil
	}
	// While more visitors wait than the minute has slots left, New Users
	// Per Minute is released over the minute, so slots come free all along
	// it rather than in a burst at its start (a burst favours whoever
	// checks in first). Otherwise every waiting visitor can be covered at
	// once and the rest goes to fresh arrivals.
	//
	// The release paces this instance's share only. The limits bound what
	// all instances hold together: grants that others still hold from the
	// minute before count against this minute's limit, not against its
	// release, or they would hold up the first seconds of every minute
	// until the visitors they are reserved for come by.
	limit := r.NewUsersPerMinute
	target := limit
	released := v.AdmittedThisMinute - ahead // what the release counts
	if v.Waiting >= target-released {
		// The release runs a sync interval ahead: what this grant may
		// admit before the next. A grant a fleet's round carves is
		// adopted at the instance's next mailbox write and used until
		// the one after, and a small share waits a while for a visitor
		// (at 40 instances and 100 a minute, slots released in the
		// minute's last seconds went unused by its end: FIFO
		// utilization, with the reserve and picks, 0.978 with the
		// release not ahead at all, 0.987 to 0.989 with fleetLead
		// intervals).
		lead := p.syncInterval
		if p.round {
			lead = fleetLead * syncEvery(p.syncInterval)
		}
		into := float64(p.now-MinuteOf(p.now)*60_000+lead) / 60_000
		target = min(target, int64(math.Ceil(float64(r.NewUsersPerMinute)*into)))
	}
	room := r.TotalActiveUsers - v.Active
	free := freeSlots(r, v)
	paced := max(0, min(room+ahead, target-released))
	// Pacing is for visitors who race for too few slots. In an ordered
	// queue, the oldest buckets whose due visitors the free slots cover
	// entirely race for nothing: they keep their slots whatever the pace,
	// or newer visitors let in early in the minute (while everyone
	// waiting was covered) would push them behind the pace, after those
	// newer visitors.
	if r.Ordered {
		paced = max(paced, coveredWhole(buckets, max(0, min(room+ahead, limit-released))))
	}
	v.fair = int64(math.Ceil(float64(paced) * part))
	// What the instance holds fits in the free slots, unless the limits
	// went down (an Update, an event's start): then it is taken back
	// (and the instance, seeing them lower, drops the grant: Room).
	held = min(held, free)
	extra := min(max(0, free-others-held), max(0, v.fair-held))
	n := held + extra
	if n == 0 {
		return Grant{}
	}
	return r.Layout(n, lay)
}

// freeSlots is how many visitors r allows to be let in now beyond those
// v counts (admitted this minute, active), held grants included.
func freeSlots(r *Rules, v *View) int64 {
	room := r.TotalActiveUsers - v.Active
	return max(0, min(room, r.NewUsersPerMinute-v.AdmittedThisMinute))
}

// fleetLead is how many sync intervals ahead the release runs for a
// grant a fleet's round carves (carve).
const fleetLead = 3

// syncEvery is the sync interval, in ms, of a room whose SyncInterval is
// interval ms: a second when it is not positive (the application syncs
// the room itself, as the tests' virtual clocks do every second).
func syncEvery(interval int64) int64 {
	if interval <= 0 {
		return 1000
	}
	return interval
}

// coveredWhole is the number of due visitors in the oldest buckets that
// free slots cover entirely, bucket by bucket.
func coveredWhole(buckets []Bucket, free int64) int64 {
	var n int64
	for _, b := range buckets {
		if n+b.Due > free {
			break
		}
		n += b.Due
	}
	return n
}

// Grants are laid out over groups of arrival seconds.
//
// A slot kept for the visitors of one second waits for them alone. Several
// instances each keep slots for the whole of the oldest buckets, but a
// visitor reaches one of them: kept for a second or two of visitors, the
// slots of every other instance would wait for visitors who come
// elsewhere, while the visitors who do come are newer (40 instances let in
// a quarter of New Users Per Minute). One instance too: a visitor who gave
// up is due until their due window ends, and the slot kept for their
// second with them (one instance, Total Active Users binding: 0.87 of the
// limits used, 0.97 grouped). So the seconds are grouped, aligned, into
// spans (spans) of at least a refresh interval's admissions at the limit
// (Rules.perRefresh) from the oldest due: within a span, whoever comes
// first goes first; between spans, the order holds. The fewer visitors a
// refresh interval lets in, the shorter the span: one second when it lets
// in one.

// spans are the lengths, in seconds, that groupBuckets tries in turn:
// each divides a minute, so no span straddles two minutes.
var spans = [...]int64{1, 2, 3, 5, 10, 15, 30, 60}

// grouping is how groupBuckets grouped the arrival seconds: aligned spans
// of span seconds, but that those from the one whose newest second is
// from to the one whose newest is head make one group. Span 1 (the zero
// grouping too) groups nothing.
type grouping struct{ span, from, head int64 }

// key is the key of the group of arrival second b: its newest second.
func (g grouping) key(b int64) int64 {
	if g.span <= 1 {
		return b
	}
	if k := spanKey(b, g.span); k < g.from || k > g.head {
		return k
	}
	return g.head
}

// groupBuckets groups bs (arrival seconds, oldest first) into aligned
// spans of the shortest length in whose seconds from the oldest due
// visitor's at least need of them arrived, a minute at most; among
// instances, the oldest spans of the oldest due visitor's minute make one
// group until it holds need less need/instances of them. Each group is
// keyed by its newest second (grouping.key; a visitor of the group takes
// from it: Grant.take), with the counts of its buckets summed.
//
// The span is counted from the oldest due visitor's second, not from the
// start of the aligned span that holds it: once the visitors of the
// oldest span are mostly in, its few left (not back yet, or gone) took
// spans of up to a minute to fill, and the whole line went by the minute
// (on one instance, a visitor let in 2 minutes 38 s after one who arrived
// 2.5 s after them). On one instance those few have the slots of their
// group to themselves. Every instance keeps slots for them, though each
// reaches one: 31 instances keeping them for those few alone used 0.93
// of the limits, so among instances they share a group with the next
// spans, the more the instances the fuller (within it, whoever comes
// first goes first).
func groupBuckets(bs []Bucket, need, instances int64) ([]Bucket, grouping) {
	first := slices.IndexFunc(bs, func(b Bucket) bool { return b.Due > 0 })
	if first < 0 || need <= 1 {
		return bs, grouping{span: 1}
	}
	span := spans[len(spans)-1]
	for _, s := range spans {
		end := bs[first].Arrival + s
		var due int64
		for _, b := range bs[first:] {
			if b.Arrival >= end {
				break
			}
			due += b.Due
		}
		if due >= need {
			span = s
			break
		}
	}
	if span == 1 {
		return bs, grouping{span: 1}
	}
	g := grouping{span: span, from: spanKey(bs[first].Arrival, span)}
	g.head = g.from
	last := FloorDiv(bs[first].Arrival, 60)*60 + 59 // the minute's last second
	full := need - need/max(instances, 1)
	var due int64
	for _, b := range bs[first:] {
		if k := spanKey(b.Arrival, span); k > g.head {
			if due >= full || k > last {
				break
			}
			g.head = k
		}
		due += b.Due
	}
	out := make([]Bucket, 0, len(bs))
	for _, b := range bs {
		key := g.key(b.Arrival)
		if n := len(out); n > 0 && out[n-1].Arrival == key {
			out[n-1].Waiting += b.Waiting
			out[n-1].Due += b.Due
			continue
		}
		b.Arrival = key
		out = append(out, b)
	}
	return out, g
}

// spanKey is the key of the group of arrival second b in spans of span
// seconds: the span's newest second.
func spanKey(b, span int64) int64 { return FloorDiv(b, span)*span + span - 1 }

// reserveBuckets maps the waiting buckets through the rules (an event's
// shuffled pre-queue counts as one bucket) and merges those that map to
// the same one. It returns the input when nothing maps.
func reserveBuckets(bs []Bucket, r *Rules) []Bucket {
	if r.Lottery[1] == 0 {
		return bs
	}
	out := make([]Bucket, 0, len(bs))
	for _, b := range bs {
		b.Arrival = r.Bucket(b.Arrival)
		if n := len(out); n > 0 && out[n-1].Arrival == b.Arrival {
			out[n-1].Waiting += b.Waiting
			out[n-1].Due += b.Due
			continue
		}
		out = append(out, b)
	}
	return out
}

package share

import (
	"cmp"
	"slices"

	"github.com/go-waitingroom/waitingroom/store"
)

// mergeShared merges d into what st shares among the instances (sessions,
// admissions, waiting cells), drops what expired there and returns the
// view of it, the admissions by minute and what the merge observed.
func mergeShared(st *store.State, p *params, d *delta) (*View, map[int64]int64, observations) {
	admitted := make(map[int64]int64, len(st.Admitted)+1)
	for _, c := range st.Admitted {
		admitted[c.Key] += c.N
	}
	v := &View{At: p.now}
	var obs observations
	mergeSessionsOf(st, p, d, v, admitted, &obs)
	keepAdmitted(st, p, v, admitted)
	mergeWaiting(st, p, d, v, &obs)
	return v, admitted, obs
}

// mergeSessionsOf merges the session reports of d into st: one record
// per visitor, so a report merges into the record of its ID however many
// holders of the cookie sent it, and an admission counts (in admitted,
// by minute) when it brings an ID the state did not have. It drops the
// records no cookie can be presented for any more, and counts into v the
// active sessions, when they end, and the revoked ones.
func mergeSessionsOf(st *store.State, p *params, d *delta, v *View, admitted map[int64]int64, obs *observations) {
	now := p.now
	times := p.rules.Times
	if len(st.Instances) <= 1 && (len(st.Instances) == 0 || st.Instances[0].ID == p.id) {
		// Alone, this instance's reports all arrive before it carves:
		// nothing is on its way.
		times.Margin = 0
	}
	st.Sessions = mergeSessions(st.Sessions, d.sessions, func(x *store.Session) {
		admitted[FloorDiv(x.Admitted, 60)]++
		if w, ok := d.waits[x.ID]; ok {
			obs.waits = append(obs.waits, minuteValue{FloorDiv(x.Admitted, 60), (w + 500) / 1000})
		}
	})
	st.Sessions = slices.DeleteFunc(st.Sessions, func(x store.Session) bool {
		if times.kept(&x, now) {
			return false
		}
		obs.sessions = append(obs.sessions, max(x.Seen-x.Admitted, 0))
		return true
	})
	ends := newEndCounter(now, times)
	for i := range st.Sessions {
		x := &st.Sessions[i]
		if times.Alive(x, now) {
			v.Active++
			ends.add(x)
		}
		if from, ok := revokedFrom(x); ok {
			v.Revoked = append(v.Revoked, Revoked{ID: x.ID, From: from})
		}
	}
	v.Sessions = slices.Clone(st.Sessions)
	v.Ends = ends.schedule()
}

// keepAdmitted writes the admissions by minute (admitted) back into st,
// an hour of them, and counts into v this minute's and the recent rate.
func keepAdmitted(st *store.State, p *params, v *View, admitted map[int64]int64) {
	nowMin := MinuteOf(p.now)
	st.Admitted = st.Admitted[:0]
	for k, n := range admitted {
		if n != 0 && k > nowMin-historyMinutes && k <= nowMin+1 {
			st.Admitted = append(st.Admitted, store.Count{Key: k, N: n})
		}
	}
	slices.SortFunc(st.Admitted, func(a, b store.Count) int { return cmp.Compare(a.Key, b.Key) })
	v.Admitted = slices.Clone(st.Admitted)
	v.AdmittedThisMinute = admitted[nowMin]
	v.PerMinute = outflow(admitted, p.now, p.rules.Since, p.rules.NewUsersPerMinute)
}

// mergeWaiting merges the waiting-count moves of d into st's cells and
// drops those that no longer count (their visitors, counted as
// abandoned, stopped refreshing), and counts into v the waiting visitors
// by bucket, oldest first. The cells are the bulk of the state (a bucket
// per minute of queue, a few check-in slots each). They are kept sorted,
// so this instance's changes are merged in one pass, and the per-bucket
// totals come out in order.
func mergeWaiting(st *store.State, p *params, d *delta, v *View, obs *observations) {
	now := p.now
	st.Waiting = mergeCells(st.Waiting, d.waiting)
	kept := st.Waiting[:0]
	for _, c := range st.Waiting {
		if c.N == 0 || !SlotCounted(c.Slot, now, p.waitWindow) {
			if c.Slot <= SlotOf(now) {
				obs.abandoned += c.N // stopped refreshing, not let in
			}
			continue
		}
		kept = append(kept, c)
		n := len(v.Buckets)
		if n == 0 || v.Buckets[n-1].Arrival != c.Bucket {
			v.Buckets = append(v.Buckets, Bucket{Arrival: c.Bucket})
			n++
		}
		v.Buckets[n-1].Waiting += c.N
		if SlotCounted(c.Slot, now, p.dueWindow) {
			v.Buckets[n-1].Due += c.N
		}
	}
	st.Waiting = kept
	v.Buckets = slices.DeleteFunc(v.Buckets, func(b Bucket) bool { return b.Waiting <= 0 })
	for i := range v.Buckets {
		v.Buckets[i].Due = max(v.Buckets[i].Due, 0)
		v.Buckets[i].Before = v.Waiting
		v.Waiting += v.Buckets[i].Waiting
	}
}

// mergeCells returns the cells of cs (sorted by bucket and slot) with the
// changes of d added, sorted. cs is sorted first if it is not (a state
// written elsewhere). The result may share cs's memory.
func mergeCells(cs []store.Cell, d map[cellKey]int64) []store.Cell {
	cmpCell := func(a, b store.Cell) int {
		return cmp.Or(cmp.Compare(a.Bucket, b.Bucket), cmp.Compare(a.Slot, b.Slot))
	}
	add := make([]store.Cell, 0, len(d))
	for k, n := range d {
		add = append(add, store.Cell{Bucket: k.bucket, Slot: k.slot, N: n})
	}
	return mergeSorted(cs, add, cmpCell, func(c *store.Cell, n store.Cell) { c.N += n.N })
}

// mergeSessions returns the records of ss (sorted by ID) with the reports
// of d merged in, sorted; admitted is called for every record whose ID ss
// did not have. Every record is an admitted visitor's, and the first
// report of it may come from any instance (a sign of life from another
// instance can arrive before the admitting one's report), so a new record
// is the admission, counted once however many instances report it. A
// record is dropped only once none of its cookies can be presented, so it
// comes back only with a state rebuilt after a loss, which is meant to
// count it again. The result may share ss's memory.
func mergeSessions(ss []store.Session, d map[uint64]store.Session, admitted func(*store.Session)) []store.Session {
	cmpID := func(a, b store.Session) int { return cmp.Compare(a.ID, b.ID) }
	// A state written elsewhere may be unsorted, or hold an ID twice:
	// sort it and merge the records of an ID into one.
	if !strictlySorted(ss) {
		slices.SortFunc(ss, cmpID)
		out := ss[:0]
		for _, x := range ss {
			if n := len(out); n > 0 && out[n-1].ID == x.ID {
				mergeSession(&out[n-1], x)
				continue
			}
			out = append(out, x)
		}
		ss = out
	}
	if len(d) == 0 {
		return ss
	}
	// Most reports are signs of life of sessions the state has: they
	// merge in place, and only new IDs cost a merge of the slices.
	var add []store.Session
	for _, x := range d {
		if i, ok := slices.BinarySearchFunc(ss, x.ID, func(s store.Session, id uint64) int { return cmp.Compare(s.ID, id) }); ok {
			mergeSession(&ss[i], x)
			continue
		}
		add = append(add, x)
	}
	if len(add) == 0 {
		return ss
	}
	slices.SortFunc(add, func(a, b store.Session) int { return cmp.Compare(a.ID, b.ID) })
	out := make([]store.Session, 0, len(ss)+len(add))
	i := 0
	for _, x := range add {
		for i < len(ss) && ss[i].ID < x.ID {
			out = append(out, ss[i])
			i++
		}
		admitted(&x)
		out = append(out, x)
	}
	return append(out, ss[i:]...)
}

// strictlySorted reports whether ss is sorted by ID, no ID twice.
func strictlySorted(ss []store.Session) bool {
	for i := 1; i < len(ss); i++ {
		if ss[i-1].ID >= ss[i].ID {
			return false
		}
	}
	return true
}

// mergeSorted returns cs with add merged in, sorted by cmpFn, entries that
// compare equal combined with sum. cs is sorted first if it is not (a
// state written elsewhere); add is sorted in place. The result may share
// cs's memory.
func mergeSorted[T any](cs, add []T, cmpFn func(a, b T) int, sum func(*T, T)) []T {
	if !slices.IsSortedFunc(cs, cmpFn) {
		slices.SortFunc(cs, cmpFn)
	}
	if len(add) == 0 {
		return cs
	}
	slices.SortFunc(add, cmpFn)
	out := make([]T, 0, len(cs)+len(add))
	i, j := 0, 0
	for i < len(cs) || j < len(add) {
		switch {
		case j == len(add) || (i < len(cs) && cmpFn(cs[i], add[j]) < 0):
			out = append(out, cs[i])
			i++
		case i == len(cs) || cmpFn(cs[i], add[j]) > 0:
			out = append(out, add[j])
			j++
		default:
			c := cs[i]
			sum(&c, add[j])
			out = append(out, c)
			i++
			j++
		}
	}
	return out
}

// outflow is the recent admission rate per minute: admissions over the last
// outflowMinutes minutes, counted from the first minute in that window that
// had any, so a queue that just formed is not diluted by empty minutes, and
// not from before the minute of since (Unix ms: Rules.Since; events open,
// start and end on whole minutes): at an event's start, the minutes of its
// pre-queue (nobody let in) and those under the limits before it are no
// rate (the 63rd of a pre-queue was told 4 hours 24 minutes at 10 a
// minute, and let in after 6). The minute under way counts
// as at least the part of it that has passed and
// at least the time its admissions take at limit a minute: a few
// admissions early in a minute are not taken for a rate (two admitted in
// the first 15 seconds are not 8 a minute). So the rate never exceeds
// limit while every minute kept to it, and it is capped at limit besides
// (a limit lowered live). A limit ≤ 0 caps nothing.
func outflow(admitted map[int64]int64, now, since, limit int64) float64 {
	nowMin := MinuteOf(now)
	var sum int64
	first := int64(0)
	for m := max(nowMin-outflowMinutes+1, MinuteOf(since)); m <= nowMin; m++ {
		if n := admitted[m]; n > 0 {
			if sum == 0 {
				first = m
			}
			sum += n
		}
	}
	if sum == 0 {
		return 0
	}
	part := float64(now-nowMin*60_000) / 60_000
	if limit > 0 {
		part = max(part, float64(admitted[nowMin])/float64(limit))
	}
	rate := float64(sum) / (float64(nowMin-first) + min(max(part, 0.25), 1))
	if limit > 0 {
		rate = min(rate, float64(limit))
	}
	return rate
}

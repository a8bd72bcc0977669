package share

import (
	"cmp"
	"slices"

	"github.com/go-waitingroom/waitingroom/store"
)

// The figures of the kept history (store.Tally), minute by minute, for
// the whole room: every instance's sync adds what it learnt to the tally
// of the minute in the shared state, and the sync that finds a minute
// over for long enough takes its tally out of the state and writes it to
// the store's history (kept.go). What is observed:
//
//   - a wait, when a report brings the state an admission it did not have
//     (the report carries the visitor's wait, measured by the instance
//     that let them in: the room's observedWait);
//   - a session's length, when its record leaves the state (it can no
//     longer be presented): its latest request minus its admission;
//   - abandonment, when a waiting count expires: visitors counted in a
//     check-in slot older than the waiting window who were neither let in
//     nor moved to a newer slot by a check-in;
//   - the peaks of active and waiting visitors and the limits and event in
//     force, at every sync.

// roundSeconds rounds a duration in seconds to its histogram bucket: to 10
// seconds below 10 minutes, 30 seconds below an hour, 5 minutes below 6
// hours and 30 minutes above, capped at 48 hours. That is at most 305
// buckets, and p50 and p90 off by half a bucket at most (5 s for waits
// under 10 minutes).
func roundSeconds(s int64) int64 {
	var step int64
	switch {
	case s < 0:
		return 0
	case s < 600:
		step = 10
	case s < 3600:
		step = 30
	case s < 6*3600:
		step = 300
	default:
		step = 1800
	}
	return min((s+step/2)/step*step, 48*3600)
}

// observations are what one sync learnt for the tallies.
type observations struct {
	waits     []minuteValue // Unix minute of the admission, wait in seconds
	sessions  []int64       // lengths of the sessions that left the state, seconds
	abandoned int64
}

type minuteValue struct{ minute, v int64 }

// tallyAt returns the tally of minute m in st, added in order if missing;
// nil if m was written already.
func tallyAt(st *store.State, m int64) *store.Tally {
	if m <= st.Recorded {
		return nil
	}
	i, found := slices.BinarySearchFunc(st.Tallies, m, func(t store.Tally, m int64) int { return cmp.Compare(t.Minute, m) })
	if !found {
		st.Tallies = slices.Insert(st.Tallies, i, store.Tally{Minute: m})
	}
	return &st.Tallies[i]
}

// addCount adds n to the histogram cs under key k, in order.
func addCount(cs []store.Count, k, n int64) []store.Count {
	i, found := slices.BinarySearchFunc(cs, k, func(c store.Count, k int64) int { return cmp.Compare(c.Key, k) })
	if found {
		cs[i].N += n
		return cs
	}
	return slices.Insert(cs, i, store.Count{Key: k, N: n})
}

// tallyDelay is how long, in ms, after a minute ends its tally stays in
// the state before it is written: the reports of every live instance
// about it (admissions it counted) are in by then.
func tallyDelay(p *params) int64 { return p.instanceTTL }

// tallySync adds what the sync learnt to st's tallies and takes out those
// due to be written, with their admissions counted and their part of the
// lottery's record (lotteryMinute). It runs in applyRound once the sync
// has fixed the odds and cuts of its interval, so that a minute written
// by the sync that fixed them holds those of an interval begun in it. A
// store that keeps no history gets no tallies.
func tallySync(st *store.State, p *params, v *View, o *observations, admitted map[int64]int64) (due []store.Tally) {
	if !p.history {
		st.Tallies, st.Recorded = nil, 0
		return nil
	}
	now := MinuteOf(p.now)
	if st.Recorded == 0 {
		// A new state (a new room, one rebuilt after a loss, or the first
		// written with tallies): the minutes before this one are not
		// recorded, so that one already written is not replaced by what
		// a rebuild brings of it.
		st.Recorded = now - 1
	}
	// Tallies from a clock far off, or left behind by instances that
	// could not write them, are not kept forever.
	st.Tallies = slices.DeleteFunc(st.Tallies, func(t store.Tally) bool {
		return t.Minute > now+1 || t.Minute < now-historyMinutes || t.Minute <= st.Recorded
	})
	for _, w := range o.waits {
		if t := tallyAt(st, w.minute); t != nil {
			t.Waits = addCount(t.Waits, roundSeconds(w.v), 1)
			t.MaxWait = max(t.MaxWait, w.v)
		}
	}
	if t := tallyAt(st, now); t != nil {
		for _, s := range o.sessions {
			t.Sessions = addCount(t.Sessions, roundSeconds(s), 1)
			t.MaxSession = max(t.MaxSession, s)
		}
		t.Abandoned += o.abandoned
		t.Active = max(t.Active, v.Active)
		t.Waiting = max(t.Waiting, v.Waiting)
		t.TotalActiveUsers = p.rules.TotalActiveUsers
		t.NewUsersPerMinute = p.rules.NewUsersPerMinute
		t.Event = p.rules.Event
	}
	// No minute is written while a grace runs: the odds and cuts of its
	// intervals are fixed once it is over (keepOdds, keepCuts).
	n := 0
	for n < len(st.Tallies) && (st.Tallies[n].Minute+1)*60_000+tallyDelay(p) <= p.now && p.now >= st.Grace {
		n++
	}
	if n > 0 {
		due = cloneTallies(st.Tallies[:n])
		from := (st.Recorded + 1) * 60_000
		for i := range due {
			due[i].Admitted = admitted[due[i].Minute]
			due[i].Abandoned = max(due[i].Abandoned, 0)
			to := (due[i].Minute + 1) * 60_000
			due[i].Lottery = lotteryMinute(st.Seeds, from, to, p.revealAfter())
			from = to
		}
		st.Recorded = due[n-1].Minute
		st.Tallies = slices.Delete(st.Tallies, 0, n)
	}
	v.Tallies = cloneTallies(st.Tallies)
	for i := range v.Tallies {
		v.Tallies[i].Admitted = admitted[v.Tallies[i].Minute]
	}
	return due
}

// cloneTallies copies ts deeply: a store may keep the State it was given
// and the next sync change its histograms in place.
func cloneTallies(ts []store.Tally) []store.Tally {
	out := slices.Clone(ts)
	for i := range out {
		out[i].Waits = slices.Clone(out[i].Waits)
		out[i].Sessions = slices.Clone(out[i].Sessions)
	}
	return out
}

package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/hook"
	"github.com/go-waitingroom/waitingroom/store"
)

// The kept history: one record a minute for the whole room, which the
// room's instances write to its store (docs/history.md), read back here.

// ErrNoHistory is returned by Minutes when the room's store keeps no
// history (it does not implement store.HistoryStore).
var ErrNoHistory = errors.New("waitingroom: the store keeps no history")

// HistoryRetention is how long the room's store keeps its history: 30
// days of one record a minute (store.HistoryMinutes).
const HistoryRetention = store.HistoryMinutes * time.Minute

// Minute is one minute of the room's kept history: the figures of all its
// instances together. Minutes returns them.
type Minute struct {
	// Minute is the minute's beginning.
	Minute time.Time
	// Active and Waiting are the most active and waiting visitors counted
	// at any sync of the minute.
	Active  int
	Waiting int
	// Admitted is the number of visitors let in during the minute, as
	// counted against NewUsersPerMinute.
	Admitted int
	// Abandoned is the number of waiting visitors who stopped refreshing
	// before they were let in, counted in the minute their waiting count
	// expired: two longest refresh intervals after their latest check-in
	// (see docs/history.md).
	Abandoned int
	// TotalActiveUsers and NewUsersPerMinute are the limits in force at
	// the minute's latest sync (a scheduled event's included).
	TotalActiveUsers  int
	NewUsersPerMinute int
	// Event is the name of the scheduled event in force (its pre-queue
	// included), "" for none.
	Event string
	// Wait are the waits of the visitors let in during the minute.
	Wait Durations
	// Session are the lengths of the sessions that ended during the
	// minute: from the admission to the latest request, counted when the
	// room forgets the session (see docs/history.md).
	Session Durations
	// Partial reports a minute not written to the kept history yet: the
	// current minute, or one just over whose figures may still grow.
	Partial bool

	waits, sessions []store.Count // histograms, seconds
}

// Durations summarises observed durations: how many, the median, the 90th
// percentile and the longest. Percentiles are of durations rounded to 10
// seconds below 10 minutes, 30 seconds below an hour, 5 minutes below 6
// hours and 30 minutes above; Max is exact to the second.
type Durations struct {
	Count int
	P50   time.Duration
	P90   time.Duration
	Max   time.Duration
}

// durationsOf summarises the histogram cs (seconds) whose longest value is
// maxSec.
func durationsOf(cs []store.Count, maxSec int64) Durations {
	var n int64
	for _, c := range cs {
		n += max(c.N, 0)
	}
	if n == 0 {
		return Durations{}
	}
	rank := func(q float64) time.Duration {
		// Nearest rank: the smallest value with at least q of them at or
		// below it.
		need := int64(q*float64(n) + 0.999999)
		var seen int64
		for _, c := range cs {
			if seen += max(c.N, 0); seen >= need {
				return time.Duration(min(c.Key, max(maxSec, 0))) * time.Second
			}
		}
		return time.Duration(maxSec) * time.Second
	}
	return Durations{Count: int(n), P50: rank(0.5), P90: rank(0.9), Max: time.Duration(maxSec) * time.Second}
}

func minuteOfTally(t *store.Tally, partial bool) Minute {
	return Minute{
		Minute:            time.Unix(t.Minute*60, 0).UTC(),
		Active:            int(t.Active),
		Waiting:           int(t.Waiting),
		Admitted:          int(t.Admitted),
		Abandoned:         int(max(t.Abandoned, 0)),
		TotalActiveUsers:  int(t.TotalActiveUsers),
		NewUsersPerMinute: int(t.NewUsersPerMinute),
		Event:             t.Event,
		Wait:              durationsOf(t.Waits, t.MaxWait),
		Session:           durationsOf(t.Sessions, t.MaxSession),
		Partial:           partial,
		waits:             t.Waits,
		sessions:          t.Sessions,
	}
}

// Minutes returns rm's kept history from from to to, oldest first: one
// Minute for each minute in which any instance synced, all instances
// together, kept HistoryRetention by the store. The minutes not written
// yet (the current one and the one just over, Partial) come from this
// instance's latest sync. It reads the store (one query), so it is for
// operators, not for visitors' requests; it is safe for concurrent use.
// It returns ErrNoHistory if the store keeps no history.
func Minutes(ctx context.Context, rm *waitingroom.Room, from, to time.Time) ([]Minute, error) {
	hs := hook.HistoryStore(rm)
	if hs == nil {
		return nil, ErrNoHistory
	}
	lo, hi := floorDiv(from.Unix(), 60), floorDiv(to.Unix()+59, 60)
	if hi <= lo {
		return nil, nil
	}
	recs, err := hs.ReadHistory(ctx, rm.Name(), lo, hi)
	if err != nil {
		return nil, fmt.Errorf("waitingroom: history: %w", err)
	}
	out := make([]Minute, 0, len(recs)+2)
	for _, r := range recs {
		t, err := store.UnmarshalTally(r.Data)
		if err != nil {
			continue // a record damaged in the store: a gap
		}
		t.Minute = r.Minute
		out = append(out, minuteOfTally(t, false))
	}
	// What this instance wrote but the store may not show yet, then what
	// is still in the shared state.
	for _, t := range hook.Unwritten(rm) {
		if t.Minute >= lo && t.Minute < hi && (len(out) == 0 || t.Minute > out[len(out)-1].Minute.Unix()/60) {
			out = append(out, minuteOfTally(&t, true))
		}
	}
	return out, nil
}

// Report sums up the minutes of one scheduled event, from its pre-queue
// to its end: Reports makes them.
type Report struct {
	// Event is the event's name.
	Event string
	// From and To are the beginning of the event's first minute in the
	// history and the end of its last.
	From time.Time
	To   time.Time
	// Minutes is the number of minutes in the history.
	Minutes int
	// Admitted and Abandoned are the sums of the minutes'.
	Admitted  int
	Abandoned int
	// PeakActive and PeakWaiting are the most of any minute.
	PeakActive  int
	PeakWaiting int
	// PeakAdmitted is the most admissions of any minute, NewUsersPerMinute
	// the limit in force in that minute (the first of them, on a tie): how
	// near the busiest minute came to its limit.
	PeakAdmitted      int
	NewUsersPerMinute int
	// Wait and Session are over the whole event (percentiles of all its
	// minutes' visitors together).
	Wait    Durations
	Session Durations
}

// Reports returns a Report for each scheduled event in ms (minutes oldest
// first, as Minutes returns them): a run of minutes of the same event,
// which minutes of another event or of none end. Minutes missing from the
// history (no instance synced) do not end a run.
func Reports(ms []Minute) []Report {
	var out []Report
	var waits, sessions []store.Count
	var maxW, maxS int64
	var cur *Report
	end := func() {
		if cur != nil {
			cur.Wait, cur.Session = durationsOf(waits, maxW), durationsOf(sessions, maxS)
			out = append(out, *cur)
			cur, waits, sessions, maxW, maxS = nil, nil, nil, 0, 0
		}
	}
	for i := range ms {
		m := &ms[i]
		if cur != nil && m.Event != cur.Event {
			end()
		}
		if m.Event == "" {
			continue
		}
		if cur == nil {
			cur = &Report{Event: m.Event, From: m.Minute}
		}
		cur.To = m.Minute.Add(time.Minute)
		cur.Minutes++
		cur.Admitted += m.Admitted
		cur.Abandoned += m.Abandoned
		cur.PeakActive = max(cur.PeakActive, m.Active)
		cur.PeakWaiting = max(cur.PeakWaiting, m.Waiting)
		if cur.Minutes == 1 || m.Admitted > cur.PeakAdmitted {
			cur.PeakAdmitted, cur.NewUsersPerMinute = m.Admitted, m.NewUsersPerMinute
		}
		for _, c := range m.waits {
			waits = addCount(waits, c.Key, c.N)
		}
		for _, c := range m.sessions {
			sessions = addCount(sessions, c.Key, c.N)
		}
		maxW, maxS = max(maxW, int64(m.Wait.Max/time.Second)), max(maxS, int64(m.Session.Max/time.Second))
	}
	end()
	return out
}

// Coarsen merges ms (oldest first, as Minutes returns them) into one
// Minute per step, for charts of long ranges: each begins at a multiple of
// step since the Unix epoch (step is rounded down to whole minutes, at
// least one). Active, Waiting and the limits are the most of its minutes;
// Admitted and Abandoned their sums (over step, not per minute); Wait and
// Session are over all their visitors; Event is the latest minute's;
// Partial if any minute is. With a step of a minute, ms is returned as it
// is.
func Coarsen(ms []Minute, step time.Duration) []Minute {
	n := max(int64(step/time.Minute), 1)
	if n == 1 {
		return ms
	}
	var out []Minute
	var maxW, maxS int64
	for i := range ms {
		m := &ms[i]
		k := floorDiv(m.Minute.Unix()/60, n) * n
		if len(out) == 0 || out[len(out)-1].Minute.Unix()/60 != k {
			out = append(out, Minute{Minute: time.Unix(k*60, 0).UTC()})
			maxW, maxS = 0, 0
		}
		c := &out[len(out)-1]
		c.Active, c.Waiting = max(c.Active, m.Active), max(c.Waiting, m.Waiting)
		c.TotalActiveUsers = max(c.TotalActiveUsers, m.TotalActiveUsers)
		c.NewUsersPerMinute = max(c.NewUsersPerMinute, m.NewUsersPerMinute)
		c.Admitted += m.Admitted
		c.Abandoned += m.Abandoned
		c.Event = m.Event
		c.Partial = c.Partial || m.Partial
		for _, x := range m.waits {
			c.waits = addCount(c.waits, x.Key, x.N)
		}
		for _, x := range m.sessions {
			c.sessions = addCount(c.sessions, x.Key, x.N)
		}
		maxW, maxS = max(maxW, int64(m.Wait.Max/time.Second)), max(maxS, int64(m.Session.Max/time.Second))
		c.Wait, c.Session = durationsOf(c.waits, maxW), durationsOf(c.sessions, maxS)
	}
	return out
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

// floorDiv is a / b rounded towards minus infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

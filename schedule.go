package waitingroom

import (
	"math"
	"slices"

	"github.com/go-waitingroom/waitingroom/store"
)

// endResolution is the number of steps an end schedule has at most: the
// live sessions' ends are counted in steps of the longest session over
// endResolution (a second at least), close enough for estimates shown in
// whole minutes and cheap at every sync however many sessions live.
const endResolution = 512

// renewingWithin is how recently, in ms, a session must have been seen to
// count as being renewed: its end is then only the earliest it can be.
const renewingWithin = 60_000

// endStep says that by at (Unix ms), n of the live sessions in all will
// have ended unless renewed.
type endStep struct{ at, n int64 }

// endSchedule is when the live sessions of a view end if none of them is
// renewed: cumulative counts by time, earliest first.
type endSchedule struct {
	steps []endStep
	// renewing is the Unix ms from which the ends are those of sessions
	// seen within the last minute: visitors who may well come back and
	// push their end further, so those ends are lower bounds only.
	renewing int64
}

// endCounter counts the live sessions by the step of their end.
type endCounter struct {
	now, step int64
	times     sessionTimes
	counts    []int64
}

func newEndCounter(now int64, t sessionTimes) *endCounter {
	span := max(t.window, 0) + max(t.margin, 0) + 1000
	step := max(1000, (span+endResolution-1)/endResolution)
	return &endCounter{now: now, step: step, times: t, counts: make([]int64, span/step+2)}
}

// add counts the live session x.
func (c *endCounter) add(x *store.Session) {
	end := (x.Seen+1)*1000 + c.times.window + c.times.margin
	if x.End != 0 {
		end = min(end, x.End*1000)
	}
	i := min(max((end-c.now)/c.step, 0), int64(len(c.counts)-1))
	c.counts[i]++
}

func (c *endCounter) schedule() endSchedule {
	s := endSchedule{renewing: c.now + c.times.window + c.times.margin - renewingWithin}
	var n int64
	for i, k := range c.counts {
		if k == 0 {
			continue
		}
		n += k
		// The end of the step: no session is taken to end before it does.
		s.steps = append(s.steps, endStep{at: c.now + int64(i+1)*c.step, n: n})
	}
	return s
}

// end is the Unix ms by which the j-th session (1-based) to end will have
// ended unless renewed, and whether that session is being renewed. ok is
// false when fewer than j sessions live.
func (s *endSchedule) end(j int64) (at int64, renewing, ok bool) {
	i, _ := slices.BinarySearchFunc(s.steps, j, func(e endStep, j int64) int {
		switch {
		case e.n < j:
			return -1
		case e.n > j:
			return 1
		}
		return 0
	})
	if i == len(s.steps) {
		return 0, false, false
	}
	at = s.steps[i].at
	return at, at >= s.renewing, true
}

// waitAfter is the wait, in minutes, for the admission that follows ahead
// other visitors', as of view v under policy p, and whether it is known.
// byRate is the wait, in minutes, the recent admission rate gives (no
// more than ahead ÷ rate for FIFO), or NaN when nothing was let in lately.
// The wait is the latest of the bounds that apply:
//
//   - the limit on new visitors: NewUsersPerMinute a minute, spread over
//     the minute, counting those admitted this minute already;
//   - while TotalActiveUsers binds, the slots: a visitor gets in when a
//     slot frees, and the room knows when each live session ends unless
//     renewed (the state counts every active visitor by the second of
//     their latest request), so the k-th slot to free is the k-th session
//     end. Beyond the live sessions, slots come round once per session
//     hold: the session duration, or the active visitors over the
//     observed outflow when that is longer (visitors who keep browsing
//     hold their slot longer);
//   - byRate, when the slots do not bind or the slot waited for is held
//     by a session seen within the last minute (which may be renewed, so
//     its end is only the earliest the slot can free). Where the ends are
//     known, the rate is not used: slots that free in bursts (sessions
//     that began together) make a rate that is wrong at every moment.
//
// The wait is unknown when the slot waited for is held by a session seen
// within the last minute and nothing was let in lately.
func (v *view) waitAfter(p *policy, ahead, byRate float64) (float64, bool) {
	if math.IsNaN(ahead) || v.at == 0 {
		return 0, false // a view before the first sync knows nothing
	}
	ahead = min(max(ahead, 0), 1e12)
	k := int64(ahead) + 1 // this visitor's admission, counted from the view's
	var wait float64      // ms
	rated := !math.IsNaN(byRate)
	byRate *= 60_000

	// New Users Per Minute, spread over each minute.
	if nupm := int64(p.NewUsersPerMinute); nupm > 0 {
		start := minuteOf(v.at) * 60_000
		j := float64(v.admittedThisMinute + k - 1)
		wait = max(wait, float64(start)+j*60_000/float64(nupm)-float64(v.at))
	}

	// Total Active Users: the k-th slot to free, as the sessions end.
	tau := int64(p.TotalActiveUsers)
	if tau <= 0 || k <= tau-v.active {
		if rated {
			wait = max(wait, byRate)
		}
		return wait / 60_000, true
	}
	free := tau - v.active // negative while more are active than the limit
	round, i := (k-1)/tau, (k-1)%tau
	at := v.at
	renewing := false
	if i >= free {
		var ok bool
		at, renewing, ok = v.ends.end(i - free + 1)
		if !ok { // fewer session records than active visitors: a legacy count
			at, renewing = v.at+p.session, true
		}
	}
	hold := float64(p.session)
	if v.perMinute > 0 {
		hold = max(hold, float64(v.active)/v.perMinute*60_000)
	}
	wait = max(wait, float64(at-v.at)+float64(round)*hold)
	if renewing {
		if !rated {
			return 0, false
		}
		wait = max(wait, byRate)
	}
	return wait / 60_000, true
}

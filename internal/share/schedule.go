package share

import (
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

// EndSchedule is when the live sessions of a view end if none of them is
// renewed: cumulative counts by time, earliest first. The room's estimates
// read it (End).
type EndSchedule struct {
	steps []endStep
	// renewing is the Unix ms from which the ends are those of sessions
	// seen within the last minute: visitors who may well come back and
	// push their end further, so those ends are lower bounds only.
	renewing int64
}

// endCounter counts the live sessions by the step of their end.
type endCounter struct {
	now, step int64
	times     SessionTimes
	counts    []int64
}

func newEndCounter(now int64, t SessionTimes) *endCounter {
	span := max(t.Window, 0) + max(t.Margin, 0) + 1000
	step := max(1000, (span+endResolution-1)/endResolution)
	return &endCounter{now: now, step: step, times: t, counts: make([]int64, span/step+2)}
}

// add counts the live session x.
func (c *endCounter) add(x *store.Session) {
	end := (x.Seen+1)*1000 + c.times.Window + c.times.Margin
	if x.End != 0 {
		end = min(end, x.End*1000)
	}
	i := min(max((end-c.now)/c.step, 0), int64(len(c.counts)-1))
	c.counts[i]++
}

func (c *endCounter) schedule() EndSchedule {
	s := EndSchedule{renewing: c.now + c.times.Window + c.times.Margin - renewingWithin}
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

// End is the Unix ms by which the j-th session (1-based) to end will have
// ended unless renewed, and whether that session is being renewed. ok is
// false when fewer than j sessions live.
func (s *EndSchedule) End(j int64) (at int64, renewing, ok bool) {
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

// EndsOf is the end schedule, at now, of the sessions among ss that count
// as active then (SessionTimes.Alive): a view's Ends, for sessions given
// by hand.
func EndsOf(now int64, t SessionTimes, ss []store.Session) EndSchedule {
	c := newEndCounter(now, t)
	for i := range ss {
		if t.Alive(&ss[i], now) {
			c.add(&ss[i])
		}
	}
	return c.schedule()
}

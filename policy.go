package waitingroom

import (
	"math"

	"github.com/go-waitingroom/waitingroom/template"
)

// policy is what governs requests at one moment: the live settings with
// the overrides of the event in force applied.
type policy struct {
	Settings
	session  int64 // ms
	renew    bool
	reissue  int64 // ms between re-issues of an admitted visitor's cookie
	tmpl     *template.Template
	method   *method // what QueueingMethod does
	event    *Event  // the event in force (pre-queue included), or nil
	prequeue bool
	// lottery merges the arrival minutes [lottery[0], lottery[1]) of an
	// event's pre-queue into one bucket once it starts (ShuffleAtStart).
	lottery [2]int64
}

// bucket is the bucket a visitor of arrival minute b competes in: the
// pre-queue's minutes all count as its first one once the shuffle is on,
// so that those visitors race for the same slots in random order, all
// ahead of later arrivals.
func (p *policy) bucket(b int64) int64 {
	if p.lottery[1] != 0 && b >= p.lottery[0] && b < p.lottery[1] {
		return p.lottery[0]
	}
	return b
}

// eventSpan returns the span [from, until) of Unix ms around now in which
// none of events opens, starts or ends, so that policyAt gives the same
// policy at every instant of it.
func eventSpan(events []Event, now int64) (from, until int64) {
	from, until = math.MinInt64, math.MaxInt64
	for i := range events {
		e := &events[i]
		for _, t := range [...]int64{e.opens().UnixMilli(), e.Start.UnixMilli(), e.End.UnixMilli()} {
			if t <= now {
				from = max(from, t)
			} else {
				until = min(until, t)
			}
		}
	}
	return from, until
}

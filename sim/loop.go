package sim

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// loop simulates the run second by second until it ends: after Duration,
// or, without one, once every visitor has come and gone (at most
// MaxDuration).
func (r *run) loop(ctx context.Context) error {
	r.ctx = ctx
	// The rooms have synced before the first visitor comes: twice, so
	// that each knows of the others.
	for _, rm := range r.rooms {
		if err := rm.Sync(ctx); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	if err := r.sync(); err != nil {
		return err
	}
	end := cmp.Or(r.o.Duration, MaxDuration).Milliseconds()
	n := len(r.vs)
	for r.sec = 0; r.sec*1000 < end; r.sec++ {
		if r.o.Duration == 0 && r.next == n && r.clients == 0 {
			break
		}
		if r.sec%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := r.second(); err != nil {
			return err
		}
	}
	r.closeMinute()
	r.res.DurationSeconds = float64(r.sec)
	return nil
}

// second simulates one virtual second: sessions ending, the due requests
// in time order and one sync of every instance at a random instant.
func (r *run) second() error {
	s := r.sec
	ended := r.expiries[s&r.expMask]
	r.expiries[s&r.expMask] = 0
	r.active -= ended
	r.curEnded += ended
	if s%60 == 0 {
		if s > 0 {
			r.closeMinute()
		}
		r.cur = Minute{Minute: int(s / 60), WaitingAtStart: r.waiting, PeakActive: r.active}
		r.curActive, r.curEnded = r.active, 0
	}

	slot := &r.ring[s&r.ringMask]
	evs := *slot
	for r.next < len(r.arrivals) && r.arrivals[r.next] < (s+1)*1000 {
		evs = append(evs, event{at: r.arrivals[r.next], tie: r.ties[r.next], v: int32(r.next)})
		r.next++
	}
	slices.SortFunc(evs, func(a, b event) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.tie, b.tie))
	})
	for _, e := range evs {
		for r.nextSync <= e.at {
			if err := r.sync(); err != nil {
				return err
			}
		}
		r.visit(e.v, e.at)
	}
	for r.nextSync < (s+1)*1000 {
		if err := r.sync(); err != nil {
			return err
		}
	}
	*slot = evs[:0]
	return nil
}

// push schedules visitor v's next request at ms at.
func (r *run) push(v int32, at int64) {
	if at/1000-r.sec >= int64(len(r.ring)) {
		r.growRing(at/1000 - r.sec + 1)
	}
	slot := &r.ring[(at/1000)&r.ringMask]
	*slot = append(*slot, event{at: at, tie: r.rng.Uint32(), v: v})
}

// growRing makes room for requests due up to ahead seconds from now.
// Options bound how far ahead requests fall, so this is a safety net.
func (r *run) growRing(ahead int64) {
	old := r.ring
	r.ring = make([][]event, nextPow2(ahead+2))
	r.ringMask = int64(len(r.ring) - 1)
	for _, evs := range old {
		for _, e := range evs {
			slot := &r.ring[(e.at/1000)&r.ringMask]
			*slot = append(*slot, e)
		}
	}
}

// latency draws the delay of a request after the first.
func (r *run) latency() int64 {
	if r.o.Latency <= 0 {
		return 0
	}
	return r.rng.Int64N(r.o.Latency.Milliseconds() + 1)
}

// closeMinute ends the current minute's record: the visitors still
// waiting, the room's capacity in it and whether it was saturated.
func (r *run) closeMinute() {
	m := &r.cur
	m.Waiting = r.waiting
	m.Capacity = max(0, min(r.per, r.total-r.curActive+r.curEnded))
	m.Saturated = m.WaitingAtStart >= m.Capacity && m.Waiting > 0
	r.minutes = append(r.minutes, *m)
}

package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/go-waitingroom/waitingroom"
)

// TestFIFOOrderAtMinuteBoundaries holds FIFO order where a minute's slots
// start to be paced again: with 1,000 visitors over 5 minutes, a new
// minute could cover everyone waiting and let newcomers take the rest at
// once; the next sync then paced the minute, and the older visitors who
// had not checked in yet waited behind the newcomers until the pace caught
// up, most of the minute. No visitor of an older arrival minute may be
// let in later than a newer one by more than a refresh interval and a
// sync (the time to come back for a slot held for them).
func TestFIFOOrderAtMinuteBoundaries(t *testing.T) {
	t.Parallel()
	// Small runs keep the case that showed it.
	for _, perMinute := range pick([]int{100, 150, 200}, []int{150}) {
		for _, seed := range pick([]uint64{7, 8}, []uint64{7}) {
			t.Run(fmt.Sprintf("%d a minute, seed %d", perMinute, seed), func(t *testing.T) {
				t.Parallel()
				res := simulate(t, Options{
					Visitors:          1000,
					Arrivals:          5 * time.Minute,
					Seed:              seed,
					Method:            waitingroom.FIFO,
					NewUsersPerMinute: perMinute,
				})
				slack := 24 * time.Second // the longest jittered refresh interval, 22 s, and 2 s
				inversions := countInversions(t, res.VisitorRecords, slack, func(a, b *Visitor) bool {
					return a.Arrival/time.Minute < b.Arrival/time.Minute && a.Arrival < b.Admitted
				})
				assert.Zero(t, inversions, "visitors let in after a newer visitor by more than %v", slack)
			})
		}
	}
}

// TestFIFOOrderWithinAMinute holds FIFO order between spans of seconds
// where the front of the line thins: each new minute lets in a burst of
// the oldest, and the few of its span left behind (not back yet, or gone)
// are all that is due of it. Grouped into spans by the oldest span alone,
// they took spans of up to a minute to fill, and the line went by the
// minute: at 2 arrivals a second against 30 admissions a minute, one
// instance let a visitor in 2 minutes 38 s after one who arrived 2.5 s
// later, though they came back at the page's pace (592 pairs over 20 s
// apart inverted by more than a refresh and 2 s, in six minutes). The
// spans are now counted from the oldest due visitor's second. No honest
// visitor is let in more than a refresh and 2 s after one who arrived
// 20 s or more after them (35 s on four instances).
func TestFIFOOrderWithinAMinute(t *testing.T) {
	t.Parallel()
	for _, instances := range pick([]int{1, 4}, []int{1}) {
		t.Run(fmt.Sprintf("%d instances", instances), func(t *testing.T) {
			t.Parallel()
			res := simulate(t, Options{
				Visitors:          720,
				Arrivals:          6 * time.Minute,
				Method:            waitingroom.FIFO,
				NewUsersPerMinute: 30,
				TotalActiveUsers:  1000,
				RefreshInterval:   10 * time.Second,
				Instances:         instances,
			})
			slack := 13 * time.Second // the longest jittered refresh interval, 11 s, and 2 s
			apart := 20 * time.Second
			if instances > 1 {
				// Among instances the few left of the oldest span share
				// a group with the next (groupBuckets): up to a span more.
				apart = 35 * time.Second
			}
			inversions := countInversions(t, res.VisitorRecords, slack, func(a, b *Visitor) bool {
				return a.Arrival+apart <= b.Arrival
			})
			t.Logf("%d admitted of %d; %d pairs inverted", res.Admitted, res.Visitors, inversions)
			assert.Zero(t, inversions, "visitors let in more than %v after one who arrived %v or more after them", slack, apart)
		})
	}
}

// countInversions counts the pairs of visitors let in, a honest, where a
// came before b as before says yet was let in more than slack after b,
// and logs the first three.
func countInversions(t *testing.T, vs []Visitor, slack time.Duration, before func(a, b *Visitor) bool) int {
	t.Helper()
	n := 0
	for i := range vs {
		b := &vs[i]
		if !b.WasAdmitted {
			continue
		}
		for j := range vs {
			a := &vs[j]
			if a.WasAdmitted && a.Kind.honest() && before(a, b) && a.Admitted > b.Admitted+slack {
				if n++; n <= 3 {
					t.Logf("arrived at %v, let in at %v, after one who arrived at %v and was let in at %v", a.Arrival, a.Admitted, b.Arrival, b.Admitted)
				}
			}
		}
	}
	return n
}

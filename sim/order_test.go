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
				vs := res.VisitorRecords
				var inversions int
				for i := range vs {
					b := &vs[i]
					if !b.WasAdmitted {
						continue
					}
					for j := range vs {
						a := &vs[j]
						if a.WasAdmitted && a.Kind.honest() && a.Arrival/time.Minute < b.Arrival/time.Minute &&
							a.Arrival < b.Admitted && a.Admitted > b.Admitted+slack {
							if inversions++; inversions <= 3 {
								t.Logf("arrived at %v, let in at %v, after one who arrived at %v and was let in at %v", a.Arrival, a.Admitted, b.Arrival, b.Admitted)
							}
						}
					}
				}
				assert.Zero(t, inversions, "visitors let in after a newer visitor by more than %v", slack)
			})
		}
	}
}

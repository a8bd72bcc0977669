package lottery_test

import (
	"fmt"

	"github.com/go-waitingroom/waitingroom/lottery"
)

// A room commits to a seed before an hour opens, publishes the odds of
// each interval as it goes and reveals the seed once the hour is over. A
// visitor, who noted the commitment shown while they waited, checks that
// one of their draws won when they were let in.
func Example() {
	var seed lottery.Seed // lottery.NewSeed() in a room
	copy(seed[:], "a seed of exactly thirty-two b..")
	hour := lottery.Period{Start: 1764853200, End: 1764853200 + 3600}
	r := &lottery.Record{Period: hour, Commitment: lottery.Commit(seed, hour), IntervalMS: 30_000}
	shown := r.Commitment // on the visitor's page, before the hour
	first := hour.Start * 1000 / r.IntervalMS
	for w := first; w < first+4; w++ {
		r.Odds = append(r.Odds, lottery.Odds{Interval: w, Odds: 0.5})
	}
	r.Seed = seed // revealed after the hour

	const visitor = 0x2a
	rep, err := lottery.Verify(r, visitor, lottery.Claim{
		Commitment: shown,
		Waited:     []int64{first, first + 1, first + 2},
		Admitted:   first + 3,
	})
	for _, d := range rep.Draws {
		fmt.Printf("interval %d: draw %.3f, odds %.2f, won %v\n", d.Interval, d.Draw, d.Odds, d.Won)
	}
	fmt.Println("kept:", err == nil)
	// Output:
	// interval 58828440: draw 0.502, odds 0.50, won false
	// interval 58828441: draw 0.252, odds 0.50, won true
	// interval 58828442: draw 0.170, odds 0.50, won true
	// interval 58828443: draw 0.558, odds 0.50, won false
	// kept: true
}

package sim_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/sim"
)

// A crowd of 900 arrives over five minutes at a room that lets in 60 a
// minute: the room keeps its limit exactly and lets them in in order of
// arrival.
func Example() {
	res, err := sim.Run(context.Background(), sim.Options{
		Visitors:          900,
		Arrivals:          5 * time.Minute,
		NewUsersPerMinute: 60,
		TotalActiveUsers:  600,
		Seed:              1,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d of %d let in, at most %d in any minute\n", res.Admitted, res.Visitors, res.MaxAdmittedPerMinute)
	fmt.Println("in order of arrival:", res.KendallTau > 0.9*res.KendallTauMax)
	// Output:
	// 900 of 900 let in, at most 60 in any minute
	// in order of arrival: true
}

// The write-up's experiment, random queueing, written as its data file.
func ExampleExperiment() {
	res, err := sim.Run(context.Background(), sim.Experiment(waitingroom.Random))
	if err != nil {
		log.Fatal(err)
	}
	f, err := os.Create("random.json")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if err := res.WriteJSON(f); err != nil {
		log.Fatal(err)
	}
}

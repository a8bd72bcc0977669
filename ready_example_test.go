package waitingroom_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// Fail the start-up when the store is misconfigured or out of reach,
// rather than serve a room that lets nobody new in.
func ExampleRoom_Ready() {
	room, err := waitingroom.New(waitingroom.Config{
		Name: "launch",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  200,
			NewUsersPerMinute: 200,
		},
		Keys: [][]byte{[]byte("an example key of 32 bytes or more, never this one")},
	}, memstore.New()) // or a redisstore or sqlstore Store
	if err != nil {
		log.Fatal(err)
	}
	defer room.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch err := room.Ready(ctx); {
	case errors.Is(err, store.ErrNoSchema):
		log.Fatalf("create the store's table first: %v", err)
	case errors.Is(err, store.ErrAuth):
		log.Fatalf("fix the store's credentials: %v", err)
	case err != nil:
		log.Fatalf("store unavailable: %v", err)
	}
	fmt.Println("ready")
	// Output: ready
}

package memstore_test

import (
	"fmt"
	"log"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// The in-memory store is the default for one process: nothing to run and
// nothing to configure. Rooms in other processes do not share it; use
// redisstore or sqlstore for that.
func Example() {
	room, err := waitingroom.New(waitingroom.Config{
		Name: "launch",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  200,
			NewUsersPerMinute: 200,
		},
		Keys: [][]byte{[]byte("an example key of 32 bytes or more, never this one")},
	}, memstore.New())
	if err != nil {
		log.Fatal(err)
	}
	defer room.Close()
	fmt.Println(room.Name())
	// Output: launch
}

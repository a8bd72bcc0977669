package waitingroom_test

import (
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// A complete program: the key from the environment, the room in front of
// the application. Run it with WAITINGROOM_KEY=$(openssl rand -hex 32).
func Example() {
	keys, err := waitingroom.ParseKeys(os.Getenv("WAITINGROOM_KEY")) // the same on every instance
	if err != nil {
		log.Fatal(err)
	}
	room, err := waitingroom.New(waitingroom.Config{
		Name:     "launch",
		Settings: waitingroom.Settings{TotalActiveUsers: 200, NewUsersPerMinute: 200},
		Keys:     keys,
	}, memstore.New())
	if err != nil {
		log.Fatal(err)
	}
	app := http.FileServer(http.Dir("public")) // the application to protect
	log.Fatal(http.ListenAndServe(":8080", room.Handler(app)))
}

func ExampleParseKeys_errors() {
	for _, s := range []string{
		"",
		"00112233445566778899aabbccddeeff",  // 16 bytes
		"00112233445566778899aabbccddeeff0", // a digit short, or one too many
		"not a key",
		"not-a-key!",
	} {
		_, err := waitingroom.ParseKeys(s)
		fmt.Println(err)
	}
	// Output:
	// waitingroom: key: empty
	// waitingroom: key: 16 bytes; a key must be at least 32
	// waitingroom: key: 33 hex digits, an odd number
	// waitingroom: key: white space inside the key
	// waitingroom: key: neither hex nor base64
}

func ExampleParseKeys() {
	// To rotate, put the new key first: it seals the cookies from now on,
	// and the old one still opens those it sealed. Drop the old key once
	// the sessions and places it sealed have ended: the longer of
	// SessionDuration and QueueHold after the change.
	keys, err := waitingroom.ParseKeys(
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=," + // new, base64
			"1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100", // old, hex
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(keys), keys[0][:4], keys[1][:4])
	// Output: 2 [0 1 2 3] [31 30 29 28]
}

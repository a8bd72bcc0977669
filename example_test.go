package waitingroom_test

import (
	"context"
	"fmt"
	"github.com/go-waitingroom/waitingroom/template"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// In a real deployment the key comes from a secret store, and every
// instance of the room uses the same one.
var secret = []byte("an example key of 32 bytes or more, never this one")

func ExampleNew() {
	room, err := waitingroom.New(waitingroom.Config{
		Name: "launch",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  200,
			NewUsersPerMinute: 200,
		},
		Keys: [][]byte{secret},
	}, memstore.New())
	if err != nil {
		log.Fatal(err)
	}
	defer room.Close()
	fmt.Println(room.Stats().Settings.QueueingMethod)
	// Output: fifo
}

func ExampleNew_invalid() {
	_, err := waitingroom.New(waitingroom.Config{
		Name: "launch",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  100,
			NewUsersPerMinute: 500,
		},
		Keys: [][]byte{secret},
	}, memstore.New())
	fmt.Println(err)
	// Output: waitingroom: invalid config: NewUsersPerMinute (500) must not exceed TotalActiveUsers (100)
}

func ExampleRoom_Handler() {
	room, err := waitingroom.New(waitingroom.Config{
		Name: "launch",
		Settings: waitingroom.Settings{
			TotalActiveUsers:   1,
			NewUsersPerMinute:  1,
			QueueingStatusCode: http.StatusTooManyRequests,
		},
		Keys: [][]byte{secret},
	}, memstore.New())
	if err != nil {
		log.Fatal(err)
	}
	defer room.Close()
	_ = room.Sync(context.Background()) // the background sync would do this within a second

	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, _ := waitingroom.TicketFrom(w)
		fmt.Fprintf(w, "welcome, admitted at minute %s", t.Bucket.UTC().Format("15:04"))
	})
	srv := httptest.NewServer(room.Handler(app))
	defer srv.Close()

	client := srv.Client()
	first, _ := client.Get(srv.URL)
	second, _ := client.Get(srv.URL) // no cookie: a new visitor, and the room is full
	first.Body.Close()
	second.Body.Close()
	fmt.Println(first.StatusCode, second.StatusCode, second.Header.Get("Cache-Control"))
	// Output: 200 429 no-store
}

// A client that asks for JSON gets the waiting page as JSON, under
// Config.Page.JSONKey.
func ExampleRoom_Handler_json() {
	room, err := waitingroom.New(waitingroom.Config{
		Name: "api",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  10,
			NewUsersPerMinute: 10,
			QueueAll:          true,
		},
		Keys: [][]byte{secret},
		Page: template.Options{JSONKey: "cfWaitingRoom"},
	}, memstore.New())
	if err != nil {
		log.Fatal(err)
	}
	defer room.Close()
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "the application") })

	r := httptest.NewRequest(http.MethodGet, "/orders", nil)
	r.Header.Set("Accept", "application/json")
	w := httptest.NewRecorder()
	room.Handler(app).ServeHTTP(w, r)
	body, _ := io.ReadAll(w.Body)
	fmt.Println(w.Code, w.Header().Get("Refresh") != "", strings.Contains(string(body), `"cfWaitingRoom":{"inWaitingRoom":true`))
	// Output: 200 true true
}

func ExampleRoom_Update() {
	room, err := waitingroom.New(waitingroom.Config{
		Name: "launch",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  200,
			NewUsersPerMinute: 200,
		},
		Keys: [][]byte{secret},
	}, memstore.New())
	if err != nil {
		log.Fatal(err)
	}
	defer room.Close()
	// Every instance sharing the store follows at its next sync.
	err = room.Update(context.Background(), func(s *waitingroom.Settings) {
		s.QueueingMethod = waitingroom.Random
		s.NewUsersPerMinute = 50
	})
	fmt.Println(err, room.Stats().Settings.QueueingMethod, room.Stats().Settings.NewUsersPerMinute)
	// Output: <nil> random 50
}

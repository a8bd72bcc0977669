package admin_test

import (
	"log"
	"net/http"
	"os"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// The admin API and status page, mounted under /admin/ beside the
// application, behind a bearer token from the environment.
func ExampleHandler() {
	key, err := waitingroom.ParseKey(os.Getenv("WAITINGROOM_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	room, err := waitingroom.New(waitingroom.Config{
		Keys:              [][]byte{key},
		TotalActiveUsers:  500,
		NewUsersPerMinute: 100,
	}, memstore.New())
	if err != nil {
		log.Fatal(err)
	}
	defer room.Close()

	auth, err := admin.BearerToken(os.Getenv("WAITINGROOM_ADMIN_TOKEN"))
	if err != nil {
		log.Fatal(err)
	}
	h, err := admin.Handler(room, auth)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", h))
	mux.Handle("/", room.Handler(http.FileServer(http.Dir("public"))))
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}

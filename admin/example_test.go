package admin_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// The admin API and status page, mounted under /admin/ beside the
// application, behind a bearer token from the environment, which a
// browser exchanges for a session on the status page's sign-in form.
func ExampleHandler() {
	keys, err := waitingroom.ParseKeys(os.Getenv("WAITINGROOM_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	room, err := waitingroom.New(waitingroom.Config{
		Keys: keys,
		Settings: waitingroom.Settings{
			TotalActiveUsers:  500,
			NewUsersPerMinute: 100,
		},
	}, memstore.New())
	if err != nil {
		log.Fatal(err)
	}
	defer room.Close()

	token := os.Getenv("WAITINGROOM_ADMIN_TOKEN")
	auth, err := admin.BearerToken(token)
	if err != nil {
		log.Fatal(err)
	}
	// Scripts send the token as a bearer token; a browser signs in with
	// it on the status page's form.
	h, err := admin.Handler(room, auth, admin.SignIn(token))
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", h))
	mux.Handle("/", room.Handler(http.FileServer(http.Dir("public"))))
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}

// The kept history of the last day, minute by minute, the reports of its
// scheduled events, and the same by the hour for a chart.
func ExampleMinutes() {
	keys, err := waitingroom.ParseKeys(os.Getenv("WAITINGROOM_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	room, err := waitingroom.New(waitingroom.Config{
		Keys: keys,
		Settings: waitingroom.Settings{
			TotalActiveUsers:  500,
			NewUsersPerMinute: 100,
		},
	}, memstore.New())
	if err != nil {
		log.Fatal(err)
	}
	defer room.Close()

	ctx := context.Background()
	ms, err := admin.Minutes(ctx, room, time.Now().Add(-24*time.Hour), time.Now())
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range ms {
		fmt.Println(m.Minute, m.Admitted, m.NewUsersPerMinute, m.Wait.P50, m.Wait.P90, m.Abandoned)
	}
	for _, r := range admin.Reports(ms) { // one per scheduled event, pre-queue to end
		fmt.Println(r.Event, r.From, r.To, r.Admitted, r.Wait.P90)
	}
	hourly := admin.Coarsen(ms, time.Hour) // for charts of long ranges
	fmt.Println(len(hourly), "hours")
}

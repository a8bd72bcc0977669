package metrics_test

import (
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/metrics"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// In a real deployment the key comes from a secret store.
var secret = []byte("an example key of 32 bytes or more, never this one")

func ExampleNewCollector() {
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

	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(room))

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", room.Handler(http.FileServer(http.Dir("public"))))
	_ = http.ListenAndServe(":8080", mux)
}

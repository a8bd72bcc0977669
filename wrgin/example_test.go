package wrgin_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/gin-gonic/gin"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/wrgin"
)

// In a real deployment the key comes from a secret store, and every
// instance of the room uses the same one.
var secret = []byte("an example key of 32 bytes or more, never this one")

func ExampleMiddleware() {
	room, err := waitingroom.New(waitingroom.Config{
		Name: "launch",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  1,
			NewUsersPerMinute: 1,
		},
		Keys: [][]byte{secret},
	}, memstore.New())
	if err != nil {
		log.Fatal(err)
	}
	defer room.Close()
	_ = room.Sync(context.Background()) // the background sync would do this within a second

	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/healthz", func(c *gin.Context) { c.String(http.StatusOK, "ok") }) // outside the room
	site := r.Group("/", wrgin.Middleware(room))
	site.GET("/", func(c *gin.Context) {
		t, _ := waitingroom.TicketFrom(c.Writer)
		c.String(http.StatusOK, "welcome, in the queue since minute %s", t.Bucket.UTC().Format("15:04"))
	})
	srv := httptest.NewServer(r)
	defer srv.Close()

	first, _ := http.Get(srv.URL)
	second, _ := http.Get(srv.URL) // no cookie: a new visitor, and the room is full
	health, _ := http.Get(srv.URL + "/healthz")
	fmt.Println(first.StatusCode, first.Header.Get("Refresh") == "")
	fmt.Println(second.StatusCode, second.Header.Get("Refresh") != "", second.Header.Get("Cache-Control"))
	fmt.Println(health.StatusCode)
	// Output:
	// 200 true
	// 200 true no-store
	// 200
}

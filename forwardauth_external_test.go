package waitingroom_test

import (
	"net/http"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/forwardauth"
)

// The forward-auth handler for the tests of package waitingroom, which
// cannot import forwardauth (waitingroom.NewForwardAuth).
func init() {
	waitingroom.NewForwardAuth = func(rm *waitingroom.Room, secret string, d time.Duration) http.Handler {
		h, err := forwardauth.New(rm, forwardauth.Options{FrontDoor: forwardauth.Forwarded, Pass: forwardauth.Pass{Secret: secret, Duration: d}})
		if err != nil {
			panic(err)
		}
		return h
	}
}

package challenge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// A room whose queued visitors must solve a proof of work, and are parked
// in the infinite queue until they do; a hosted widget would be Kind
// challenge.Hosted with a Verifier in Config.ChallengeVerifier.
func Example() {
	key := bytes.Repeat([]byte{1}, 32) // waitingroom.ParseKeys of a secret, in production
	room, err := waitingroom.New(waitingroom.Config{
		Name: "launch",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  100,
			NewUsersPerMinute: 100,
			Challenge: &challenge.Policy{
				Kind:   challenge.PoW,      // built in, no third party
				OnFail: challenge.Infinite, // default: challenge.Log
			},
		},
		Keys: [][]byte{key},
	}, memstore.New())
	if err != nil {
		log.Fatal(err)
	}
	defer room.Close()
	fmt.Println("ready")
	// Output: ready
}

// A JSON client solves the puzzle of the waiting page (its
// challengePuzzle) and sends the answer with its next request.
func ExampleSolve() {
	answer, err := challenge.Solve(context.Background(), "Ps1K7Hf3vZ0pWQ2Yb9lLmw.1790000000.8")
	if err != nil {
		log.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://example.com/", nil)
	req.Header.Set(challenge.Header, answer)
	fmt.Println(req.Header.Get("Waiting-Room-Challenge") == answer)
	// Output: true
}

// The puzzles a room gives, and what it makes of the answers: the
// visitor's own, another visitor's, and one to a puzzle easier than the
// difficulty asked now.
func ExamplePuzzles() {
	keys := [][]byte{bytes.Repeat([]byte{1}, 32)} // the room's Config.Keys
	puzzles, err := challenge.NewPuzzles(keys, "launch")
	if err != nil {
		log.Fatal(err)
	}
	pol := &challenge.Policy{Kind: challenge.PoW, Difficulty: 8}
	given := time.Date(2026, 5, 27, 15, 54, 0, 0, time.UTC)
	const visitor = 42
	answer, err := challenge.Solve(context.Background(), puzzles.Issue(visitor, given, pol.DifficultyAt(0)))
	if err != nil {
		log.Fatal(err)
	}
	now := given.Add(20 * time.Second)
	fmt.Println(puzzles.Verify(answer, visitor, now, pol))
	fmt.Println(puzzles.Verify(answer, visitor+1, now, pol))
	fmt.Println(puzzles.Verify(answer, visitor, now, &challenge.Policy{Kind: challenge.PoW, Difficulty: 12}))
	// Output:
	// <nil>
	// challenge: answer not passed
	// challenge: answer to a puzzle easier than the difficulty now
}

// The difficulty rises with the queue: a bit each time the number
// waiting doubles past RiseEvery, up to Difficulty + 4.
func ExamplePolicy_DifficultyAt() {
	pol := &challenge.Policy{Kind: challenge.PoW, RiseEvery: 1000}
	for _, waiting := range []int64{0, 1999, 2000, 4000, 8000, 1 << 30} {
		fmt.Println(waiting, pol.DifficultyAt(waiting))
	}
	// Output:
	// 0 16
	// 1999 16
	// 2000 17
	// 4000 18
	// 8000 19
	// 1073741824 20
}

// An invalid policy names the field at fault and wraps ErrInvalid (New and
// Room.Update wrap it with waitingroom.ErrInvalidConfig as well).
func ExamplePolicy_Validate() {
	err := (&challenge.Policy{Kind: challenge.PoW, Difficulty: 40}).Validate()
	fmt.Println(err)
	fmt.Println(errors.Is(err, challenge.ErrInvalid))
	// Output:
	// challenge.Policy.Difficulty must be between 1 and 32, got 40
	// true
}

// A Verifier asks the provider's siteverify API about the token a widget
// gave; here a local server answers as Cloudflare Turnstile's does.
func ExampleVerifier() {
	siteverify := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := r.PostFormValue("secret") == "secret-key" && r.PostFormValue("response") == "token-from-the-widget"
		fmt.Fprintf(w, `{"success":%t}`, ok)
	}))
	defer siteverify.Close()
	v := &challenge.Verifier{
		Provider:  challenge.Turnstile,
		SiteKey:   "site-key",
		Secret:    "secret-key",
		VerifyURL: siteverify.URL, // default: the provider's
	}
	if err := v.Validate(); err != nil {
		log.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil) // the visitor's request
	fmt.Println(v.Verify(r, "token-from-the-widget"))
	fmt.Println(errors.Is(v.Verify(r, "forged"), challenge.ErrFailed))
	// Output:
	// <nil>
	// true
}

// Command genv2 writes the golden files of the upgrade tests with the
// release that wrote state encoding 2 and cookie version 1 (commit
// a465f9600bca2c2f8ed97084659aadd6a34f0bd4): a room's state after a few
// visitors came, and some of their cookies.
//
//	go run ./cmd/genv2 DIR
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store"
)

// bytesStore keeps one room's state as the bytes of store.MarshalState.
type bytesStore struct {
	mu sync.Mutex
	b  []byte
}

func (s *bytesStore) Update(_ context.Context, _ string, fn func(*store.State) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := store.UnmarshalState(s.b)
	if err != nil {
		st = &store.State{}
	}
	if err := fn(st); err != nil {
		return err
	}
	s.b = store.MarshalState(st)
	return nil
}

func (s *bytesStore) Close() error { return nil }

// Start is the tests' clock start (internal/testclock.Start).
var start = time.Date(2026, 5, 27, 15, 54, 0, 0, time.UTC)

func main() {
	dir := os.Args[1]
	now := start
	clk := func() time.Time { return now }
	st := &bytesStore{}
	room, err := waitingroom.New(waitingroom.Config{
		Name:              "launch",
		TotalActiveUsers:  10,
		NewUsersPerMinute: 3,
		Keys:              [][]byte{[]byte("0123456789abcdef0123456789abcdef")},
		SyncInterval:      -1,
		Now:               clk,
		Random:            func() float64 { return 0.5 },
		Logger:            slog.New(slog.DiscardHandler),
	}, st)
	if err != nil {
		log.Fatal(err)
	}
	h := room.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "app") }))
	cookies := map[string]string{}
	request := func(name string) string {
		r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
		if c, ok := cookies[name]; ok {
			r.Header.Set("Cookie", "__waitingroom_launch="+c)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		for _, c := range w.Result().Cookies() {
			cookies[name] = c.Value
		}
		if w.Body.String() == "app" {
			return "admitted"
		}
		return "waiting"
	}
	sync := func() {
		if err := room.Sync(context.Background()); err != nil {
			log.Fatal(err)
		}
	}
	at := func(d time.Duration) { now = start.Add(d) }

	// Minute 0: three admitted, three waiting, who refresh when told to.
	sync()
	for _, v := range []string{"a1", "a2", "a3", "a4", "a5", "a6"} {
		fmt.Println(now.Format(time.TimeOnly), v, request(v))
	}
	for _, d := range []time.Duration{20 * time.Second, 40 * time.Second} {
		at(d)
		for _, v := range []string{"a4", "a5", "a6"} {
			fmt.Println(now.Format(time.TimeOnly), v, request(v))
		}
	}
	// Minute 1: the minute's admissions are reserved for minute 0's
	// visitors; newcomers wait behind them.
	at(60 * time.Second)
	sync()
	for _, v := range []string{"b1", "b2", "b3"} {
		fmt.Println(now.Format(time.TimeOnly), v, request(v))
	}
	// An admitted visitor's cookie is re-issued: counted at a new second.
	at(70 * time.Second)
	fmt.Println(now.Format(time.TimeOnly), "a1", request("a1"))
	at(72 * time.Second)
	sync()
	s := room.Stats()
	fmt.Printf("active %d waiting %d admitted this minute %d\n", s.Active, s.Waiting, s.AdmittedThisMinute)

	if err := os.WriteFile(filepath.Join(dir, "state-v2.bin"), st.b, 0o644); err != nil {
		log.Fatal(err)
	}
	dec, err := store.UnmarshalState(st.b)
	if err != nil {
		log.Fatal(err)
	}
	j, _ := json.MarshalIndent(dec, "", "  ")
	fmt.Println(string(j))
	j, _ = json.MarshalIndent(cookies, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "cookies-v1.json"), append(j, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(j))
}

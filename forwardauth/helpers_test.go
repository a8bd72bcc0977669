package forwardauth

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// cookieName is the name of the cookie of the tests' room, "launch".
const cookieName = "__waitingroom_launch"

// testRoom is a room on a virtual clock that syncs only when told.
type testRoom struct {
	*waitingroom.Room
	t   testing.TB
	clk *testclock.Clock
}

func newTestRoom(t testing.TB, mutate func(*waitingroom.Config)) *testRoom {
	return newTestRoomOn(t, testclock.New(testclock.Start), memstore.New(), mutate)
}

func newTestRoomOn(t testing.TB, clk *testclock.Clock, st store.Store, mutate func(*waitingroom.Config)) *testRoom {
	t.Helper()
	cfg := waitingroom.Config{
		Name: "launch",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  10,
			NewUsersPerMinute: 10,
		},
		Keys:         [][]byte{testKey},
		SyncInterval: -1,
		Now:          clk.Now,
		Logger:       slog.New(slog.DiscardHandler),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	rm, err := waitingroom.New(cfg, st)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	tr := &testRoom{Room: rm, t: t, clk: clk}
	tr.sync()
	return tr
}

func (tr *testRoom) sync() {
	tr.t.Helper()
	require.NoError(tr.t, tr.Sync(context.Background()))
}

// handler is New's handler for the room, behind door, with passes p.
func (tr *testRoom) handler(door FrontDoor, p Pass) http.Handler {
	tr.t.Helper()
	h, err := New(tr.Room, Options{FrontDoor: door, Pass: p})
	require.NoError(tr.t, err)
	return h
}

// visitor keeps its cookie like a browser.
type visitor struct {
	cookie string // "name=value"
}

// isWaiting reports whether w is the waiting page: a page the room
// rendered (one of the statuses QueueingStatusCode allows or the 429 of
// forward-auth, Cache-Control no-store, the HTML or JSON content type)
// with a Refresh header of a positive number of seconds.
func isWaiting(w *httptest.ResponseRecorder) bool {
	if w.Body.Len() == 0 {
		return false
	}
	switch w.Code {
	case http.StatusOK, http.StatusAccepted, http.StatusTooManyRequests:
	default:
		return false
	}
	switch w.Header().Get("Content-Type") {
	case "text/html; charset=utf-8", "application/json":
	default:
		return false
	}
	secs, err := strconv.Atoi(w.Header().Get("Refresh"))
	return w.Header().Get("Cache-Control") == "no-store" && err == nil && secs > 0
}

func mustNetworks(t testing.TB, cidrs ...string) waitingroom.Rule {
	r, err := waitingroom.ClientNetworks(cidrs...)
	require.NoError(t, err)
	return r
}

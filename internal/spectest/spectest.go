// Package spectest is the one table of cases that every example server
// runs, whatever its framework, so that each one is held to the same
// behaviour: admitted visitors reach the application with their ticket,
// new visitors wait on an HTML or JSON page when the room is full, and the
// health check stays outside the room.
//
// An example server under test must
//
//   - put the room in front of GET /, whose application answers 200 with
//     demo.Greeting of the ticket it finds through its writer
//     (waitingroom.TicketFrom);
//   - answer GET /healthz with 200 and a body of "ok" without the room.
package spectest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/demo"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// Start is the instant the room's clock shows when a case begins.
var Start = time.Date(2026, 3, 14, 12, 0, 30, 0, time.UTC)

// RoomName is the name of the room Run builds; its cookie is
// "__waitingroom_" + RoomName.
const RoomName = "spec"

// key is the cookie key of the rooms Run builds. Tests only.
var key = []byte("spectest key: 32 bytes or more, never use this one")

// Clock is a settable clock for Config.Now. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock showing t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// NewRoom returns a synced room that admits one visitor (TotalActiveUsers
// and NewUsersPerMinute 1) on an in-memory store, with no background sync,
// no refresh jitter (waiting pages refresh after exactly 20 s), no logs and
// a clock the caller moves. The room is closed when the test ends.
func NewRoom(t testing.TB) (*waitingroom.Room, *Clock) {
	t.Helper()
	clock := NewClock(Start)
	room, err := waitingroom.New(waitingroom.Config{
		Name: RoomName,
		Settings: waitingroom.Settings{
			TotalActiveUsers:  1,
			NewUsersPerMinute: 1,
		},
		Keys:          [][]byte{key},
		RefreshJitter: -1,
		SyncInterval:  -1,
		Now:           clock.Now,
		Logger:        slog.New(slog.DiscardHandler),
	}, memstore.New())
	require.NoError(t, err)
	t.Cleanup(func() { _ = room.Close() })
	require.NoError(t, room.Sync(context.Background()))
	return room, clock
}

// Accept headers of the cases.
const (
	acceptBrowser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	acceptJSON    = "application/json"
)

// expectation is what a case's response must be.
type expectation int

const (
	app         expectation = iota + 1 // the application's greeting, with the ticket
	waitingHTML                        // the HTML waiting page
	waitingJSON                        // the JSON waiting answer
	health                             // the health check's "ok"
)

type specCase struct {
	name   string
	path   string
	accept string
	// full: a first visitor is admitted before the request, which fills
	// the room; then the clock moves 10 s.
	full bool
	// cookie: the request carries the first visitor's cookie.
	cookie bool
	want   expectation
	// setsCookie: the response sets the room's cookie.
	setsCookie bool
}

var cases = []specCase{
	{name: "first visitor is admitted", path: "/", accept: acceptBrowser, want: app, setsCookie: true},
	{name: "valid cookie passes", path: "/", accept: acceptBrowser, full: true, cookie: true, want: app},
	{name: "valid cookie passes for a JSON client", path: "/", accept: acceptJSON, full: true, cookie: true, want: app},
	{name: "new visitor waits on the HTML page", path: "/", accept: acceptBrowser, full: true, want: waitingHTML, setsCookie: true},
	{name: "new visitor without Accept waits on the HTML page", path: "/", full: true, want: waitingHTML, setsCookie: true},
	{name: "new JSON client waits with JSON", path: "/", accept: acceptJSON, full: true, want: waitingJSON, setsCookie: true},
	{name: "health check bypasses the room", path: "/healthz", accept: acceptBrowser, full: true, want: health},
	{name: "health check bypasses the room for a new JSON client", path: "/healthz", accept: acceptJSON, full: true, want: health},
}

// Run runs every case through the handler newServer returns for a room
// built by NewRoom, each case on a new room and a new server.
func Run(t *testing.T, newServer func(room *waitingroom.Room) http.Handler) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			room, clock := NewRoom(t)
			srv := httptest.NewServer(newServer(room))
			t.Cleanup(srv.Close)

			admittedAt := clock.Now()
			var first []*http.Cookie
			if tc.full {
				resp, body := get(t, srv.URL+"/", acceptBrowser, nil)
				require.Equal(t, http.StatusOK, resp.StatusCode, "first visitor: %s", body)
				require.Contains(t, body, admittedAt.Format(time.RFC3339), "first visitor")
				first = roomCookies(resp)
				require.Len(t, first, 1, "first visitor's cookie")
				clock.Advance(10 * time.Second)
			}
			var send []*http.Cookie
			if tc.cookie {
				send = first
			} else {
				admittedAt = clock.Now()
			}

			resp, body := get(t, srv.URL+tc.path, tc.accept, send)
			if tc.setsCookie {
				assert.Len(t, roomCookies(resp), 1, "the room's cookie is set")
			} else {
				assert.Empty(t, roomCookies(resp), "no room cookie")
			}
			switch tc.want {
			case app:
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Contains(t, body, demo.Greeting(waitingroom.Ticket{AcceptedAt: admittedAt}, true), "the application sees the ticket")
				assert.Empty(t, resp.Header.Get("Refresh"))
			case waitingHTML:
				assertWaiting(t, resp)
				assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
				assert.True(t, strings.HasPrefix(body, "<!DOCTYPE html>"), "an HTML page: %.60q", body)
				assert.Contains(t, body, `<meta http-equiv="refresh" content="20">`)
			case waitingJSON:
				assertWaiting(t, resp)
				assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				var got map[string]struct {
					InWaitingRoom          bool `json:"inWaitingRoom"`
					RefreshIntervalSeconds int  `json:"refreshIntervalSeconds"`
				}
				require.NoError(t, json.Unmarshal([]byte(body), &got), "JSON body: %s", body)
				require.Contains(t, got, "waitingRoom")
				assert.True(t, got["waitingRoom"].InWaitingRoom)
				assert.Equal(t, 20, got["waitingRoom"].RefreshIntervalSeconds)
			case health:
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Equal(t, "ok", strings.TrimSpace(body))
			default:
				t.Fatalf("case %q expects nothing", tc.name)
			}
		})
	}
}

// assertWaiting checks what every waiting response carries.
func assertWaiting(t *testing.T, resp *http.Response) {
	t.Helper()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "20", resp.Header.Get("Refresh"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
}

// get requests url with the Accept header (none when accept is "") and
// cookies, and returns the response and its body.
func get(t *testing.T, url, accept string, cookies []*http.Cookie) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// roomCookies returns the room's cookies set by resp.
func roomCookies(resp *http.Response) []*http.Cookie {
	var out []*http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "__waitingroom_"+RoomName {
			out = append(out, c)
		}
	}
	return out
}

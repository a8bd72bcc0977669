package waitingroom_test

// The scenario tests' helpers: rooms on a virtual clock that sync only
// when told, visitors that keep their cookies, and the room's pages told
// apart. They reach the room's internals only through export_test.go.

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// clock is the tests' virtual clock.
type clock = testclock.Clock

func newClock() *clock { return testclock.New(testclock.Start) }

func baseConfig(clk *clock) waitingroom.Config {
	return waitingroom.Config{
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
}

// testRoom is a room on a virtual clock that syncs only when told, with
// the internals the scenarios read (export_test.go) at hand.
type testRoom struct {
	*waitingroom.Room
	t          testing.TB
	clk        *clock
	app        http.Handler
	cfg        *waitingroom.Config // as New normalized it
	local      *share.Local
	syncer     *share.Syncer[waitingroom.Settings]
	id         string // the instance's
	cookieName string
}

func newTestRoom(t testing.TB, mutate func(*waitingroom.Config)) *testRoom {
	return newTestRoomOn(t, newClock(), memstore.New(), mutate)
}

func newTestRoomOn(t testing.TB, clk *clock, st store.Store, mutate func(*waitingroom.Config)) *testRoom {
	t.Helper()
	cfg := baseConfig(clk)
	if mutate != nil {
		mutate(&cfg)
	}
	rm, err := waitingroom.New(cfg, st)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	tr := &testRoom{
		Room: rm, t: t, clk: clk,
		cfg:        waitingroom.ConfigOf(rm),
		local:      waitingroom.Local(rm),
		syncer:     waitingroom.Syncer(rm),
		id:         waitingroom.InstanceID(rm),
		cookieName: waitingroom.CookieName(rm),
	}
	tr.app = rm.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "app")
	}))
	tr.sync()
	return tr
}

func (tr *testRoom) sync() {
	tr.t.Helper()
	require.NoError(tr.t, tr.Sync(context.Background()))
}

// now is the room's shared clock, Unix ms.
func (tr *testRoom) now() int64 { return tr.syncer.Now() }

// readState is the visitor cookie the room reads in r at now, under the
// policy in force.
func (tr *testRoom) readState(r *http.Request, now int64) (waitingroom.CookieState, bool) {
	return waitingroom.ReadCookie(tr.Room, r, now)
}

// checkRequest is the room's decision on r, as Handler makes it, without
// writing anything.
func (tr *testRoom) checkRequest(r *http.Request) (waitingroom.Verdict, error) {
	return waitingroom.Decide(tr.Room, r)
}

// seal is s sealed as the room's cookie value under testKey.
func (tr *testRoom) seal(s waitingroom.CookieState) string {
	return seal(tr.t, tr.cookieName, testKey, s)
}

// open is the state in the room's cookie value v, sealed under testKey.
func (tr *testRoom) open(v string) (waitingroom.CookieState, error) {
	return waitingroom.OpenCookie(tr.cookieName, testKey, v)
}

// seal is s sealed as the value of a cookie named name under key.
func seal(t testing.TB, name string, key []byte, s waitingroom.CookieState) string {
	v, err := waitingroom.SealCookie(name, key, s)
	require.NoError(t, err)
	return v
}

// otherKey is a key no test room holds.
var otherKey = []byte("ffffffffffffffffffffffffffffffffffff")

// The shared state's terms the scenarios read.
type (
	view  = share.Snapshot[waitingroom.Settings]
	grant = share.Grant
)

const anyBucket = share.AnyBucket

// secondOf is the Unix second of the Unix ms ms.
func secondOf(ms int64) int64 { return share.FloorDiv(ms, 1000) }

// instances is n rooms sharing st, synced once more once all have joined.
func instances(t testing.TB, clk *clock, st store.Store, n int, mutate func(*waitingroom.Config)) []*testRoom {
	rooms := make([]*testRoom, n)
	for i := range rooms {
		rooms[i] = newTestRoomOn(t, clk, st, mutate)
	}
	// Each instance syncs once more now that all have joined: a new
	// instance gets its share at the others' next sync.
	for _, rm := range rooms {
		require.NoError(t, rm.Sync(context.Background()))
	}
	return rooms
}

// visitor keeps its cookie like a browser.
type visitor struct {
	cookie string // "name=value"
}

func (v *visitor) request(method, accept string) *http.Request {
	r := httptest.NewRequest(method, "http://example.com/", nil)
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	if v.cookie != "" {
		r.Header.Set("Cookie", v.cookie)
	}
	return r
}

// get sends a request through the room's Handler and keeps any new cookie.
func (tr *testRoom) get(v *visitor, accept string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	tr.app.ServeHTTP(w, v.request(http.MethodGet, accept))
	for _, c := range w.Result().Cookies() {
		v.cookie = c.Name + "=" + c.Value
	}
	return w
}

// The checks of a response: the unit tests' (helpers_test.go).
var (
	admitted     = waitingroom.IsAdmitted
	isWaiting    = waitingroom.IsWaiting
	isClosedPage = waitingroom.IsClosedPage
	isErrorPage  = waitingroom.IsErrorPage
)

// TestScenarioPageHelpers holds the shared checks to telling the room's
// responses apart through the scenario tests' rooms, as TestPageHelpers
// does through the unit tests'.
func TestScenarioPageHelpers(t *testing.T) {
	page := func(mutate func(*waitingroom.Config), accept string) *httptest.ResponseRecorder {
		return newTestRoom(t, mutate).get(&visitor{}, accept)
	}
	closedRoom := newTestRoom(t, nil)
	require.NoError(t, closedRoom.Close())
	for _, tc := range []struct {
		name                          string
		w                             *httptest.ResponseRecorder
		app, waiting, closed, errPage bool
	}{
		{"application", page(nil, ""), true, false, false, false},
		{"waiting page", page(func(c *waitingroom.Config) { c.QueueAll = true }, ""), false, true, false, false},
		{"waiting page, JSON", page(func(c *waitingroom.Config) { c.QueueAll = true }, "application/json"), false, true, false, false},
		{"waiting page, 429", page(func(c *waitingroom.Config) { c.QueueAll, c.QueueingStatusCode = true, http.StatusTooManyRequests }, ""), false, true, false, false},
		{"closed page", page(func(c *waitingroom.Config) { c.QueueingMethod = waitingroom.Reject }, ""), false, false, true, false},
		{"closed page, JSON", page(func(c *waitingroom.Config) { c.QueueingMethod = waitingroom.Reject }, "application/json"), false, false, true, false},
		{"error page", closedRoom.get(&visitor{}, ""), false, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.app, admitted(tc.w), "admitted")
			assert.Equal(t, tc.waiting, isWaiting(tc.w), "isWaiting")
			assert.Equal(t, tc.closed, isClosedPage(tc.w), "isClosedPage")
			assert.Equal(t, tc.errPage, isErrorPage(tc.w), "isErrorPage")
		})
	}
}

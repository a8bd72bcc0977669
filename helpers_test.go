package waitingroom

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// clock is the tests' virtual clock.
type clock = testclock.Clock

func newClock() *clock { return testclock.New(testclock.Start) }

func baseConfig(clk *clock) Config {
	return Config{
		Name:              "launch",
		TotalActiveUsers:  10,
		NewUsersPerMinute: 10,
		Keys:              [][]byte{testKey},
		SyncInterval:      -1,
		Now:               clk.Now,
		Logger:            slog.New(slog.DiscardHandler),
	}
}

// testRoom is a room on a virtual clock that syncs only when told.
type testRoom struct {
	*Room
	t   testing.TB
	clk *clock
	app http.Handler
}

func newTestRoom(t testing.TB, mutate func(*Config)) *testRoom {
	return newTestRoomOn(t, newClock(), memstore.New(), mutate)
}

func newTestRoomOn(t testing.TB, clk *clock, st store.Store, mutate func(*Config)) *testRoom {
	t.Helper()
	cfg := baseConfig(clk)
	if mutate != nil {
		mutate(&cfg)
	}
	rm, err := New(cfg, st)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	tr := &testRoom{Room: rm, t: t, clk: clk}
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

func admitted(w *httptest.ResponseRecorder) bool {
	return w.Code == http.StatusOK && w.Body.String() == "app"
}

func isWaiting(w *httptest.ResponseRecorder) bool {
	return !admitted(w) && strings.Contains(w.Header().Get("Cache-Control"), "no-store")
}

func newMemStore() store.Store { return memstore.New() }

// readState is readCookie under the policy in force.
func (tr *testRoom) readState(r *http.Request, now int64) (cookieState, bool) {
	p := tr.policyAt(&tr.view.Load().settings, now)
	c, _, ok := tr.readCookie(r, &p, now)
	return c, ok
}

package integration

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
)

const adminToken = "test-admin-token-0123456789abcdef"

// adminInstance is one instance of a room on a virtual clock that syncs
// only when told, its admin handler and its middleware in front of a
// trivial application.
type adminInstance struct {
	t     testing.TB
	room  *waitingroom.Room
	admin http.Handler
	app   http.Handler
}

func newAdminInstance(t testing.TB, clk *testclock.Clock, st store.Store) *adminInstance {
	t.Helper()
	rm, err := waitingroom.New(waitingroom.Config{
		Name: "launch",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  10,
			NewUsersPerMinute: 10,
		},
		Keys:         [][]byte{[]byte("0123456789abcdef0123456789abcdef")},
		SyncInterval: -1,
		Now:          clk.Now,
		Logger:       slog.New(slog.DiscardHandler),
	}, st)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	auth, err := admin.BearerToken(adminToken)
	require.NoError(t, err)
	h, err := admin.Handler(rm, auth)
	require.NoError(t, err)
	return &adminInstance{t: t, room: rm, admin: h, app: rm.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "app")
	}))}
}

func (a *adminInstance) sync() {
	a.t.Helper()
	require.NoError(a.t, a.room.Sync(context.Background()))
}

// visit sends one visitor's request through the room and reports whether
// it reached the application; cookie is the visitor's cookie jar.
func (a *adminInstance) visit(cookie *string) bool {
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	if *cookie != "" {
		r.Header.Set("Cookie", *cookie)
	}
	w := httptest.NewRecorder()
	a.app.ServeHTTP(w, r)
	for _, c := range w.Result().Cookies() {
		*cookie = c.Name + "=" + c.Value
	}
	return w.Body.String() == "app"
}

// do sends an authenticated admin request.
func (a *adminInstance) do(method, path, body string) *httptest.ResponseRecorder {
	a.t.Helper()
	r := httptest.NewRequest(method, "http://example.com"+path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+adminToken)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	a.admin.ServeHTTP(w, r)
	return w
}

// getJSON fetches path and decodes its JSON body into a generic map.
func (a *adminInstance) getJSON(path string) map[string]any {
	a.t.Helper()
	w := a.do(http.MethodGet, path, "")
	require.Equal(a.t, http.StatusOK, w.Code, w.Body.String())
	var m map[string]any
	require.NoError(a.t, json.Unmarshal(w.Body.Bytes(), &m))
	return m
}

func (a *adminInstance) settings() waitingroom.Settings {
	a.t.Helper()
	w := a.do(http.MethodGet, "/settings", "")
	require.Equal(a.t, http.StatusOK, w.Code, w.Body.String())
	var s waitingroom.Settings
	require.NoError(a.t, json.Unmarshal(w.Body.Bytes(), &s))
	return s
}

// TestAdminChangeReachesOtherInstances changes the settings through one
// instance's admin API and sees another instance, on the same real store,
// follow at its next sync. The library's own tests run it on memstore.
func TestAdminChangeReachesOtherInstances(t *testing.T) {
	for name, open := range realStores(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			clk := testclock.New(testclock.Start)
			a := newAdminInstance(t, clk, st)
			b := newAdminInstance(t, clk, st)
			// Two rounds, so that each instance holds a share of the slots.
			a.sync()
			b.sync()
			a.sync()
			b.sync()
			before := b.settings()
			require.Equal(t, waitingroom.Settings{QueueingMethod: waitingroom.FIFO, TotalActiveUsers: 10, NewUsersPerMinute: 10}, before)
			assert.EqualValues(t, 2, a.getJSON("/status")["instances"])

			w := a.do(http.MethodPatch, "/settings", `{"queueingMethod":"random","totalActiveUsers":40,"newUsersPerMinute":25,"queueAll":true}`)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			want := waitingroom.Settings{QueueingMethod: waitingroom.Random, TotalActiveUsers: 40, NewUsersPerMinute: 25, QueueAll: true}
			assert.Equal(t, want, a.settings(), "the instance that made the change follows at once")
			assert.Equal(t, before, b.settings(), "the other one at its next sync")
			var c string
			assert.True(t, b.visit(&c), "b does not queue everyone yet")

			clk.Add(time.Second)
			b.sync()
			assert.Equal(t, want, b.settings())
			m := b.getJSON("/status")
			assert.Equal(t, "queueing", m["status"])
			assert.Equal(t, map[string]any{
				"queueingMethod": "random", "totalActiveUsers": 40.0, "newUsersPerMinute": 25.0,
				"queueAll": true, "suspended": false,
			}, m["settings"])
			c = ""
			assert.False(t, b.visit(&c), "b queues everyone now")

			// And back, through b.
			w = b.do(http.MethodPatch, "/settings", `{"queueAll":false,"suspended":true}`)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			clk.Add(time.Second)
			a.sync()
			assert.Equal(t, "suspended", a.getJSON("/status")["status"])
		})
	}
}

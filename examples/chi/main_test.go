package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/spectest"
)

func TestSpec(t *testing.T) {
	spectest.Run(t, newServer)
}

// chi's own middleware behind the room wraps the writer (compression, and
// the writer its logger and others share); each unwraps, so the
// application behind them finds the ticket and revokes as behind the room
// alone, compressed responses included.
func TestTicketBehindChiMiddleware(t *testing.T) {
	room, _ := spectest.NewRoom(t)
	var (
		ticket   waitingroom.Ticket
		found    bool
		revoked  bool
		wrappers []string
	)
	r := chi.NewRouter()
	r.Use(room.Handler, middleware.Compress(5), func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(middleware.NewWrapResponseWriter(w, r.ProtoMajor), r)
		})
	})
	r.Get("/", func(w http.ResponseWriter, r *http.Request) {
		wrappers = wrappers[:0]
		for x := http.ResponseWriter(w); x != nil; {
			u, ok := x.(interface{ Unwrap() http.ResponseWriter })
			if !ok {
				break
			}
			wrappers = append(wrappers, "wrapped")
			x = u.Unwrap()
		}
		ticket, found = waitingroom.TicketFrom(w)
		if r.URL.Query().Has("end") {
			revoked = waitingroom.Revoke(w)
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("a body long enough to be worth compressing, a body long enough to be worth compressing\n"))
	})
	serve := func(path string, cookies []*http.Cookie) *http.Response {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		for _, c := range cookies {
			req.AddCookie(c)
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		return w.Result()
	}

	resp := serve("/", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "gzip", resp.Header.Get("Content-Encoding"), "compressed")
	require.GreaterOrEqual(t, len(wrappers), 2, "behind two of chi's writers")
	require.True(t, found, "the ticket, through chi's writers")
	assert.NotZero(t, ticket.ID)
	cookies := resp.Cookies()
	require.Len(t, cookies, 1)
	require.NoError(t, room.Sync(context.Background()))
	require.Equal(t, 1, room.Stats().Active)

	resp = serve("/?end=1", cookies)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, revoked, "Revoke, through chi's writers")
	cleared := resp.Cookies()
	require.Len(t, cleared, 1)
	assert.Equal(t, -1, cleared[0].MaxAge, "the cookie is cleared")
	require.NoError(t, room.Sync(context.Background()))
	assert.Zero(t, room.Stats().Active, "the slot is free")
}

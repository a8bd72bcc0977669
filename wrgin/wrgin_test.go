package wrgin_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/demo"
	"github.com/go-waitingroom/waitingroom/internal/spectest"
	"github.com/go-waitingroom/waitingroom/wrgin"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	os.Exit(m.Run())
}

// newEngine puts room in front of / as the package documentation shows.
func newEngine(room *waitingroom.Room) *gin.Engine {
	r := gin.New()
	r.GET("/healthz", func(c *gin.Context) { c.String(http.StatusOK, "ok\n") })
	site := r.Group("/", wrgin.Middleware(room))
	site.GET("/", func(c *gin.Context) {
		t, ok := waitingroom.TicketFrom(c.Writer)
		c.String(http.StatusOK, demo.Greeting(t, ok))
	})
	return r
}

func TestSpec(t *testing.T) {
	spectest.Run(t, func(room *waitingroom.Room) http.Handler { return newEngine(room) })
}

// serve sends one request to h and returns the response and its body.
func serve(t *testing.T, h http.Handler, accept string, cookies ...*http.Cookie) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Accept", accept)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	resp := w.Result()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

func TestMiddleware(t *testing.T) {
	tests := []struct {
		name string
		// prepare puts the room in the state the case needs; it returns
		// the cookies the request carries.
		prepare    func(t *testing.T, room *waitingroom.Room, h http.Handler) []*http.Cookie
		wantStatus int
		wantNext   bool   // the handlers after the middleware ran
		wantTicket bool   // and found a ticket
		wantBody   string // the body contains it
	}{
		{
			name:       "admitted: next handlers run with the ticket",
			prepare:    func(*testing.T, *waitingroom.Room, http.Handler) []*http.Cookie { return nil },
			wantStatus: http.StatusOK, wantNext: true, wantTicket: true,
		},
		{
			name: "waiting: the chain is aborted",
			prepare: func(t *testing.T, _ *waitingroom.Room, h http.Handler) []*http.Cookie {
				resp, _ := serve(t, h, "text/html") // the one slot goes to someone else
				require.Equal(t, http.StatusOK, resp.StatusCode)
				return nil
			},
			wantStatus: http.StatusOK, wantBody: `"inWaitingRoom":true`,
		},
		{
			name: "suspended: next handlers run without a ticket",
			prepare: func(t *testing.T, room *waitingroom.Room, _ http.Handler) []*http.Cookie {
				require.NoError(t, room.Update(context.Background(), func(s *waitingroom.Settings) { s.Suspended = true }))
				return nil
			},
			wantStatus: http.StatusOK, wantNext: true,
		},
		{
			name: "closed room: 503 and the chain is aborted",
			prepare: func(t *testing.T, room *waitingroom.Room, _ http.Handler) []*http.Cookie {
				require.NoError(t, room.Close())
				return nil
			},
			wantStatus: http.StatusServiceUnavailable, wantBody: "Service Unavailable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room, _ := spectest.NewRoom(t)
			var ran, hadTicket bool
			r := gin.New()
			r.Use(wrgin.Middleware(room))
			r.Use(func(c *gin.Context) { // a later middleware: must not run for waiting visitors
				ran = true
				_, hadTicket = waitingroom.TicketFrom(c.Writer)
				c.Next()
			})
			r.GET("/", func(c *gin.Context) { c.String(http.StatusOK, "app\n") })

			cookies := tt.prepare(t, room, r)
			ran, hadTicket = false, false
			resp, body := serve(t, r, "application/json", cookies...)

			assert.Equal(t, tt.wantStatus, resp.StatusCode)
			assert.Equal(t, tt.wantNext, ran, "next handlers ran")
			assert.Equal(t, tt.wantTicket, hadTicket, "a ticket through c.Writer")
			if tt.wantNext {
				assert.Equal(t, "app\n", body)
			} else {
				assert.Contains(t, body, tt.wantBody)
				assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
			}
		})
	}
}

// A handler behind the middleware ends the visitor's session as behind
// Room.Handler, whichever way it asks: the response header (the product's
// name too, even after a status set with nothing written yet), or
// waitingroom.Revoke with c.Writer. The command never
// reaches the client, the cookie is cleared, the slot is free at the next
// sync, and the revoked cookie is a new visitor's; a bypassed request's
// command is removed, not obeyed.
func TestMiddlewareRevoke(t *testing.T) {
	for _, tc := range []struct {
		name   string
		revoke func(t *testing.T, c *gin.Context)
	}{
		{"header", func(_ *testing.T, c *gin.Context) { c.Header(waitingroom.CommandHeader, "revoke") }},
		{"product header", func(_ *testing.T, c *gin.Context) { c.Header("Cf-Waiting-Room-Command", "Revoke") }},
		{"header after the status", func(_ *testing.T, c *gin.Context) {
			c.Status(http.StatusAccepted)
			c.Header(waitingroom.CommandHeader, "revoke")
		}},
		{"Revoke", func(t *testing.T, c *gin.Context) {
			assert.True(t, waitingroom.Revoke(c.Writer), "Revoke finds the session")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			room, clock := spectest.NewRoom(t)
			r := gin.New()
			r.Use(wrgin.Middleware(room))
			var ticket waitingroom.Ticket
			r.GET("/", func(c *gin.Context) {
				ticket, _ = waitingroom.TicketFrom(c.Writer)
				if c.Query("end") != "" {
					tc.revoke(t, c)
				}
				c.String(c.Writer.Status(), "app\n")
			})
			resp, body := serve(t, r, "text/html")
			require.Equal(t, "app\n", body)
			cookies := resp.Cookies()
			require.Len(t, cookies, 1)
			first := ticket
			require.NotZero(t, first.ID)
			require.NoError(t, room.Sync(context.Background()))
			require.Equal(t, 1, room.Stats().Active)

			req := httptest.NewRequest(http.MethodGet, "/?end=1", nil)
			req.AddCookie(cookies[0])
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			assert.Equal(t, "app\n", w.Body.String(), "the request that revokes is served")
			assert.Equal(t, first, ticket, "by the session it ends")
			assert.Empty(t, w.Header().Values(waitingroom.CommandHeader), "the command never reaches the client")
			assert.Empty(t, w.Header().Values("Cf-Waiting-Room-Command"))
			cleared := w.Result().Cookies()
			require.Len(t, cleared, 1)
			assert.Equal(t, cookies[0].Name, cleared[0].Name)
			assert.Equal(t, -1, cleared[0].MaxAge, "the cookie is cleared")
			require.NoError(t, room.Sync(context.Background()))
			assert.Zero(t, room.Stats().Active, "the slot is free")
			assert.Equal(t, uint64(1), room.Stats().Counters.Revoked)

			clock.Advance(time.Second)
			resp, body = serve(t, r, "application/json", cookies[0])
			assert.True(t, strings.Contains(body, `"inWaitingRoom":true`), "the revoked cookie is a new visitor's, past the minute's one admission: %.80q", body)
			assert.NotEmpty(t, resp.Header.Get("Refresh"))
		})
	}

	// A bypassed request's command is removed, and revokes nothing.
	room, _ := spectest.NewRoom(t)
	require.NoError(t, room.Update(context.Background(), func(s *waitingroom.Settings) { s.Suspended = true }))
	r := gin.New()
	r.Use(wrgin.Middleware(room))
	r.GET("/", func(c *gin.Context) {
		c.Header(waitingroom.CommandHeader, "revoke")
		assert.False(t, waitingroom.Revoke(c.Writer), "no session to revoke")
		c.String(http.StatusOK, "app\n")
	})
	resp, body := serve(t, r, "text/html")
	assert.Equal(t, "app\n", body)
	assert.Empty(t, resp.Header.Values(waitingroom.CommandHeader))
	assert.Zero(t, room.Stats().Counters.Revoked)
}

// The handlers behind the middleware write as through gin's own writer: a
// status set before the headers, a body in parts, the size and status
// that middleware around the chain reads.
func TestMiddlewareWriter(t *testing.T) {
	room, _ := spectest.NewRoom(t)
	var status, size int
	r := gin.New()
	r.Use(func(c *gin.Context) {
		c.Next()
		status, size = c.Writer.Status(), c.Writer.Size()
	})
	r.Use(wrgin.Middleware(room))
	r.GET("/", func(c *gin.Context) {
		c.Status(http.StatusCreated)
		assert.False(t, c.Writer.Written())
		c.Header("X-App", "1")
		_, _ = c.Writer.WriteString("ab")
		_, _ = c.Writer.Write([]byte("c"))
		assert.True(t, c.Writer.Written())
		c.Status(http.StatusTeapot) // too late: ignored
	})
	r.GET("/empty", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	resp, body := serve(t, r, "text/html")
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("X-App"))
	assert.Equal(t, "abc", body)
	assert.Equal(t, http.StatusCreated, status)
	assert.Equal(t, 3, size)

	req := httptest.NewRequest(http.MethodGet, "/empty", nil)
	req.AddCookie(resp.Cookies()[0])
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	assert.Equal(t, http.StatusNoContent, w.Code, "a status with nothing written")
	assert.Equal(t, http.StatusNoContent, status)
}

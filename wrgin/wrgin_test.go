package wrgin_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

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

// newEngine puts room in front of / as the package documentation shows;
// fallback sets the engine's ContextWithFallback, and then the application
// reads the ticket from the gin.Context itself.
func newEngine(room *waitingroom.Room, fallback bool) *gin.Engine {
	r := gin.New()
	r.ContextWithFallback = fallback
	r.GET("/healthz", func(c *gin.Context) { c.String(http.StatusOK, "ok\n") })
	site := r.Group("/", wrgin.Middleware(room))
	site.GET("/", func(c *gin.Context) {
		var ctx context.Context = c.Request.Context()
		if fallback {
			ctx = c
		}
		t, ok := waitingroom.TicketFromContext(ctx)
		c.String(http.StatusOK, demo.Greeting(t, ok))
	})
	return r
}

func TestSpec(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		name := "ticket in the request context"
		if fallback {
			name = "ticket in the gin context"
		}
		t.Run(name, func(t *testing.T) {
			spectest.Run(t, func(room *waitingroom.Room) http.Handler { return newEngine(room, fallback) })
		})
	}
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
		wantErr    error  // c.Errors holds it
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
			name: "closed room: 503 and the error recorded",
			prepare: func(t *testing.T, room *waitingroom.Room, _ http.Handler) []*http.Cookie {
				require.NoError(t, room.Close())
				return nil
			},
			wantStatus: http.StatusServiceUnavailable, wantBody: "Service Unavailable", wantErr: waitingroom.ErrClosed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room, _ := spectest.NewRoom(t)
			var (
				ran, hadTicket bool
				errs           []*gin.Error
			)
			r := gin.New()
			r.Use(func(c *gin.Context) { // runs around everything: sees c.Errors
				c.Next()
				errs = c.Errors
			})
			r.Use(wrgin.Middleware(room))
			r.Use(func(c *gin.Context) { // a later middleware: must not run for waiting visitors
				ran = true
				_, hadTicket = waitingroom.TicketFromContext(c.Request.Context())
				c.Next()
			})
			r.GET("/", func(c *gin.Context) { c.String(http.StatusOK, "app\n") })

			cookies := tt.prepare(t, room, r)
			ran, hadTicket, errs = false, false, nil
			resp, body := serve(t, r, "application/json", cookies...)

			assert.Equal(t, tt.wantStatus, resp.StatusCode)
			assert.Equal(t, tt.wantNext, ran, "next handlers ran")
			assert.Equal(t, tt.wantTicket, hadTicket, "ticket in the context")
			if tt.wantNext {
				assert.Equal(t, "app\n", body)
			} else {
				assert.Contains(t, body, tt.wantBody)
				assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
			}
			if tt.wantErr != nil {
				require.Len(t, errs, 1)
				assert.True(t, errors.Is(errs[0].Err, tt.wantErr), "c.Errors: %v", errs)
			} else {
				assert.Empty(t, errs)
			}
		})
	}
}

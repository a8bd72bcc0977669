// Package wrgin puts a waiting room in front of gin routes. It is named so
// that it does not shadow the gin package it is used with.
//
// gin handlers are not net/http middleware, so the room's Handler cannot be
// used as it is; Middleware builds the same behaviour on Room.Check and
// Room.Respond:
//
//	r := gin.New()
//	r.GET("/healthz", healthz) // outside the room
//	site := r.Group("/", wrgin.Middleware(room))
//	site.GET("/", home)
//
// Handlers behind it find the admitted visitor's ticket in the request's
// context:
//
//	t, ok := waitingroom.TicketFromContext(c.Request.Context())
//
// or in the gin.Context itself when the engine's ContextWithFallback is set.
package wrgin

import (
	"github.com/gin-gonic/gin"

	"github.com/go-waitingroom/waitingroom"
)

// Middleware returns gin middleware that lets a request go on to the next
// handlers only when room admits it (or lets it through, while the room is
// suspended), and otherwise writes the waiting page, as HTML or JSON, and
// aborts the chain. An admitted request's context carries the visitor's
// ticket for waitingroom.TicketFromContext. The visitor cookie is set on
// the response whenever it changes.
//
// Once room is closed, Middleware answers with the room's
// Config.ErrorHandler (by default 503 with a plain body), aborts, and
// records waitingroom.ErrClosed in c.Errors. room must not be nil.
// The middleware is safe for concurrent use.
func Middleware(room *waitingroom.Room) gin.HandlerFunc {
	return func(c *gin.Context) {
		d, err := room.Check(c.Request)
		if err != nil {
			_ = c.Error(err)
			room.RespondError(c.Writer, c.Request, err)
			c.Abort()
			return
		}
		if !room.Respond(c.Writer, c.Request, d) {
			c.Abort()
			return
		}
		if d.Outcome == waitingroom.Admitted {
			c.Request = c.Request.WithContext(d.Context(c.Request.Context()))
		}
		c.Next()
	}
}

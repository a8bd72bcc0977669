// Package wrgin puts a waiting room in front of gin routes. It is named so
// that it does not shadow the gin package it is used with.
//
// gin handlers are not net/http middleware, so the room's Handler cannot be
// used as it is; Middleware runs it around the rest of gin's chain:
//
//	r := gin.New()
//	r.GET("/healthz", healthz) // outside the room
//	site := r.Group("/", wrgin.Middleware(room))
//	site.GET("/", home)
//
// Handlers behind it find the admitted visitor's ticket through c.Writer,
// which writes through the writer Room.Handler passes on:
//
//	t, ok := waitingroom.TicketFrom(c.Writer)
//
// and end the visitor's session as behind Room.Handler: with the response
// header "Waiting-Room-Command: revoke" (c.Header) or with
// waitingroom.Revoke(c.Writer), before the response is written.
package wrgin

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/go-waitingroom/waitingroom"
)

// Middleware returns gin middleware that runs room.Handler around the rest
// of the chain: a request that room admits (or lets through: a bypass
// rule, a suspended room) goes on to the next handlers, with c.Request
// the request Handler passes on and c.Writer writing through the writer
// Handler passes on (which carries the visitor's ticket: TicketFrom; and
// sees the revoke command among the response's headers);
// for any other request Handler writes the waiting page, as HTML or JSON,
// or once room is closed its Config.ErrorHandler's answer (by default 503
// with a plain body), and the middleware aborts the chain. The visitor
// cookie is set on the response whenever it changes. c.Request and
// c.Writer are set back to what they were once the chain has run.
//
// room must not be nil. The middleware is safe for concurrent use.
func Middleware(room *waitingroom.Room) gin.HandlerFunc {
	return func(c *gin.Context) {
		n := &next{c: c}
		w, r := c.Writer, c.Request
		room.Handler(n).ServeHTTP(w, r)
		c.Writer, c.Request = w, r
		if !n.called {
			c.Abort()
		}
	}
}

// next is the rest of gin's chain, as the handler that room.Handler
// serves a request that may pass with.
type next struct {
	c      *gin.Context
	called bool
	w      writer
}

func (n *next) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := n.c
	n.called = true
	n.w = writer{ResponseWriter: w, gin: c.Writer, size: noWritten, status: http.StatusOK}
	c.Writer, c.Request = &n.w, r
	c.Next()
	// A status set and nothing written: written now, while Handler
	// watches, as gin writes it once its chain has run.
	n.w.WriteHeaderNow()
}

// noWritten is the size of a writer through which nothing was written.
const noWritten = -1

// writer is the gin.ResponseWriter of the handlers behind the room: gin's
// own, but writing through w, the writer room.Handler passes on. As gin's,
// it holds the status until the first byte or WriteHeaderNow, so that
// handlers may set headers after the status.
type writer struct {
	http.ResponseWriter                    // Handler's
	gin                 gin.ResponseWriter // the engine's, for CloseNotify and Pusher
	size, status        int
}

var _ gin.ResponseWriter = (*writer)(nil)

// Unwrap returns Handler's writer, for http.ResponseController.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WriteHeader sets the status, written with the first byte; a status set
// after the header was written is ignored, as by gin.
func (w *writer) WriteHeader(code int) {
	if code > 0 && !w.Written() {
		w.status = code
	}
}

// WriteHeaderNow writes the header now if it was not yet.
func (w *writer) WriteHeaderNow() {
	if !w.Written() {
		w.size = 0
		w.ResponseWriter.WriteHeader(w.status)
	}
}

func (w *writer) Write(b []byte) (int, error) {
	w.WriteHeaderNow()
	n, err := w.ResponseWriter.Write(b)
	w.size += n
	return n, err
}

// WriteString writes s to the body.
func (w *writer) WriteString(s string) (int, error) {
	w.WriteHeaderNow()
	n, err := io.WriteString(w.ResponseWriter, s)
	w.size += n
	return n, err
}

// Status returns the response's status.
func (w *writer) Status() int { return w.status }

// Size returns the bytes of the body written, -1 before the header.
func (w *writer) Size() int { return w.size }

// Written reports whether the header was written.
func (w *writer) Written() bool { return w.size != noWritten }

// Hijack takes over the connection, before any of the body is written.
func (w *writer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.size > 0 {
		return nil, nil, errHijackWritten
	}
	w.size = max(w.size, 0)
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Flush writes the header if it was not yet, and flushes.
func (w *writer) Flush() {
	w.WriteHeaderNow()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// CloseNotify is the engine writer's.
func (w *writer) CloseNotify() <-chan bool { return w.gin.CloseNotify() }

// Pusher is the engine writer's.
func (w *writer) Pusher() http.Pusher { return w.gin.Pusher() }

// errHijackWritten is Hijack's error once the body is written.
var errHijackWritten = errors.New("wrgin: the response body was already written")

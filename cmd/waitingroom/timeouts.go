package main

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Defaults of the connection limits.
const (
	// defaultReadHeaderTimeout bounds how long a client may take to send
	// a request's line and headers, from the moment it connects or sends
	// its first byte after an idle keep-alive wait.
	defaultReadHeaderTimeout = 10 * time.Second
	// defaultIdleTimeout bounds how long a keep-alive connection stays
	// open between two requests: longer than the waiting page's refresh
	// interval, so that a waiting browser can keep its connection.
	defaultIdleTimeout = 120 * time.Second
	// defaultBodyTimeout bounds how long a request body may stall: how
	// long the proxy waits for the next bytes of a body before closing
	// the connection.
	defaultBodyTimeout = 60 * time.Second
	// defaultMaxHeaderBytes bounds the size of a request's line and
	// headers, cookies included (Go allows 4 KiB more).
	defaultMaxHeaderBytes = 64 << 10
)

// connLimits bound what a client's connection may hold the proxy for; they
// apply to both addresses the command serves. Every duration is > 0 except
// read and body, where 0 means none.
type connLimits struct {
	// readHeader is http.Server.ReadHeaderTimeout: a client that has not
	// sent its headers this long after connecting (or after its first
	// byte following an idle wait) is disconnected.
	readHeader time.Duration
	// read is http.Server.ReadTimeout: the most a whole request, body
	// included, may take to arrive. 0 (the default) means none: any
	// value cuts off uploads that take longer, however steadily they
	// move. body bounds bodies instead.
	read time.Duration
	// idle is http.Server.IdleTimeout: how long a keep-alive connection
	// waits for its next request.
	idle time.Duration
	// body is the longest a request body may stall: each time the
	// application or the room reads some of it, the client has this long
	// again for the next bytes. A body the proxy does not forward (a
	// waiting visitor's) has this long from the start of the request to
	// arrive, up to the 256 KiB the server reads to keep the connection.
	// 0 means none.
	body time.Duration
	// maxHeaderBytes is http.Server.MaxHeaderBytes: larger headers get
	// 431 Request Header Fields Too Large.
	maxHeaderBytes int
}

// server returns a server of h with the limits.
func (l connLimits) server(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           bodyTimeout(l.body, l.read, h),
		ReadHeaderTimeout: l.readHeader,
		ReadTimeout:       l.read,
		IdleTimeout:       l.idle,
		MaxHeaderBytes:    l.maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// bodyTimeout makes the connection's reads fail when the body of a request
// stalls for d: it sets a read deadline d ahead when the request starts
// and moves it d ahead of each read that gets some of the body. Once the
// body has been read to its end, the deadline is lifted (as net/http does
// itself then), so that the server's own read of the connection, which
// notices a client that goes away, does not time out and cancel the
// request while the application takes its time to answer. A request with
// no body is left as it is. d ≤ 0 returns h. whole, if > 0, is the
// server's ReadTimeout: no deadline set here is later than whole after the
// request started.
//
// Unlike http.Server.ReadTimeout, this never cuts off an upload that keeps
// moving, however long it takes; like it, it frees the connection of a
// client that stops sending, whether or not the body is read (the server
// reads up to 256 KiB of an unread body after the handler returns, under
// the last deadline).
func bodyTimeout(d, whole time.Duration, h http.Handler) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		b := &stallBody{ReadCloser: r.Body, rc: http.NewResponseController(w), d: d}
		if whole > 0 {
			b.end = time.Now().Add(whole)
		}
		if b.rc.SetReadDeadline(b.next()) != nil {
			h.ServeHTTP(w, r) // not an HTTP/1 connection of net/http's
			return
		}
		r.Body = b
		defer b.done()
		h.ServeHTTP(w, r)
	})
}

// stallBody is a request body that moves its connection's read deadline
// as the body arrives. Its Read is safe to call from another goroutine
// than the handler's (a reverse proxy's transport does), and does nothing
// to the connection once the handler has returned.
type stallBody struct {
	io.ReadCloser
	rc  *http.ResponseController
	d   time.Duration
	end time.Time // the whole request's deadline (ReadTimeout); zero for none

	mu       sync.Mutex
	returned bool // the handler has returned: rc must not be used
}

func (b *stallBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var deadline time.Time
	switch {
	case errors.Is(err, io.EOF):
		// deadline stays zero: none
	case err == nil && n > 0:
		deadline = b.next()
	default:
		// A failed read, the deadline's own among them: leave the
		// deadline where it is, so that the server's reads after the
		// handler fail as well and the connection closes.
		return n, err
	}
	b.mu.Lock()
	if !b.returned {
		_ = b.rc.SetReadDeadline(deadline)
	}
	b.mu.Unlock()
	return n, err
}

// next is the deadline for the body's next bytes: d from now, but no
// later than the whole request's.
func (b *stallBody) next() time.Time {
	t := time.Now().Add(b.d)
	if !b.end.IsZero() && t.After(b.end) {
		return b.end
	}
	return t
}

func (b *stallBody) done() {
	b.mu.Lock()
	b.returned = true
	b.mu.Unlock()
}

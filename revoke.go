package waitingroom

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/store"
)

// CommandHeader is the response header through which the application gives
// the room a command: "revoke" (in any case) ends the admitted visitor's
// session, as Revoke does. Handler obeys it, and removes it before the
// response leaves, bypassed responses included (where it is not obeyed),
// behind every adapter built on Handler (wrgin, wrcaddy, the forward-auth
// handler of package forwardauth). Handler takes the commercial product's
// name for it, "Cf-Waiting-Room-Command" (its "origin commands"), the same
// way, so an application written for the product revokes sessions here
// unchanged.
const CommandHeader = "Waiting-Room-Command"

// productCommandHeader is the commercial product's name for CommandHeader.
const productCommandHeader = "Cf-Waiting-Room-Command"

// Revoke ends the session of the admitted visitor whose response w writes,
// freeing their slot at once: their cookie is cleared and they are a new
// visitor at their next request. w is the writer Room.Handler passed on
// to the application (or the adapters built on it: wrgin, wrcaddy), or one
// that unwraps to it, as for TicketFrom; call Revoke before the response
// is written. It reports whether the session will be ended (false for
// any other writer, for requests that were not admitted, or once the
// response has been written). It is the response header CommandHeader
// "revoke", given from Go: behind a writer that does not unwrap, set the
// header.
func Revoke(w http.ResponseWriter) bool {
	rw := handlerWriter(w)
	if rw == nil || rw.committed {
		return false
	}
	rw.revoked = true
	return true
}

// revokeWriter is the writer Handler passes on: it watches the
// application's response for a revoke command and carries it out before
// the headers leave, and it carries an admitted visitor's ticket
// (TicketFrom). It unwraps for http.ResponseController, so flushing,
// hijacking (WebSockets) and deadlines pass through. For an admitted
// request it is Handler's one allocation.
type revokeWriter struct {
	http.ResponseWriter
	rm         *Room
	id         uint64
	acceptedAt int64 // as in the cookie
	bucket     int64 // as in the cookie
	checkedIn  int32 // seconds from the admission's to the latest check-in's, for a revoke counted by second
	admitted   bool  // false for a bypassed request, whose header is removed, not obeyed
	revoked    bool
	committed  bool
}

// admit makes w the writer of the admitted visitor of cookie state s.
func (w *revokeWriter) admit(s cookieState) {
	w.id, w.acceptedAt, w.bucket, w.checkedIn, w.admitted = s.id, s.acceptedAt, s.bucket, s.checkedIn(), true
}

// handlerWriter returns the writer of an admitted visitor that Handler
// passed on, that w is or unwraps to, or nil: the nearest, as a value in
// a context would be, past the writers of rooms that let the request
// through uncounted (a suspended room, a bypass rule). Wrappers are
// unwrapped as http.ResponseController does, a few deep at most: a chain
// that long is a loop.
func handlerWriter(w http.ResponseWriter) *revokeWriter {
	for range 16 {
		switch x := w.(type) {
		case *revokeWriter:
			if x.admitted {
				return x
			}
			w = x.ResponseWriter
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil
		}
	}
	return nil
}

// commit runs once, before the first byte of the response: it reads and
// removes the command header and, on a revoke, ends the session.
func (w *revokeWriter) commit() {
	if w.committed {
		return
	}
	w.committed = true
	if h := w.ResponseWriter.Header(); len(h) > 0 {
		w.command(h, CommandHeader)
		w.command(h, productCommandHeader)
	}
	if w.revoked && w.admitted {
		w.rm.revoke(w.ResponseWriter, w.id, w.acceptedAt, floorDiv(w.acceptedAt, 1000)+int64(w.checkedIn))
	}
}

// command obeys and removes the command header name (canonical) of h.
func (w *revokeWriter) command(h http.Header, name string) {
	cmds, ok := h[name]
	if !ok {
		return
	}
	for _, cmd := range cmds {
		if strings.EqualFold(strings.TrimSpace(cmd), "revoke") {
			w.revoked = true
		}
	}
	delete(h, name)
}

func (w *revokeWriter) WriteHeader(code int) {
	w.commit()
	w.ResponseWriter.WriteHeader(code)
}

func (w *revokeWriter) Write(b []byte) (int, error) {
	w.commit()
	return w.ResponseWriter.Write(b)
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *revokeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush implements http.Flusher when the wrapped writer can flush.
func (w *revokeWriter) Flush() {
	w.commit()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack implements http.Hijacker when the wrapped writer can hijack.
func (w *revokeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.commit()
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// revoke ends an admitted visitor's session: the record of their ID is
// marked revoked (once, however many requests carrying copies of the
// cookie revoke it, here or on other instances), so their slot is free
// at the next sync and every copy of their cookie is a new visitor's from
// now on here, and from their next sync on other instances. Their cookie
// is cleared.
func (rm *Room) revoke(w http.ResponseWriter, id uint64, acceptedAt, checkInSec int64) {
	now := rm.now()
	x := store.Session{ID: id, Admitted: floorDiv(acceptedAt, 1000), Seen: floorDiv(now, 1000), Revoked: true}
	if d := rm.passes.Load(); d > 0 {
		// A pass given before may pass the visitor for a few seconds
		// more: the session holds its slot until the last one expires.
		x = rm.passRevoke(id, x.Admitted, now, d)
	}
	rm.local.Lock()
	rm.local.Report(x)
	rm.local.Unlock()
	if rm.refuse(id, revokedSpan{until: now + rm.countWindow(&rm.syncer.Snapshot().Settings) + rm.hold}) {
		rm.counters.revoked.Add(1)
		rm.syncer.Wake() // the other instances learn it at their next sync
	}
	// Replace any cookie set for this response with an expired one.
	h := w.Header()
	cookies := h.Values("Set-Cookie")
	h.Del("Set-Cookie")
	for _, v := range cookies {
		if !strings.HasPrefix(v, rm.cookieName+"=") {
			h.Add("Set-Cookie", v)
		}
	}
	// The attributes the cookie was set with: a partitioned cookie is
	// deleted only by a header that says Partitioned too.
	h.Add("Set-Cookie", rm.cookieName+"=; Max-Age=0"+rm.cookieAttrs)
}

// revokeReach is the longest, in ms, a revoke at one instance takes to
// reach every other one when they sync every interval: the revoking
// instance syncs at once, at most share.WakeGap after its previous sync began;
// each other one learns it at its next sync, within interval, or in a
// fleet syncing through an aggregator, after the aggregator's round,
// within another; and a second goes to the round trips. With syncs left
// to the caller (interval not positive), the second alone.
func revokeReach(interval time.Duration) int64 {
	i := max(interval, 0)
	return (2*i + share.WakeGap(i) + time.Second).Milliseconds()
}

// revokedSpan is when an instance refuses the cookies of a revoked
// session, Unix ms: from from (0: at once), and until until, when the
// session's record is gone and its cookies would let nobody in any more.
type revokedSpan struct{ from, until int64 }

// refuse records that the cookies of session id are refused over s; for
// a session already refused, from the sooner of the two froms until the
// later of the two untils. It reports whether id is new.
func (rm *Room) refuse(id uint64, s revokedSpan) bool {
	for {
		old, loaded := rm.revokedIDs.LoadOrStore(id, s)
		if !loaded {
			rm.revokedN.Add(1)
			return true
		}
		o := old.(revokedSpan)
		if o.from <= s.from && o.until >= s.until {
			return false
		}
		if rm.revokedIDs.CompareAndSwap(id, old, revokedSpan{from: min(o.from, s.from), until: max(o.until, s.until)}) {
			return false
		}
	}
}

// refused reports whether the cookies of session id are refused at now
// (Unix ms). It takes no lock.
func (rm *Room) refused(id uint64, now int64) bool {
	if rm.revokedN.Load() == 0 {
		return false
	}
	s, ok := rm.revokedIDs.Load(id)
	return ok && now >= s.(revokedSpan).from
}

// learnRevoked adds the revoked sessions of the latest sync to those this
// instance refuses, each from when the sync says, and forgets those whose
// records are gone by now (Unix ms): their cookies would not let anyone
// in any more. Each is kept for keep ms after now, or after it starts
// being refused if that is later.
func (rm *Room) learnRevoked(rs []share.Revoked, now, keep int64) {
	for _, r := range rs {
		rm.refuse(r.ID, revokedSpan{from: r.From, until: max(r.From, now) + keep})
	}
	if rm.revokedN.Load() == 0 {
		return
	}
	rm.revokedIDs.Range(func(k, s any) bool {
		if s.(revokedSpan).until <= now && rm.revokedIDs.CompareAndDelete(k, s) {
			rm.revokedN.Add(-1)
		}
		return true
	})
}

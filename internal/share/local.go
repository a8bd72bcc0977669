package share

import (
	"sync"

	"github.com/go-waitingroom/waitingroom/store"
)

// Local is the request path's share of an instance: the grant it admits
// from, what it reports to the next sync, and what it knows of sessions
// beyond the latest sync. Requests take its lock for a few map updates,
// never across I/O; the sync takes it to swap the reports out and the
// grant in. Every method but Lock and Unlock must be called with the lock
// held; the room guards its own memory of visitors (their chances) with
// the same lock.
type Local struct {
	mu    sync.Mutex
	grant Grant
	// pending are the reports of the next sync.
	pending *delta
	// queued and sent are the net waiting counts, by bucket, of pending
	// (Count) and of the reports handed to the store that the latest view
	// may not show yet (Syncer.noteSent: a sync in flight's, one that
	// failed, a fleet's before its aggregator's round): a check-in moves
	// its visitor's count within their bucket, so few buckets are not 0.
	queued, sent nets
	// inflight counts, by grant entry, the admissions taken while a sync
	// is in flight; they are charged to the grant the sync brings. nil
	// when no sync is in flight.
	inflight map[int64]int64
	// known is what this instance knows of sessions beyond the latest
	// sync: those it admitted, saw or revoked, by visitor ID, kept at
	// least as long as the state keeps them (for a rebuild after a loss).
	known Memory[store.Session]
	// listing is what the instance saw of a shuffled pre-queue and has not
	// written to its list yet (places.go).
	listing listing
}

func newLocal() *Local {
	return &Local{pending: newDelta(), known: NewMemory[store.Session]()}
}

// Lock takes the lock that guards l (and the room's memory of visitors).
func (l *Local) Lock() { l.mu.Lock() }

// Unlock releases it.
func (l *Local) Unlock() { l.mu.Unlock() }

// Take takes one admission from the grant for a visitor of bucket (as the
// rules map it; fresh: a visitor with no place in the queue yet, who may
// take only what any visitor may), and reports whether there was one. An
// admission taken while a sync is in flight is charged to the grant that
// sync brings.
func (l *Local) Take(bucket int64, fresh bool) bool {
	from, ok := l.grant.take(bucket, fresh)
	if ok && l.inflight != nil {
		l.inflight[from]++
	}
	return ok
}

// OlderKept reports whether the grant keeps an admission for a bucket
// older than bucket: a visitor of bucket who takes one may get in before
// an older one (the room holds them back a while: takeLocked).
func (l *Local) OlderKept(bucket int64) bool { return l.grant.olderHeld(bucket) }

// Report reports x, a session's admission, sign of life or revoke, to the
// next sync, and notes it among the sessions this instance knows.
func (l *Local) Report(x store.Session) {
	l.pending.session(x)
	if o, ok := l.known.Get(x.ID); ok {
		mergeSession(&o, x)
		x = o
	}
	l.known.Set(x.ID, x)
}

// Reported returns this instance's own reports of the session of visitor
// id, merged, while it remembers them.
func (l *Local) Reported(id uint64) (store.Session, bool) { return l.known.Get(id) }

// Lookup returns what is known of the session of visitor id: its record
// in v (the latest sync's view) merged with this instance's reports since.
func (l *Local) Lookup(v *View, id uint64) (store.Session, bool) {
	x, found := v.Session(id)
	if k, ok := l.known.Get(id); ok {
		if !found {
			x = k
		} else {
			mergeSession(&x, k)
		}
		found = true
	}
	return x, found
}

// Count moves n visitors into the waiting count of (bucket, slot) (out of
// it for n < 0), at the next sync.
func (l *Local) Count(bucket, slot, n int64) {
	l.pending.waiting[cellKey{bucket, slot}] += n
	l.queued = l.queued.add(bucket, n)
}

// Attempt counts an admission attempt (a fresh visitor, a due check-in):
// the instance's traffic, its share of the slots.
func (l *Local) Attempt() { l.pending.attempts++ }

// Wait reports the wait, in ms, of visitor id, let in by this instance,
// for the kept history.
func (l *Local) Wait(id uint64, ms int64) { l.pending.wait(id, ms) }

// Unseen returns how many visitors this instance let in that the next
// sync reports: the latest view does not count them yet.
func (l *Local) Unseen() int64 { return int64(len(l.pending.waits)) }

// Queued returns how many visitors this instance counted waiting, net of
// those it took out of the count (let in), that the latest view does not
// count yet: in buckets older than bucket, and in all.
func (l *Local) Queued(bucket int64) (older, all int64) {
	for _, m := range []nets{l.queued, l.sent} {
		for b, n := range m {
			all += n
			if b < bucket {
				older += n
			}
		}
	}
	return older, all
}

// nets are net waiting counts by bucket, without the zeros.
type nets map[int64]int64

// add adds n to bucket's count of m, made if nil, and returns m.
func (m nets) add(bucket, n int64) nets {
	if m == nil {
		m = nets{}
	}
	if m[bucket] += n; m[bucket] == 0 {
		delete(m, bucket)
	}
	return m
}

// netsOf returns the net counts by bucket of cells.
func netsOf(cells map[cellKey]int64) (m nets) {
	for k, n := range cells {
		m = m.add(k.bucket, n)
	}
	return m
}

// Ask asks for visitor id, of bucket (as the rules map it), who will be
// back at at (shared-clock ms, their next chance): a due visitor this
// instance had no slot for (picks.go). The shared state keeps the ask
// until then (no instance gives them a chance sooner), and a sync may
// pick them: the pick lets them in from at.
func (l *Local) Ask(id uint64, bucket, at int64) { l.pending.ask(id, bucket, at) }

// Reask brings the moment visitor id, asked for by the next sync, said
// they would be back forward to at (shared-clock ms), if sooner: they
// were told to come back sooner after the ask.
func (l *Local) Reask(id uint64, at int64) {
	if a, ok := l.pending.asks[id]; ok && at < a.at {
		a.at = at
		l.pending.asks[id] = a
	}
}

// MayAsk reports whether the next sync may ask for visitor id: it asks
// for a bounded number of visitors, id among them or not yet.
func (l *Local) MayAsk(id uint64) bool { return l.pending.mayAsk(id) }

// Asked reports whether the next sync asks for visitor id, and for which
// bucket.
func (l *Local) Asked(id uint64) (bucket int64, ok bool) {
	a, ok := l.pending.asks[id]
	return a.bucket, ok
}

// Grant returns a copy of the grant in hand.
func (l *Local) Grant() Grant { return append(Grant(nil), l.grant...) }

// SetGrant replaces the grant in hand with g, until the next sync: for
// tests and simulations that set an instance's slots by hand.
func (l *Local) SetGrant(g Grant) { l.grant = g }

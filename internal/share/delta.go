package share

import "github.com/go-waitingroom/waitingroom/store"

// cellKey is a waiting count's cell: the visitors of an arrival bucket
// counted in a check-in slot.
type cellKey struct{ bucket, slot int64 }

// delta is what one instance changed since its last sync.
type delta struct {
	sessions map[uint64]store.Session // by visitor ID
	waits    map[uint64]int64         // the wait, in ms, of each visitor this instance let in; nil until one
	waiting  map[cellKey]int64        // (bucket, slot) → change
	attempts int64                    // admission attempts (fresh visitors and due check-ins)
	asks     map[uint64]ask           // due visitors this instance had no slot for (picks.go); nil until one
}

func newDelta() *delta {
	return &delta{sessions: map[uint64]store.Session{}, waiting: map[cellKey]int64{}}
}

// session merges the report x into d.
func (d *delta) session(x store.Session) {
	if o, ok := d.sessions[x.ID]; ok {
		mergeSession(&o, x)
		x = o
	}
	d.sessions[x.ID] = x
}

// wait records the wait, in ms, of the visitor id this instance let in.
func (d *delta) wait(id uint64, w int64) {
	if d.waits == nil {
		d.waits = map[uint64]int64{}
	}
	d.waits[id] = w
}

// prune drops the waiting counts that no longer count at now (Unix ms):
// what an instance remembers of its contributions (Syncer.mine, which
// holds no sessions: Local.known has them) is bounded by one waiting
// window.
func (d *delta) prune(now, waitWindow int64) {
	for k := range d.waiting {
		if d.waiting[k] == 0 || !SlotCounted(k.slot, now, waitWindow) {
			delete(d.waiting, k)
		}
	}
	d.attempts = 0
}

// add merges o into d.
func (d *delta) add(o *delta) {
	for _, x := range o.sessions {
		d.session(x)
	}
	for k, v := range o.waiting {
		d.waiting[k] += v
	}
	d.attempts += o.attempts
	for id, w := range o.waits {
		d.wait(id, w)
	}
	for id, a := range o.asks {
		d.ask(id, a.bucket, a.at)
	}
}

// maxAsks bounds the visitors a delta asks for: the others ask again at
// their next chance.
const maxAsks = 256

// ask is a queued visitor whom an instance had no slot for at a chance
// they were due: their bucket, as the rules map it, and the shared-clock
// ms at which they said they would be back (their next chance; the
// latest, from copies of their cookie at several instances). The ask
// holds, and a pick of them, askSlack more (picks.go).
type ask struct{ bucket, at int64 }

// ask records that visitor, of bucket b, found no slot and will be back
// at at.
func (d *delta) ask(visitor uint64, b, at int64) {
	if a, ok := d.asks[visitor]; ok {
		b, at = min(a.bucket, b), max(a.at, at)
	}
	if d.asks == nil {
		d.asks = map[uint64]ask{}
	}
	d.asks[visitor] = ask{bucket: b, at: at}
}

// mayAsk reports whether an instance's pending delta may ask for visitor:
// it holds fewer than maxAsks, or visitor among them. (A round merges
// every instance's asks whole.)
func (d *delta) mayAsk(visitor uint64) bool {
	_, ok := d.asks[visitor]
	return ok || len(d.asks) < maxAsks
}

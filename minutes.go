package waitingroom

import (
	"context"
	"slices"
	"sync"

	"github.com/go-waitingroom/waitingroom/store"
)

// keptHistory is what an instance keeps for the room's history: the
// store's history (nil if it keeps none), the records it failed to write
// (sent again with the next ones), and the running histograms of what its
// syncs observed, for metrics.
type keptHistory struct {
	store store.HistoryStore

	mu        sync.Mutex
	unwritten []store.Tally
	failing   bool
	waits     histogram
	sessions  histogram
}

// maxUnwritten bounds the records an instance keeps while the store does
// not take them: an hour's.
const maxUnwritten = 60

func newKeptHistory(st store.Store) *keptHistory {
	k := &keptHistory{waits: newHistogram(waitBounds), sessions: newHistogram(sessionBounds)}
	k.store, _ = st.(store.HistoryStore)
	return k
}

func (k *keptHistory) pending() []store.Tally {
	k.mu.Lock()
	defer k.mu.Unlock()
	return cloneTallies(k.unwritten)
}

// afterSync records what a successful sync observed and writes the
// minutes it took out of the state (with those a previous write failed
// to store). A failure is logged once, and the records kept for the next
// time (at most maxUnwritten).
func (rm *Room) afterSync(ctx context.Context, v *view) {
	k := rm.kept
	k.mu.Lock()
	for _, w := range v.observed.waits {
		k.waits.observe(float64(w.v))
	}
	for _, s := range v.observed.sessions {
		k.sessions.observe(float64(s))
	}
	k.unwritten = append(k.unwritten, v.due...)
	if n := len(k.unwritten) - maxUnwritten; n > 0 {
		k.unwritten = slices.Delete(k.unwritten, 0, n)
	}
	recs := make([]store.Record, len(k.unwritten))
	for i := range k.unwritten {
		recs[i] = store.Record{Minute: k.unwritten[i].Minute, Data: store.MarshalTally(&k.unwritten[i])}
	}
	k.mu.Unlock()
	if k.store == nil || len(recs) == 0 {
		return
	}
	err := k.store.AppendHistory(ctx, rm.cfg.Name, recs)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		if !k.failing {
			rm.log.Warn("waitingroom: could not write the room's history; retrying at the next sync", "err", err)
		}
		k.failing = true
		return
	}
	if k.failing {
		rm.log.Info("waitingroom: the room's history is written again")
	}
	k.failing = false
	k.unwritten = slices.Delete(k.unwritten, 0, len(recs))
}

// The bounds, in seconds, of the histograms of Room.Observed.
var (
	waitBounds    = []float64{0, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400}
	sessionBounds = []float64{10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400}
)

// Histogram is a running histogram of durations, in the form Prometheus
// histograms take.
type Histogram struct {
	// Bounds are the buckets' upper bounds, in seconds, ascending.
	Bounds []float64
	// Counts are the observations at or below each bound (cumulative),
	// one per bound.
	Counts []uint64
	// Count and Sum are the number of observations and their sum, in
	// seconds.
	Count uint64
	Sum   float64
}

type histogram struct {
	bounds []float64
	counts []uint64 // per bucket, not cumulative; one more for +Inf
	n      uint64
	sum    float64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v)
	h.counts[i]++
	h.n++
	h.sum += v
}

func (h *histogram) export() Histogram {
	out := Histogram{Bounds: slices.Clone(h.bounds), Counts: make([]uint64, len(h.bounds)), Count: h.n, Sum: h.sum}
	var c uint64
	for i := range h.bounds {
		c += h.counts[i]
		out.Counts[i] = c
	}
	return out
}

// Observed are the waits and session lengths this instance's syncs
// observed since New, for metrics: summed over the instances sharing a
// room, each is counted once (by the instance whose sync brought the
// admission to the shared state, or dropped the session from it).
type Observed struct {
	// Waits are the waits of admitted visitors: from their arrival (known
	// to the minute: see docs/history.md) to their admission.
	Waits Histogram
	// Sessions are the lengths of ended sessions: from the admission to
	// the latest request.
	Sessions Histogram
}

// Observed returns the histograms of the waits and session lengths this
// instance observed. It does no I/O and is safe for concurrent use.
func (rm *Room) Observed() Observed {
	k := rm.kept
	k.mu.Lock()
	defer k.mu.Unlock()
	return Observed{Waits: k.waits.export(), Sessions: k.sessions.export()}
}

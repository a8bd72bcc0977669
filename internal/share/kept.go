package share

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

// Unwritten returns the tallies of the minutes the store's history may not
// show yet, oldest first within each of two runs: those this instance took
// out of the shared state and could not write yet, then those in the
// shared state as of its latest sync (the minute in progress among them).
// They are the caller's to keep.
func (s *Syncer[S]) Unwritten() []store.Tally {
	k := s.kept
	k.mu.Lock()
	out := cloneTallies(k.unwritten)
	k.mu.Unlock()
	return append(out, cloneTallies(s.Snapshot().Tallies)...)
}

// afterSync records what a successful sync observed and writes the
// minutes it took out of the state (with those a previous write failed
// to store). A failure is logged once, and the records kept for the next
// time (at most maxUnwritten).
func (s *Syncer[S]) afterSync(ctx context.Context, v *View) {
	k := s.kept
	k.mu.Lock()
	for _, w := range v.observed.waits {
		k.waits.observe(float64(w.v))
	}
	for _, x := range v.observed.sessions {
		k.sessions.observe(float64(x))
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
	err := k.store.AppendHistory(ctx, s.cfg.Name, recs)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		if !k.failing {
			s.cfg.Log.Warn("waitingroom: could not write the room's history; retrying at the next sync", "err", err)
		}
		k.failing = true
		return
	}
	if k.failing {
		s.cfg.Log.Info("waitingroom: the room's history is written again")
	}
	k.failing = false
	k.unwritten = slices.Delete(k.unwritten, 0, len(recs))
}

// The bounds, in seconds, of the histograms of Observed.
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

// Observed returns the histograms of the waits (from arrival to
// admission) and the session lengths (from admission to the latest
// request) this instance's syncs observed: each admission is observed by
// the instance whose sync brought it to the shared state, each session by
// the one whose sync dropped it from there.
func (s *Syncer[S]) Observed() (waits, sessions Histogram) {
	k := s.kept
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.waits.export(), k.sessions.export()
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

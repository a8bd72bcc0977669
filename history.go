package waitingroom

import (
	"sync"
	"time"
)

const (
	// historyInterval is the spacing of the history samples.
	historyInterval = 10 * time.Second
	// historyWindow is how far back the history goes.
	historyWindow = time.Hour
)

// Sample is one point of the room's history: its figures as of one sync.
type Sample struct {
	// At is the time of the sync, on the room's clock.
	At time.Time
	// Active, Waiting, AdmittedThisMinute and OutflowPerMinute are the
	// Stats fields of the same names as of that sync.
	Active, Waiting, AdmittedThisMinute int
	OutflowPerMinute                    float64
}

// History returns the room's figures over the last hour, oldest first: at
// most one Sample per 10 seconds of the room's clock (the latest sync in
// each), as this instance saw them at its syncs. It is kept in memory
// (about 40 KB) and starts empty with the Room. It returns a new slice on
// every call and is safe for concurrent use.
func (rm *Room) History() []Sample {
	from := rm.now() - historyWindow.Milliseconds()
	var out []Sample
	for _, s := range rm.history.samples() {
		if s.at < from {
			continue
		}
		out = append(out, Sample{At: time.UnixMilli(s.at), Active: s.active, Waiting: s.waiting,
			AdmittedThisMinute: s.admittedThisMinute, OutflowPerMinute: s.outflowPerMinute})
	}
	return out
}

// sample is one history point: the room's figures at one sync.
type sample struct {
	at                 int64 // Unix ms of the sync
	active, waiting    int
	admittedThisMinute int
	outflowPerMinute   float64
}

// history is a ring of samples, at most one per historyInterval of the
// room's clock (the latest sync in it), over historyWindow. It is safe for
// concurrent use.
type history struct {
	mu    sync.Mutex
	ring  []sample
	start int // index of the oldest sample
	n     int
}

func newHistory() *history {
	return &history{ring: make([]sample, int(historyWindow/historyInterval)+1)}
}

func (h *history) last() *sample { return &h.ring[(h.start+h.n-1)%len(h.ring)] }

// observe records s unless it is no newer than the latest sample. A sample
// in the same interval as the latest replaces it. A clock that went back
// more than the window starts the history anew.
func (h *history) observe(s sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	iv := historyInterval.Milliseconds()
	if h.n > 0 {
		last := h.last()
		switch {
		case s.at < last.at-historyWindow.Milliseconds():
			h.start, h.n = 0, 0
		case s.at <= last.at:
			return
		case floorDiv(s.at, iv) == floorDiv(last.at, iv):
			*last = s
			return
		}
	}
	if h.n == len(h.ring) {
		h.start = (h.start + 1) % len(h.ring)
		h.n--
	}
	h.ring[(h.start+h.n)%len(h.ring)] = s
	h.n++
	// Drop what fell out of the window.
	for h.n > 0 && h.ring[h.start].at < s.at-historyWindow.Milliseconds() {
		h.start = (h.start + 1) % len(h.ring)
		h.n--
	}
}

// samples returns the samples, oldest first.
func (h *history) samples() []sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]sample, h.n)
	for i := range out {
		out[i] = h.ring[(h.start+i)%len(h.ring)]
	}
	return out
}

package waitingroom

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
	waits, sessions := rm.syncer.Observed()
	return Observed{Waits: Histogram(waits), Sessions: Histogram(sessions)}
}

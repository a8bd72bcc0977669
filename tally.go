package waitingroom

// The figures of the kept history are the sync's (internal/share,
// tally.go): every admission a report brings the shared state observes
// the wait the instance that let the visitor in measured (observedWait,
// reported with the session).

// observedWait is the wait, in ms, of a visitor let in at now (Unix ms)
// whose cookie carries the arrival minute bucket: fresh visitors (no
// place yet) waited nothing. The cookie knows the arrival to the minute
// only, so the arrival is taken at the middle of what is left of that
// minute before now: the wait is off by at most 30 seconds.
func observedWait(bucket, now int64, fresh bool) int64 {
	if fresh {
		return 0
	}
	from := bucket * 60_000
	to := min(from+60_000, now)
	if to <= from {
		return 0 // a bucket from the future: a clock put back
	}
	return now - (from+to)/2
}

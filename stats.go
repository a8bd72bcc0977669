package waitingroom

import (
	"sync"
	"time"

	"github.com/go-waitingroom/waitingroom/internal/share"
)

// Stats is a snapshot of the whole room (all instances) as of this
// instance's latest sync, with this instance's own totals (Counters,
// Observed).
type Stats struct {
	// Status is the room's status: the scheduled event in force, if any,
	// applies (its pre-queue, its limits, its queueing method).
	Status RoomStatus
	// Settings are the live settings.
	Settings Settings
	// InForce are the settings that govern visitors now: Settings with the
	// overrides of the event in force applied.
	InForce Settings
	// Event is the scheduled event in force now (its pre-queue included),
	// or nil; Prequeueing reports that its pre-queue is open.
	Event       *Event
	Prequeueing bool
	// Active is the number of admitted visitors whose session is alive.
	Active int
	// Waiting is the number of visitors waiting and refreshing.
	Waiting int
	// Buckets are the waiting visitors by arrival minute, oldest first.
	Buckets []BucketStats
	// AdmittedThisMinute is the number of visitors let in this minute.
	AdmittedThisMinute int
	// AdmittedByMinute are the admissions of the last hour by minute,
	// oldest first; minutes without admissions are left out.
	AdmittedByMinute []MinuteCount
	// OutflowPerMinute is the recent admission rate, visitors per minute:
	// the admissions of the last five minutes from the first that had
	// any, and from the latest opening, start or end of an event, never
	// above NewUsersPerMinute.
	OutflowPerMinute float64
	// Estimate is the wait of a visitor arriving now.
	Estimate Estimate
	// Instances is the number of instances sharing the room.
	Instances int
	// Synced is the time of the latest successful sync; zero before the
	// first one.
	Synced time.Time
	// Aggregated reports that this instance's latest successful sync went
	// through the fleet's aggregator (32 instances or more) rather than
	// the whole shared state; Aggregating, that it held the fleet's lease
	// after it. Both are false for a room that syncs the classic way.
	Aggregated, Aggregating bool
	// Now is the room's clock when the snapshot was taken: Config.Now,
	// aligned to the clock the instances share.
	Now time.Time
	// Counters are this instance's running totals since New.
	Counters Counters
	// Observed are the waits and session lengths this instance's syncs
	// observed since New.
	Observed Observed
}

// MinuteCount is a number of admissions in one minute.
type MinuteCount struct {
	Minute   time.Time
	Admitted int
}

// BucketStats counts the visitors waiting from one arrival minute.
type BucketStats struct {
	Bucket  time.Time
	Waiting int
}

// Stats returns the room's figures as of the latest sync, and this
// instance's totals now. It does no I/O and is safe for concurrent use.
func (rm *Room) Stats() Stats {
	v := rm.syncer.Snapshot()
	sc := rm.syncer.Counters()
	now := rm.now()
	pol := rm.policyAt(&v.Settings, now)
	e, _ := rm.estimate(v, &pol, &cookieState{bucket: secondOf(now)}, true, false)
	s := Stats{
		Settings:           v.Settings,
		InForce:            pol.Settings,
		Prequeueing:        pol.prequeue,
		Active:             int(v.Active),
		Waiting:            int(v.Waiting),
		AdmittedThisMinute: int(v.AdmittedThisMinute),
		OutflowPerMinute:   v.PerMinute,
		Instances:          v.Instances,
		Aggregated:         sc.Aggregated,
		Aggregating:        sc.Aggregating,
		Estimate:           e,
	}
	if s.Now = time.UnixMilli(now); v.At != 0 {
		s.Synced = time.UnixMilli(v.At)
	}
	// Callers get their own copies of what the view shares, and the
	// public fields only.
	s.Settings.floors, s.InForce.floors = share.Floors{}, share.Floors{}
	s.Settings.Events = cloneEvents(s.Settings.Events)
	s.InForce.Events = s.Settings.Events
	if pol.event != nil {
		s.Event = &cloneEvents([]Event{*pol.event})[0]
	}
	for _, c := range v.Admitted {
		s.AdmittedByMinute = append(s.AdmittedByMinute, MinuteCount{Minute: time.Unix(c.Key*60, 0), Admitted: int(c.N)})
	}
	if pol.method.passes || pol.Suspended {
		s.Estimate = Estimate{Known: true} // nobody waits
	}
	for _, b := range v.Buckets { // by second, oldest first: summed by minute
		if m, n := time.Unix(floorDiv(b.Arrival, 60)*60, 0), len(s.Buckets); n == 0 || !s.Buckets[n-1].Bucket.Equal(m) {
			s.Buckets = append(s.Buckets, BucketStats{Bucket: m})
		}
		s.Buckets[len(s.Buckets)-1].Waiting += int(b.Waiting)
	}
	if s.Status = status(&s); s.Status == StatusNotQueueing && v.At != 0 {
		s.Estimate = Estimate{Known: true} // there is room: one arriving now is let in
	}
	s.Counters = rm.totals()
	waits, sessions := rm.syncer.Observed()
	s.Observed = Observed{Waits: Histogram(waits), Sessions: Histogram(sessions)}
	return s
}

// Counters are running totals of what this instance did since New, for
// metrics (Stats.Counters).
type Counters struct {
	// Admitted counts visitors let in (first admissions, not requests).
	Admitted uint64 `json:"admitted"`
	// Queued counts visitors who joined the queue (their first waiting
	// response).
	Queued uint64 `json:"queued"`
	// Revoked counts sessions the application ended (Revoke or the
	// command header).
	Revoked uint64 `json:"revoked"`
	// Bypassed counts requests that a bypass rule let through.
	Bypassed uint64 `json:"bypassed"`
	// Syncs and SyncErrors count syncs attempted and failed.
	Syncs      uint64 `json:"syncs"`
	SyncErrors uint64 `json:"syncErrors"`
	// LastSyncSeconds is how long the latest sync took, in seconds.
	LastSyncSeconds float64 `json:"lastSyncSeconds"`
	// ChallengesIssued counts the challenges given (one per place in the
	// queue), ChallengesPassed the valid answers, ChallengesFailed the
	// visitors who came back without one (once per place), and
	// ChallengesParked those of them put in the infinite queue
	// (challenge.Policy.OnFail challenge.Infinite).
	ChallengesIssued uint64 `json:"challengesIssued"`
	ChallengesPassed uint64 `json:"challengesPassed"`
	ChallengesFailed uint64 `json:"challengesFailed"`
	ChallengesParked uint64 `json:"challengesParked"`
	// ChallengesUnverified counts the answers to a hosted challenge on
	// which its provider gave no verdict (a timeout, an error, a status
	// other than 200 such as a rate limit's 429, an unreadable reply):
	// neither passed nor failed, each is asked again at the visitor's
	// next chance. ChallengesDeferred counts the
	// answers left for the visitor's next request because
	// challenge.Verifier.MaxInFlight calls were in flight: neither passed
	// nor failed.
	ChallengesUnverified uint64 `json:"challengesUnverified"`
	ChallengesDeferred   uint64 `json:"challengesDeferred"`
}

// totals returns this instance's running totals.
func (rm *Room) totals() Counters {
	c := &rm.counters
	sc := rm.syncer.Counters()
	return Counters{
		Admitted:             c.admitted.Load(),
		Queued:               c.queued.Load(),
		Revoked:              c.revoked.Load(),
		Bypassed:             c.bypassed.Load(),
		Syncs:                sc.Syncs,
		SyncErrors:           sc.Errors,
		LastSyncSeconds:      sc.Last.Seconds(),
		ChallengesIssued:     c.chalIssued.Load(),
		ChallengesPassed:     c.chalPassed.Load(),
		ChallengesFailed:     c.chalFailed.Load(),
		ChallengesParked:     c.chalParked.Load(),
		ChallengesUnverified: c.chalUnverified.Load(),
		ChallengesDeferred:   c.chalDeferred.Load(),
	}
}

// RoomStatus is the state of a room as the admin API and the metrics report
// it.
type RoomStatus string

// Room statuses.
const (
	// StatusNotQueueing: a visitor arriving now would be let straight in.
	StatusNotQueueing RoomStatus = "not_queueing"
	// StatusQueueing: a visitor arriving now would not be let straight in.
	// Visitors are waiting, the room is full (TotalActiveUsers or
	// NewUsersPerMinute reached), QueueAll is set, or the queueing method
	// is Reject (new visitors are turned away).
	StatusQueueing RoomStatus = "queueing"
	// StatusEventPrequeueing: the pre-queue of a scheduled event is open
	// (Event.PrequeueStart); every new visitor waits for its start.
	StatusEventPrequeueing RoomStatus = "event_prequeueing"
	// StatusSuspended: the room is suspended (Settings.Suspended); every
	// request goes straight to the application.
	StatusSuspended RoomStatus = "suspended"
)

// status is the room's status as of the snapshot s.
func status(s *Stats) RoomStatus {
	set := s.InForce
	switch {
	case set.Suspended:
		return StatusSuspended
	case s.Prequeueing && set.QueueingMethod != Reject:
		return StatusEventPrequeueing
	case set.QueueAll, set.QueueingMethod == Reject:
		return StatusQueueing
	case set.QueueingMethod == Passthrough:
		return StatusNotQueueing
	case s.Waiting > 0, s.Active >= set.TotalActiveUsers, s.AdmittedThisMinute >= set.NewUsersPerMinute:
		return StatusQueueing
	}
	return StatusNotQueueing
}

// Histogram is a running histogram of durations, in the form Prometheus
// histograms take.
type Histogram struct {
	// Bounds are the buckets' upper bounds, in seconds, ascending.
	Bounds []float64
	// Counts are the observations at or below each bound (cumulative),
	// one per bound.
	Counts []uint64
	// Count and Sum are the number of observations and their sum, in seconds.
	Count uint64
	Sum   float64
}

// Observed are the waits and session lengths this instance's syncs
// observed since New, for metrics (Stats.Observed): summed over the instances sharing a
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
		if s.At.UnixMilli() >= from {
			out = append(out, s)
		}
	}
	return out
}

// history is a ring of samples, at most one per historyInterval of the
// room's clock (the latest sync in it), over historyWindow. It is safe for
// concurrent use.
type history struct {
	mu    sync.Mutex
	ring  []Sample
	start int // index of the oldest sample
	n     int
}

func (h *history) last() *Sample { return &h.ring[(h.start+h.n-1)%len(h.ring)] }

// observe records s unless it is no newer than the latest sample. A sample
// in the same interval as the latest replaces it. A clock that went back
// more than the window starts the history anew.
func (h *history) observe(s Sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	at, iv, window := s.At.UnixMilli(), historyInterval.Milliseconds(), historyWindow.Milliseconds()
	if h.n > 0 {
		last := h.last()
		switch lastAt := last.At.UnixMilli(); {
		case at < lastAt-window:
			h.start, h.n = 0, 0
		case at <= lastAt:
			return
		case floorDiv(at, iv) == floorDiv(lastAt, iv):
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
	for h.n > 0 && h.ring[h.start].At.UnixMilli() < at-window {
		h.start = (h.start + 1) % len(h.ring)
		h.n--
	}
}

// samples returns the samples, oldest first.
func (h *history) samples() []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Sample, h.n)
	for i := range out {
		out[i] = h.ring[(h.start+i)%len(h.ring)]
	}
	return out
}

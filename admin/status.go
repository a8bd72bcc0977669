package admin

import (
	"math"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/hook"
	"github.com/go-waitingroom/waitingroom/lottery"
)

// adminStatus is the body of GET /status.
type adminStatus struct {
	Room               string                 `json:"room"`
	Status             waitingroom.RoomStatus `json:"status"`
	Active             int                    `json:"active"`
	Waiting            int                    `json:"waiting"`
	AdmittedThisMinute int                    `json:"admittedThisMinute"`
	OutflowPerMinute   float64                `json:"outflowPerMinute"`
	EstimatedWait      adminEstimate          `json:"estimatedWait"`
	Queue              []adminBucket          `json:"queue"`
	Settings           waitingroom.Settings   `json:"settings"`
	InForce            adminInForce           `json:"inForce"`
	Instances          int                    `json:"instances"`
	LastSync           *time.Time             `json:"lastSync"`
	NextEvent          *adminEvent            `json:"nextEvent"`
	Lottery            adminLottery           `json:"lottery"`
	Counters           waitingroom.Counters   `json:"counters"`
}

// adminInForce are the limits and method that govern visitors now: the
// settings', or an event's in force where it overrides them.
type adminInForce struct {
	QueueingMethod    waitingroom.QueueingMethod `json:"queueingMethod"`
	TotalActiveUsers  int                        `json:"totalActiveUsers"`
	NewUsersPerMinute int                        `json:"newUsersPerMinute"`
}

// adminEstimate is the wait of a visitor arriving now, in whole seconds
// (multiples of 60); null where unknown or not applicable.
type adminEstimate struct {
	Known bool `json:"known"`
	// Full: longer than a day.
	Full bool `json:"full"`
	// WaitSeconds: FIFO, the wait of a visitor arriving now, who is behind
	// everyone (so the longest); random, the median.
	WaitSeconds *int64 `json:"waitSeconds"`
	// P25Seconds, P50Seconds, P75Seconds: random only.
	P25Seconds *int64 `json:"p25Seconds"`
	P50Seconds *int64 `json:"p50Seconds"`
	P75Seconds *int64 `json:"p75Seconds"`
	// Formatted as the waiting page shows it; "" when unknown.
	Formatted string `json:"formatted"`
}

// adminEvent is the scheduled event in force (pre-queue included) or, when
// none is, the next one to open.
type adminEvent struct {
	Name string `json:"name"`
	// Description is the operators' note on the event.
	Description   string     `json:"description"`
	PrequeueStart *time.Time `json:"prequeueStart"`
	Start         time.Time  `json:"start"`
	End           time.Time  `json:"end"`
	// InProgress: the event governs the room now (Prequeueing: its
	// pre-queue).
	InProgress  bool `json:"inProgress"`
	Prequeueing bool `json:"prequeueing"`
	// ShuffleAtStart and the overrides; zero values inherit the room's.
	ShuffleAtStart    bool                       `json:"shuffleAtStart"`
	TotalActiveUsers  int                        `json:"totalActiveUsers,omitempty"`
	NewUsersPerMinute int                        `json:"newUsersPerMinute,omitempty"`
	QueueingMethod    waitingroom.QueueingMethod `json:"queueingMethod,omitempty"`
}

// adminBucket is the visitors waiting in one minute of arrival.
type adminBucket struct {
	Minute  time.Time `json:"minute"`
	Waiting int       `json:"waiting"`
}

// adminLottery is what the status shows of the room's lottery (package
// lottery, docs/lottery.md), as of the latest sync: the commitments of
// the hour in progress and of the next, with the odds of the intervals
// drawn in so far, and the latest period revealed: its seed and odds, the
// record the verifier reads. Each is null when there is none.
type adminLottery struct {
	Current  *lottery.Record `json:"current"`
	Next     *lottery.Record `json:"next"`
	Revealed *lottery.Record `json:"revealed"`
}

// lotteryAt sorts the room's lottery periods rs (oldest first) out at t.
func lotteryAt(rs []lottery.Record, t time.Time) adminLottery {
	var out adminLottery
	now := t.Unix()
	for i := range rs {
		r := &rs[i]
		switch {
		case !r.Seed.IsZero():
			out.Revealed = r
		case r.Start <= now && now < r.End:
			out.Current = r
		case r.Start > now && out.Next == nil:
			out.Next = r
		}
	}
	return out
}

// status is the body of GET /status, from the room's Stats and
// Counters.
func (a *admin) status() adminStatus {
	s := a.rm.Stats()
	out := adminStatus{
		Room:               a.rm.Name(),
		Status:             s.Status,
		Active:             s.Active,
		Waiting:            s.Waiting,
		AdmittedThisMinute: s.AdmittedThisMinute,
		OutflowPerMinute:   math.Round(finite(s.OutflowPerMinute)*100) / 100,
		EstimatedWait:      estimateJSON(s.Estimate, s.InForce.QueueingMethod == waitingroom.Random),
		Queue:              make([]adminBucket, 0, len(s.Buckets)),
		Settings:           s.Settings,
		InForce:            adminInForce{s.InForce.QueueingMethod, s.InForce.TotalActiveUsers, s.InForce.NewUsersPerMinute},
		Instances:          s.Instances,
	}
	for _, b := range s.Buckets {
		out.Queue = append(out.Queue, adminBucket{Minute: b.Bucket.UTC(), Waiting: b.Waiting})
	}
	if !s.Synced.IsZero() {
		t := s.Synced.UTC()
		out.LastSync = &t
	}
	switch cur, pre, next := eventsAt(s.Settings.Events, s.Synced); {
	case cur != nil:
		out.NextEvent = eventJSON(cur, true, pre)
	case next != nil:
		out.NextEvent = eventJSON(next, false, false)
	}
	out.Lottery = lotteryAt(hook.Lottery(a.rm), s.Synced)
	out.Counters = a.rm.Stats().Counters
	return out
}

// estimateJSON is the estimate e in whole seconds; its quartiles for the
// random method only.
func estimateJSON(e waitingroom.Estimate, random bool) adminEstimate {
	out := adminEstimate{Known: e.Known, Full: e.Full, Formatted: e.Formatted("")}
	if !e.Known {
		return out
	}
	secs := func(d time.Duration) *int64 { n := int64(d / time.Second); return &n }
	out.WaitSeconds = secs(e.Wait)
	if random {
		out.P25Seconds, out.P50Seconds, out.P75Seconds = secs(e.P25), secs(e.P50), secs(e.P75)
	}
	return out
}

// eventJSON is event e, in force (inProgress, prequeueing: in its
// pre-queue) or to come.
func eventJSON(e *waitingroom.Event, inProgress, prequeueing bool) *adminEvent {
	out := &adminEvent{
		Name:              e.Name,
		Description:       e.Description,
		Start:             e.Start.UTC(),
		End:               e.End.UTC(),
		InProgress:        inProgress,
		Prequeueing:       prequeueing,
		ShuffleAtStart:    e.ShuffleAtStart,
		TotalActiveUsers:  e.TotalActiveUsers,
		NewUsersPerMinute: e.NewUsersPerMinute,
		QueueingMethod:    e.QueueingMethod,
	}
	if !e.PrequeueStart.IsZero() {
		t := e.PrequeueStart.UTC()
		out.PrequeueStart = &t
	}
	return out
}

// eventsAt returns the event in force at t (its pre-queue included) and
// whether it is in its pre-queue, else the next event to open after t.
// Suspended events are passed over: they do not apply. events are sorted
// and do not overlap (Settings.validate). A zero t finds nothing.
func eventsAt(events []waitingroom.Event, t time.Time) (current *waitingroom.Event, prequeue bool, next *waitingroom.Event) {
	if t.IsZero() {
		return nil, false, nil
	}
	for i := range events {
		e := &events[i]
		if e.Suspended {
			continue
		}
		opens := e.Start
		if !e.PrequeueStart.IsZero() {
			opens = e.PrequeueStart
		}
		switch {
		case t.Before(opens):
			return nil, false, e
		case t.Before(e.End):
			return e, t.Before(e.Start), nil
		}
	}
	return nil, false, nil
}

// finite is f, or 0 for NaN and infinities, which JSON cannot carry.
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// adminHistory is the body of GET /history.
type adminHistory struct {
	// Now is the room's clock.
	Now             time.Time `json:"now"`
	IntervalSeconds int       `json:"intervalSeconds"`
	WindowSeconds   int       `json:"windowSeconds"`
	// Samples, oldest first: the room's figures at most once every
	// IntervalSeconds (the latest sync in each interval), over the last
	// WindowSeconds.
	Samples []historySample `json:"samples"`
	// AdmittedPerMinute: admissions in each minute of the last hour that
	// had any, oldest first, the current minute included.
	AdmittedPerMinute []minuteAdmissions `json:"admittedPerMinute"`
}

// historySample is the room's figures at one sync of GET /history.
type historySample struct {
	T                  time.Time `json:"t"`
	Active             int       `json:"active"`
	Waiting            int       `json:"waiting"`
	AdmittedThisMinute int       `json:"admittedThisMinute"`
	OutflowPerMinute   float64   `json:"outflowPerMinute"`
}

// minuteAdmissions is the admissions of one minute.
type minuteAdmissions struct {
	Minute   time.Time `json:"minute"`
	Admitted int64     `json:"admitted"`
}

// history is the body of GET /history, from the room's History and
// Stats.
func (a *admin) history() adminHistory {
	st := a.rm.Stats()
	out := adminHistory{
		Now:               st.Now.UTC(),
		IntervalSeconds:   int(historyInterval / time.Second),
		WindowSeconds:     int(historyWindow / time.Second),
		Samples:           []historySample{},
		AdmittedPerMinute: []minuteAdmissions{},
	}
	for _, s := range a.rm.History() {
		out.Samples = append(out.Samples, historySample{
			T:                  s.At.UTC(),
			Active:             s.Active,
			Waiting:            s.Waiting,
			AdmittedThisMinute: s.AdmittedThisMinute,
			OutflowPerMinute:   math.Round(s.OutflowPerMinute*100) / 100,
		})
	}
	from := st.Now.Add(-historyWindow).Truncate(time.Minute)
	for _, c := range st.AdmittedByMinute {
		if !c.Minute.Before(from) && c.Admitted > 0 {
			out.AdmittedPerMinute = append(out.AdmittedPerMinute, minuteAdmissions{Minute: c.Minute.UTC(), Admitted: int64(c.Admitted)})
		}
	}
	return out
}

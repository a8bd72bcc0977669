// Package metrics exports the figures of waiting rooms to Prometheus.
//
// It is a module of its own, so that the waitingroom library does not
// depend on the Prometheus client. Register one Collector for the rooms of
// a process and serve the registry as usual:
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(metrics.NewCollector(room))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Every metric has the label room (Config.Name). Two kinds of figures are
// exported:
//
//   - Room-wide gauges (waitingroom_active_visitors, ..._waiting_visitors,
//     and the rest) describe the whole room, all instances together, as of
//     this instance's latest sync (Room.Stats). Every instance reports the
//     same values: aggregate them across instances with max, never sum.
//   - Counters (waitingroom_admitted_total, ..._sync_errors_total, and the
//     rest) count what this instance did since it started (Stats.Counters):
//     sum their rates across instances.
//   - Histograms of what visitors went through (Stats.Observed):
//     waitingroom_wait_seconds, the waits of admitted visitors (from their
//     arrival, known to the minute and taken at its middle, to their
//     admission), and waitingroom_session_seconds, the lengths of ended
//     sessions (from the admission to the latest request, counted once
//     the room forgets the session: a session duration and up to the
//     queue hold after it). Each is counted once, on one instance (the one
//     whose sync brought the admission, or dropped the session): sum them
//     across instances, e.g.
//     histogram_quantile(0.9, sum by (le) (rate(waitingroom_wait_seconds_bucket[5m]))).
//
// Collecting does no I/O: it reads what the rooms already hold.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/go-waitingroom/waitingroom"
)

// room is what the collector reads from a waitingroom.Room.
type room interface {
	Name() string
	Stats() waitingroom.Stats
}

var _ room = (*waitingroom.Room)(nil)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("waitingroom_"+name, help, append([]string{"room"}, labels...), nil)
}

// The metrics. Room-wide gauges first, then this instance's counters.
var (
	activeDesc = desc("active_visitors",
		"Admitted visitors whose session is alive, in the whole room.")
	waitingDesc = desc("waiting_visitors",
		"Visitors waiting and refreshing, in the whole room.")
	admittedMinuteDesc = desc("admitted_this_minute",
		"Visitors let in during the current minute, in the whole room.")
	outflowDesc = desc("outflow_per_minute",
		"Recent admission rate of the whole room, in visitors per minute.")
	estimateKnownDesc = desc("estimate_known",
		"1 when a wait estimate exists (something is flowing), else 0.")
	waitDesc = desc("estimated_wait_seconds",
		"Wait of a visitor arriving now: FIFO, behind everyone waiting; random, the median. Absent when unknown.")
	percentileDesc = desc("estimated_wait_percentile_seconds",
		"Random queueing: the wait within which a visitor arriving now gets in with the probability given by percentile. Absent when unknown or FIFO.",
		"percentile")
	instancesDesc = desc("instances",
		"Instances sharing the room.")
	statusDesc = desc("status",
		"1 for the room's current status (queueing, not_queueing, event_prequeueing, suspended), 0 for the others.",
		"status")
	methodDesc = desc("queueing_method",
		"1 for the queueing method in force (fifo, random, passthrough, reject: an event's while it overrides the room's), 0 for the others.",
		"method")
	queueAllDesc = desc("queue_all",
		"1 when QueueAll is set: every visitor without a session waits.")
	totalLimitDesc = desc("total_active_users_limit",
		"The TotalActiveUsers in force (an event's while it overrides the room's): most visitors active at once.")
	rateLimitDesc = desc("new_users_per_minute_limit",
		"The NewUsersPerMinute in force (an event's while it overrides the room's): most visitors let in per minute.")
	lastSyncDesc = desc("last_sync_timestamp_seconds",
		"Unix time of this instance's latest successful sync. Absent before the first one.")

	admittedDesc = desc("admitted_total",
		"Visitors this instance let in.")
	queuedDesc = desc("queued_total",
		"Visitors this instance put in the queue.")
	revokedDesc = desc("revoked_total",
		"Sessions the application ended through this instance (Revoke or the command header).")
	bypassedDesc = desc("bypassed_total",
		"Requests a bypass rule let through this instance.")
	challengesDesc = desc("challenges_total",
		"Challenges through this instance by outcome: issued (one per place in the queue), passed, failed (came back without a valid answer), parked (failed into the infinite queue), unverified (a hosted answer its provider gave no verdict on: asked again at the next chance), deferred (a hosted answer left for the next request: too many verifications in flight).", "outcome")
	syncsDesc = desc("syncs_total",
		"Syncs of this instance with the store, failed ones included.")
	syncErrorsDesc = desc("sync_errors_total",
		"Syncs of this instance with the store that failed.")
	waitHistDesc = desc("wait_seconds",
		"Waits of the visitors let in, from their arrival to their admission, in seconds, as this instance's syncs observed them.")
	sessionHistDesc = desc("session_seconds",
		"Lengths of the sessions that ended, from the admission to the latest request, in seconds, as this instance's syncs observed them.")
	syncDurationDesc = desc("last_sync_duration_seconds",
		"How long this instance's latest sync with the store took.")
)

var allDescs = []*prometheus.Desc{
	activeDesc, waitingDesc, admittedMinuteDesc, outflowDesc, estimateKnownDesc, waitDesc, percentileDesc,
	instancesDesc, statusDesc, methodDesc, queueAllDesc, totalLimitDesc, rateLimitDesc, lastSyncDesc,
	admittedDesc, queuedDesc, revokedDesc, bypassedDesc, challengesDesc, syncsDesc, syncErrorsDesc, syncDurationDesc,
	waitHistDesc, sessionHistDesc,
}

var (
	statuses = []waitingroom.RoomStatus{
		waitingroom.StatusQueueing, waitingroom.StatusNotQueueing,
		waitingroom.StatusEventPrequeueing, waitingroom.StatusSuspended,
	}
	methods = []waitingroom.QueueingMethod{waitingroom.FIFO, waitingroom.Random, waitingroom.Passthrough, waitingroom.Reject}
)

type collector struct {
	rooms []room
}

// NewCollector returns a Prometheus collector of the figures of rooms (see
// the package documentation for the metrics). Nil rooms are skipped. The
// rooms must have distinct names, or the registry's Gather reports
// duplicate metrics. A room that is closed keeps reporting its last
// figures; build a new collector to drop it. The collector is safe for
// concurrent use, as the Prometheus client requires.
func NewCollector(rooms ...*waitingroom.Room) prometheus.Collector {
	c := &collector{}
	for _, r := range rooms {
		if r != nil {
			c.rooms = append(c.rooms, r)
		}
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.rooms {
		collectRoom(ch, r)
	}
}

func collectRoom(ch chan<- prometheus.Metric, r room) {
	name := r.Name()
	s := r.Stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{name}, labels...)...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{name}, labels...)...)
	}

	gauge(activeDesc, float64(s.Active))
	gauge(waitingDesc, float64(s.Waiting))
	gauge(admittedMinuteDesc, float64(s.AdmittedThisMinute))
	gauge(outflowDesc, s.OutflowPerMinute)
	gauge(estimateKnownDesc, bool01(s.Estimate.Known))
	if e := s.Estimate; e.Known {
		gauge(waitDesc, e.Wait.Seconds())
		if s.Settings.QueueingMethod == waitingroom.Random {
			gauge(percentileDesc, e.P25.Seconds(), "25")
			gauge(percentileDesc, e.P50.Seconds(), "50")
			gauge(percentileDesc, e.P75.Seconds(), "75")
		}
	}
	gauge(instancesDesc, float64(s.Instances))
	status := s.Status
	for _, st := range statuses {
		gauge(statusDesc, bool01(st == status), string(st))
	}
	for _, m := range methods {
		gauge(methodDesc, bool01(m == s.InForce.QueueingMethod), string(m))
	}
	gauge(queueAllDesc, bool01(s.Settings.QueueAll))
	gauge(totalLimitDesc, float64(s.InForce.TotalActiveUsers))
	gauge(rateLimitDesc, float64(s.InForce.NewUsersPerMinute))
	if !s.Synced.IsZero() {
		gauge(lastSyncDesc, float64(s.Synced.UnixNano())/float64(time.Second))
	}

	k := s.Counters
	counter(admittedDesc, k.Admitted)
	counter(queuedDesc, k.Queued)
	counter(revokedDesc, k.Revoked)
	counter(bypassedDesc, k.Bypassed)
	for _, c := range []struct {
		outcome string
		n       uint64
	}{{"issued", k.ChallengesIssued}, {"passed", k.ChallengesPassed}, {"failed", k.ChallengesFailed}, {"parked", k.ChallengesParked},
		{"unverified", k.ChallengesUnverified}, {"deferred", k.ChallengesDeferred}} {
		counter(challengesDesc, c.n, c.outcome)
	}
	counter(syncsDesc, k.Syncs)
	counter(syncErrorsDesc, k.SyncErrors)
	gauge(syncDurationDesc, k.LastSyncSeconds)

	o := s.Observed
	histogram(ch, waitHistDesc, o.Waits, r.Name())
	histogram(ch, sessionHistDesc, o.Sessions, r.Name())
}

func histogram(ch chan<- prometheus.Metric, d *prometheus.Desc, h waitingroom.Histogram, name string) {
	buckets := make(map[float64]uint64, len(h.Bounds))
	for i, b := range h.Bounds {
		buckets[b] = h.Counts[i]
	}
	ch <- prometheus.MustNewConstHistogram(d, h.Count, h.Sum, buckets, name)
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

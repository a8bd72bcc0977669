package sim

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store"
)

// Arrival is the shape of the visitors' arrival schedule.
type Arrival int

// Arrival patterns. The zero value is Uniform.
const (
	// Uniform spreads the visitors evenly over Options.Arrivals, each one
	// at a random instant within its share of the span.
	Uniform Arrival = iota
	// AllAtOnce brings every visitor within the first second.
	AllAtOnce
	// Spike brings Options.SpikeShare of the visitors within the first
	// Options.SpikeSpan, and the others uniformly over Options.Arrivals. A
	// spike followed by a stream as fast as the room admits makes a
	// standing queue.
	Spike
)

// String returns the pattern's name.
func (a Arrival) String() string {
	switch a {
	case Uniform:
		return "uniform"
	case AllAtOnce:
		return "all-at-once"
	case Spike:
		return "spike"
	}
	return fmt.Sprintf("Arrival(%d)", int(a))
}

// Defaults of Options fields. The limits and spans are those of the
// experiment in the public write-up of the product this library
// re-implements: 10,000 visitors joining over 30 minutes, each browsing for
// about a minute once let in.
const (
	DefaultVisitors    = 10_000           // Options.Visitors
	DefaultArrivals    = 30 * time.Minute // Options.Arrivals
	DefaultBrowse      = time.Minute      // Options.Browse
	DefaultBrowseEvery = 20 * time.Second // Options.BrowseEvery
	DefaultSpamEvery   = time.Second      // Options.SpamEvery
	DefaultCloneSize   = 10               // Options.CloneSize
	DefaultSpikeShare  = 0.5              // Options.SpikeShare
	DefaultSpikeSpan   = 10 * time.Second // Options.SpikeSpan
	DefaultLatency     = time.Second      // Options.Latency
	// DefaultTotalActiveUsers and DefaultNewUsersPerMinute are the
	// experiment's limits. The write-up does not give its own; these let
	// in a little less than the 333 visitors a minute who arrive, so a
	// queue builds for the whole half hour.
	DefaultTotalActiveUsers  = 2_000
	DefaultNewUsersPerMinute = 300
	// MaxDuration bounds a run whose Options.Duration is zero: it ends
	// when every visitor is done or after this much virtual time.
	MaxDuration = 24 * time.Hour
)

// Options describes one simulated run. The zero value of every field means
// its documented default; Run does not change the caller's Options.
type Options struct {
	// Visitors is the number of virtual visitors. Default 10,000.
	Visitors int
	// Arrival is the arrival pattern. Default Uniform.
	Arrival Arrival
	// Arrivals is the span over which visitors arrive (Uniform, and the
	// stream after a Spike). Default 30 minutes.
	Arrivals time.Duration
	// SpikeShare is the share of visitors, in [0, 1], who arrive in the
	// burst of a Spike. Default 0.5.
	SpikeShare float64
	// SpikeSpan is how long the burst of a Spike lasts. Default 10
	// seconds.
	SpikeSpan time.Duration

	// Browse is how long an admitted visitor keeps browsing before they
	// leave; negative means they leave right after being let in. Default
	// 1 minute.
	Browse time.Duration
	// BrowseEvery is the time between a browsing visitor's requests, at
	// least 1 second. Default 20 seconds.
	BrowseEvery time.Duration

	// Abandon is the probability, in [0, 1], that a waiting visitor gives
	// up at each check-in that leaves them waiting (their first request
	// and every refresh the room counts as a new chance). One who gives up
	// never comes back. Replayers and cloner groups never give up.
	// Default 0.
	Abandon float64
	// Spammers is the share of visitors, in [0, 1], who ignore the
	// refresh interval and request the page again every SpamEvery while
	// they wait. Default 0.
	Spammers float64
	// SpamEvery is how often spammers, replayers and spamming cloners
	// (CloneSpam) send a request, at least 1 second. Default 1 second.
	SpamEvery time.Duration

	// Replayers is the share of visitors, in [0, 1], who keep the first
	// waiting cookie the room gave them and send that same cookie every
	// SpamEvery, ignoring every cookie the room sets afterwards, until
	// they are let in; then they browse like anyone with the cookie that
	// let them in (but see ReplayAfterAdmission). A replayer let in at its
	// first request never had a waiting cookie and browses like anyone.
	// Replayers never give up. Spammers + Replayers + Cloners is at most
	// 1. Default 0.
	Replayers float64
	// ReplayAfterAdmission makes replayers go on replaying their first
	// waiting cookie once let in, every SpamEvery for ReplayFor after
	// their first admission, instead of browsing; then they leave. The
	// admitted cookies the room sets them are left unused, each counted
	// as an active session until SessionDuration after it was set. Every
	// replay the room lets through is another admission
	// (Visitor.Admissions). Default false.
	ReplayAfterAdmission bool
	// Cloners is the share of visitors, in [0, 1], who are cloner groups:
	// CloneSize clients sharing one cookie. One client of the group
	// arrives; when the room gives it a waiting cookie, it copies that
	// cookie to the group's other clients. Each client then keeps the
	// cookies the room sets it, like a browser, and sends a request when
	// its page asks (every SpamEvery with CloneSpam) until it is let in;
	// a client let in browses like anyone. The clients' phases are
	// staggered: the first comes back a step after its waiting page (the
	// page's refresh interval, or SpamEvery with CloneSpam), and the j-th
	// of the others j/CloneSize of a step after it. Once a client of the
	// group is let in, those still waiting keep trying for ReplayFor, then
	// leave. A group is one visitor in the Result: it arrives with its
	// first client, is let in when the first of its clients is, and every
	// admission of any of its clients counts toward its
	// Visitor.Admissions. A group let in at its first request never
	// shares a cookie. Cloner groups never give up waiting. Default 0.
	Cloners float64
	// CloneSize is the number of clients in a cloner group, the one who
	// arrives included: from 2 to 1,000. Default 10.
	CloneSize int
	// CloneSpam makes the clients of cloner groups send a request every
	// SpamEvery while they wait, as spammers do, instead of when their
	// page asks. Default false.
	CloneSpam bool
	// ReplayFor is how long, after a replayer or a cloner group is first
	// let in, its clients still sending a waiting cookie keep at it:
	// replayers with ReplayAfterAdmission, and the clients of a group not
	// let in themselves. Negative means not at all: they leave at their
	// next request. Default the session duration (SessionDuration, or the
	// room's once Configure has run).
	ReplayFor time.Duration

	// BotsPerMinute is the number of bot identities (Kind Bot) arriving
	// each minute over Arrivals (uniformly), on top of Visitors: each a
	// fresh cookie that comes back when its page asks. Default 0.
	BotsPerMinute int
	// BotsSolve makes bots answer the room's challenge
	// (Config.Challenge, set with Configure): they solve each proof of
	// work a page gives them. Otherwise they never answer. Every other
	// visitor always answers, as a browser running the page's script
	// does. Default false.
	BotsSolve bool
	// BotGiveUp is how long a bot waits before it leaves. Default 30
	// minutes.
	BotGiveUp time.Duration

	// Latency bounds the random delay, drawn for each request after the
	// first, between the instant a visitor means to send it (the refresh
	// interval, a browsing or spamming step after the previous response)
	// and the instant it reaches the room: page loads and the network. It
	// keeps visitors from checking in in lockstep with the syncs, as real
	// browsers do. Default 1 second; negative means none.
	Latency time.Duration

	// Instances is the number of Rooms sharing one store; every request
	// goes to one of them at random. Default 1.
	Instances int
	// Store is the store the instances share. Default a new memstore,
	// closed at the end of the run. A Store passed here is left open; it
	// should hold no state for Name yet (a stale queue would join the
	// run).
	Store store.Store
	// SyncInterval is the time between syncs: every instance syncs with
	// the store at the same instants, every SyncInterval ± 10 % (the rooms'
	// own loop is off; the simulator calls Room.Sync on its clock). Up to
	// 2 seconds. Default 1 second, the rooms' default.
	SyncInterval time.Duration
	// Name is the room's name. Default "sim".
	Name string

	// Method is the queueing method: FIFO or Random (Passthrough and
	// Reject work too). Default waitingroom.FIFO.
	Method waitingroom.QueueingMethod
	// TotalActiveUsers is the room's limit on active visitors. Default
	// 2,000.
	TotalActiveUsers int
	// NewUsersPerMinute is the room's limit on admissions per minute.
	// Default 300.
	NewUsersPerMinute int
	// SessionDuration is the room's session duration. Default the room's
	// (5 minutes).
	SessionDuration time.Duration
	// RefreshInterval is the room's refresh interval. Default the room's
	// (20 seconds).
	RefreshInterval time.Duration
	// Configure, if set, changes each instance's Config before New, for
	// fields Options has none for (QueueHold, RefreshJitter, a template...).
	// Run then sets Now, Random and SyncInterval (the virtual clock, seeded
	// jitter and manual syncs), and Keys and Logger when Configure left
	// them empty. Default nil.
	Configure func(*waitingroom.Config)

	// Seed seeds every random choice of the run: arrivals, who spams,
	// replays or clones, instance choice, abandonment, ordering within an
	// instant and the rooms' refresh jitter. Runs with equal Options and
	// Seed give equal Results. Default 0, a seed like any other.
	Seed uint64
	// Start is the virtual time of the run's beginning; it is truncated
	// to the minute. Default 2026-01-01 00:00 UTC.
	Start time.Time
	// Duration is how much virtual time the run covers. Default: until
	// every visitor has been let in and has left, has given up or was
	// turned away, and at most MaxDuration.
	Duration time.Duration

	// Path is the path every visitor requests. Default "/".
	Path string

	// CohortAt is when the cohort is taken: the visitors waiting at that
	// instant, whose order of admission after it is compared with their
	// order of arrival (Result.CohortTau, Result.ChiSquare). Default half
	// of Arrivals, and at least 1 minute.
	CohortAt time.Duration
	// MeasureFrom and MeasureUntil bound, by arrival time, the visitors
	// whose estimates are judged (Result.EstimateError and
	// Result.Calibration). Default: every visitor.
	MeasureFrom, MeasureUntil time.Duration
	// FirstEstimateOnly keeps only each visitor's first known estimate
	// (Visitor.FirstEstimate), not the list of every estimate they were
	// shown (Visitor.Estimates), to save memory in very large runs.
	// Default false.
	FirstEstimateOnly bool

	// Logger receives the rooms' logs. Default: discarded.
	Logger *slog.Logger
}

// Experiment returns the Options of the experiment in the public write-up
// of the product this library re-implements: 10,000 visitors joining
// uniformly over 30 minutes, each browsing for about a minute once let in,
// queued by method. They are the defaults, spelled out; the limits are this
// package's choice (see DefaultNewUsersPerMinute).
func Experiment(method waitingroom.QueueingMethod) Options {
	return Options{
		Visitors:          DefaultVisitors,
		Arrival:           Uniform,
		Arrivals:          DefaultArrivals,
		Browse:            DefaultBrowse,
		BrowseEvery:       DefaultBrowseEvery,
		Method:            method,
		TotalActiveUsers:  DefaultTotalActiveUsers,
		NewUsersPerMinute: DefaultNewUsersPerMinute,
	}
}

var defaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// normalize fills in defaults and checks o. It works on a copy.
func (o Options) normalize() (Options, error) {
	o.fillCrowd()
	o.fillRoom()
	o.fillRun()
	for _, check := range []func() error{o.checkCrowd, o.checkDishonest, o.checkRun} {
		if err := check(); err != nil {
			return o, err
		}
	}
	return o, nil
}

// invalid returns the error of Options that cannot work.
func invalid(format string, a ...any) error {
	return fmt.Errorf("sim: invalid options: "+format, a...)
}

// fillCrowd fills in the defaults of the visitors: how many, when they
// arrive, how they browse, spam and clone, their latency and the bots'
// patience.
func (o *Options) fillCrowd() {
	if o.Visitors == 0 {
		o.Visitors = DefaultVisitors
	}
	if o.Arrivals == 0 {
		o.Arrivals = DefaultArrivals
	}
	if o.SpikeShare == 0 {
		o.SpikeShare = DefaultSpikeShare
	}
	if o.SpikeSpan == 0 {
		o.SpikeSpan = DefaultSpikeSpan
	}
	if o.Browse == 0 {
		o.Browse = DefaultBrowse
	}
	if o.BrowseEvery == 0 {
		o.BrowseEvery = DefaultBrowseEvery
	}
	if o.SpamEvery == 0 {
		o.SpamEvery = DefaultSpamEvery
	}
	if o.CloneSize == 0 {
		o.CloneSize = DefaultCloneSize
	}
	if o.Latency == 0 {
		o.Latency = DefaultLatency
	}
	if o.BotGiveUp == 0 {
		o.BotGiveUp = 30 * time.Minute
	}
}

// fillRoom fills in the defaults of the rooms: how many instances, how
// often they sync, the room's name, method and limits.
func (o *Options) fillRoom() {
	if o.SyncInterval == 0 {
		o.SyncInterval = time.Second
	}
	if o.Instances == 0 {
		o.Instances = 1
	}
	if o.Name == "" {
		o.Name = "sim"
	}
	if o.Method == "" {
		o.Method = waitingroom.FIFO
	}
	if o.TotalActiveUsers == 0 {
		o.TotalActiveUsers = DefaultTotalActiveUsers
	}
	if o.NewUsersPerMinute == 0 {
		o.NewUsersPerMinute = DefaultNewUsersPerMinute
	}
	if o.SessionDuration == 0 {
		o.SessionDuration = 5 * time.Minute
	}
	if o.RefreshInterval == 0 {
		o.RefreshInterval = 20 * time.Second
	}
}

// fillRun fills in the defaults of the run: its start (truncated to the
// minute), the cohort's instant and the logger.
func (o *Options) fillRun() {
	if o.Start.IsZero() {
		o.Start = defaultStart
	}
	o.Start = o.Start.Truncate(time.Minute)
	if o.CohortAt == 0 {
		o.CohortAt = max(o.Arrivals/2, time.Minute)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// checkCrowd checks the visitors: their number, their arrival, their
// requests' pace and their giving up.
func (o Options) checkCrowd() error {
	switch {
	case o.Visitors < 0 || o.Visitors > 1<<31-1:
		return invalid("Visitors %d out of range", o.Visitors)
	case o.Arrival < Uniform || o.Arrival > Spike:
		return invalid("unknown Arrival %d", o.Arrival)
	case o.Arrivals < 0:
		return invalid("Arrivals %v is negative", o.Arrivals)
	case o.SpikeShare < 0 || o.SpikeShare > 1:
		return invalid("SpikeShare %v is not in [0, 1]", o.SpikeShare)
	case o.SpikeSpan < 0:
		return invalid("SpikeSpan %v is negative", o.SpikeSpan)
	case o.BrowseEvery < time.Second:
		return invalid("BrowseEvery %v is under a second", o.BrowseEvery)
	case o.SpamEvery < time.Second:
		return invalid("SpamEvery %v is under a second", o.SpamEvery)
	case o.Abandon < 0 || o.Abandon > 1:
		return invalid("Abandon %v is not in [0, 1]", o.Abandon)
	}
	return nil
}

// checkDishonest checks the shares of dishonest visitors, the cloner
// groups and the bots.
func (o Options) checkDishonest() error {
	switch {
	case o.Spammers < 0 || o.Spammers > 1:
		return invalid("Spammers %v is not in [0, 1]", o.Spammers)
	case o.Replayers < 0 || o.Replayers > 1:
		return invalid("Replayers %v is not in [0, 1]", o.Replayers)
	case o.Cloners < 0 || o.Cloners > 1:
		return invalid("Cloners %v is not in [0, 1]", o.Cloners)
	case o.Spammers+o.Replayers+o.Cloners > 1+1e-9:
		return invalid("Spammers + Replayers + Cloners (%v) is over 1", o.Spammers+o.Replayers+o.Cloners)
	case o.CloneSize < 2 || o.CloneSize > 1000:
		return invalid("CloneSize %d is not in [2, 1000]", o.CloneSize)
	case o.Cloners > 0 && o.Visitors*o.CloneSize > 1<<31-1:
		return invalid("Visitors %d in groups of CloneSize %d is too many clients", o.Visitors, o.CloneSize)
	case o.BotsPerMinute < 0 || o.BotsPerMinute > 1_000_000:
		return invalid("BotsPerMinute %d is not in [0, 1000000]", o.BotsPerMinute)
	case o.BotGiveUp < 0:
		return invalid("BotGiveUp %v is negative", o.BotGiveUp)
	}
	return nil
}

// checkRun checks the instances, their syncs and the run's duration.
func (o Options) checkRun() error {
	switch {
	case o.Instances < 0 || o.Instances > 1024:
		return invalid("Instances %d is not in [1, 1024]", o.Instances)
	case o.SyncInterval < 10*time.Millisecond || o.SyncInterval > 2*time.Second:
		return invalid("SyncInterval %v is not in [10ms, 2s]", o.SyncInterval)
	case o.Duration < 0:
		return invalid("Duration %v is negative", o.Duration)
	case o.Duration > MaxDuration:
		return invalid("Duration %v is over %v", o.Duration, MaxDuration)
	}
	return nil
}

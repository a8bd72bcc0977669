package share

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store"
)

// Config is what a Syncer needs of its room and instance.
type Config struct {
	// Name is the room's name: the key of its shared state in Store (and
	// the prefix of the fleet's keys).
	Name string
	// ID is this instance's, unique among the room's instances.
	ID string
	// Store holds the shared state. A store.Reader is used to read the
	// fleet's view without a lock; a store.HistoryStore gets the kept
	// history's minutes.
	Store store.Store
	// Log gets the sync's log lines (outages, losses, the fleet's lease).
	Log *slog.Logger
	// Clock is this instance's clock, Unix ms.
	Clock func() int64
	// SyncInterval is how often the background loop syncs (Start); not
	// positive: the caller syncs, and Start starts no loop.
	SyncInterval time.Duration
	// WaitWindow is how long, in ms, a waiting visitor stays counted after
	// a check-in.
	WaitWindow int64
	// FleetMin is the fewest live instances that sync through an
	// aggregator; 0 means FleetMin.
	FleetMin int
	// OutageEffect ends the log line of an outage: what visitors get
	// while it lasts.
	OutageEffect string
	// Closed is the error Sync, Update and Ready return once the Syncer is
	// closing.
	Closed error
	// Seed draws the lottery's seeds (keepSeeds), from the sync; nil:
	// lottery.NewSeed.
	Seed func() lottery.Seed
}

// Host is what the sync asks of the room it syncs: the room's settings,
// which the algorithm does not know, and what the room learns from each
// view. Its functions are called from the sync, never from a request, and
// never with Local's lock held.
type Host[S any] struct {
	// Settle returns the live settings in st and the rules they mean at
	// now (shared-clock ms). It writes settings into st (with their
	// SettingsVersion, and whatever else says which Config wrote them)
	// when st holds none the room can use: the room's own when st is new
	// or another Config wrote them, restore (non-nil: the settings this
	// instance last knew) when st is new because the state it knew was
	// lost.
	Settle func(st *store.State, now int64, restore *S) (S, Rules)
	// Installed is called after each sync that installs a new snapshot
	// (new), before requests see it, with the one it replaces (old): the
	// room learns the revokes, turns its memory of visitors over, logs the
	// changes of phase and settings, samples its history.
	Installed func(old, new *Snapshot[S])
}

// FleetMin is the fewest live instances that sync through an aggregator
// by default. A smaller fleet syncs the classic way: its store keeps up
// easily, and each instance takes its grant at once rather than an
// interval after it was carved.
const FleetMin = 32

// Syncer syncs one instance of a room with the shared state: the classic
// sync and the fleet's (fleet.go), in the background every SyncInterval
// (Start) or when its caller asks (Sync). It is safe for concurrent use.
type Syncer[S any] struct {
	cfg   Config
	host  Host[S]
	local *Local
	snap  atomic.Pointer[Snapshot[S]]
	// installing serializes the installs of snapshots: a sync's (finish)
	// and Amend's and Updated's. updated counts Updated's installs;
	// updatedBefore is the count when the sync in flight began.
	installing    sync.Mutex
	updated       atomic.Uint64
	updatedBefore uint64
	// history reports that the store keeps the room's history.
	history bool
	kept    *keptHistory

	offset                  atomic.Int64 // ms to add to Clock to follow the shared clock
	epoch                   atomic.Uint64
	aggregated, aggregating atomic.Bool
	healthy                 atomic.Bool
	syncs, errors           atomic.Uint64
	nanos                   atomic.Int64
	ready                   readiness // the outcome of the latest sync, for Ready

	closed   atomic.Bool
	started  bool
	stop     chan struct{} // closed when the Syncer closes
	loopDone chan struct{} // closed when the loop returned (or never ran)
	left     chan struct{} // closed when the last sync returned
	leftErr  error         // its error
	once     sync.Once
	// wake asks the background loop for a sync before its time (Wake);
	// it holds one request.
	wake chan struct{}

	mu      sync.Mutex // serializes syncs; guards what follows
	mine    *delta     // this instance's counts over the last session
	seq     uint64     // the latest sync's sequence number
	unacked []batch    // counts of syncs not known to have been applied
	version uint64     // the state's Version the latest classic sync wrote
	applied []applied  // counts of the syncs applied lately, in case the state goes back
	carry   goneBack   // the batches resend put back into the pending reports, for the next batch to carry
	outage  bool       // the latest sync failed
	// failedAt is when (the shared clock's ms) the first failed sync of
	// the outage under way failed (othersSyncedSince).
	failedAt int64
	fleet    fleetState // the fleet protocol (fleet.go)
	// steadySince is when (local ms) this instance's syncs went through
	// again after a failure, or found a state that had gone back: 0 if
	// neither happened, -1 while its syncs fail. From a failure until an
	// instance TTL after that, a sync drops no instance as silent
	// (params.keepSilent, keepSilent): a record's age says that its
	// instance stopped only if this one could sync all along and the store
	// kept what the others wrote. After an outage, or a failover that took
	// the latest writes with it, every record is old because the store
	// was, and an instance dropped then is taken for a new one when it
	// syncs again: the batches the state lost, which its record would
	// have shown missing, are never sent again (their waiting counts,
	// which keep FIFO's order, and their admissions among them).
	steadySince int64
	// gone are the mailboxes of fleet instances to remove, by when (local
	// ms) (mailbox.go).
	gone map[string]int64
	// listed is the list of the latest shuffle as this instance's latest
	// write of it brought it back (places.go).
	listed struct {
		start  int64
		places []uint64
	}
}

// New returns the Syncer of an instance whose room starts with settings
// (the snapshot requests read until the first sync). It does no I/O and
// starts nothing: Start starts the background loop.
func New[S any](cfg Config, settings S, host Host[S]) *Syncer[S] {
	if cfg.FleetMin == 0 {
		cfg.FleetMin = FleetMin
	}
	s := &Syncer[S]{
		cfg:      cfg,
		host:     host,
		local:    newLocal(),
		kept:     newKeptHistory(cfg.Store),
		stop:     make(chan struct{}),
		loopDone: make(chan struct{}),
		left:     make(chan struct{}),
		wake:     make(chan struct{}, 1),
		mine:     newDelta(),
	}
	s.history = s.kept.store != nil
	s.snap.Store(&Snapshot[S]{Settings: settings})
	s.healthy.Store(true)
	return s
}

// Start starts the background loop, which syncs at once and then every
// SyncInterval, until Close or Shutdown; with a SyncInterval that is not
// positive, it does nothing. Call it once, after New.
func (s *Syncer[S]) Start() {
	if s.cfg.SyncInterval > 0 && !s.started {
		s.started = true
		go s.loop()
	}
}

// Local returns the instance's Local, which requests use under its lock.
func (s *Syncer[S]) Local() *Local { return s.local }

// Snapshot returns the latest snapshot, without a lock. Nobody may change
// it.
func (s *Syncer[S]) Snapshot() *Snapshot[S] { return s.snap.Load() }

// Amend installs a copy of the latest snapshot changed by fn, at once (a
// test's view).
func (s *Syncer[S]) Amend(fn func(*Snapshot[S])) {
	s.installing.Lock()
	defer s.installing.Unlock()
	nv := *s.snap.Load()
	fn(&nv)
	s.snap.Store(&nv)
}

// Updated installs, at once, the settings set that a settings transaction
// (Update) wrote as version of the shared state of epoch, unless the
// latest snapshot holds a later version already (another transaction's,
// or a sync's that read it). A sync in flight meanwhile installs these,
// not the settings it read (finish); one begun after reads the store's
// (a store that lost the write has the last word).
func (s *Syncer[S]) Updated(set S, epoch, version uint64) {
	s.installing.Lock()
	defer s.installing.Unlock()
	old := s.snap.Load()
	if old.SettingsEpoch == epoch && old.SettingsVersion >= version {
		return
	}
	nv := *old
	nv.Settings, nv.SettingsEpoch, nv.SettingsVersion = set, epoch, version
	s.snap.Store(&nv)
	s.updated.Add(1)
}

// LocalNow is this instance's clock, Unix ms.
func (s *Syncer[S]) LocalNow() int64 { return s.cfg.Clock() }

// Now is the room's time, Unix ms: this instance's clock plus the offset
// that aligns it with the shared clock (at most MaxClockLead).
func (s *Syncer[S]) Now() int64 { return s.cfg.Clock() + s.offset.Load() }

// Healthy reports whether the latest sync went through (true before the
// first): while it is false the instance admits nobody new, and no picked
// visitor either.
func (s *Syncer[S]) Healthy() bool { return s.healthy.Load() }

// Counters are a Syncer's running totals and the kind of its latest
// sync.
type Counters struct {
	// Syncs and Errors count the syncs attempted and failed (a sync its
	// caller cancelled is no failure).
	Syncs, Errors uint64
	// Last is how long the latest sync took.
	Last time.Duration
	// Aggregated reports that the latest successful sync went through the
	// fleet's aggregator; Aggregating, that this instance held the fleet's
	// lease after it.
	Aggregated, Aggregating bool
}

// Counters returns the Syncer's running totals.
func (s *Syncer[S]) Counters() Counters {
	return Counters{
		Syncs: s.syncs.Load(), Errors: s.errors.Load(), Last: time.Duration(s.nanos.Load()),
		Aggregated: s.aggregated.Load(), Aggregating: s.aggregating.Load(),
	}
}

// Status is what a Syncer knows of the shared state and the fleet, for
// diagnostics and tests.
type Status struct {
	// Epoch is the shared state's epoch at the latest sync (0 before the
	// first); Offset, the ms this instance's clock is behind the shared
	// clock.
	Epoch  uint64
	Offset int64
	// Fleet reports that the latest sync found a live lease and a fleet
	// syncing through it; Term is the lease this instance holds (0 for
	// none); Classic, that a classic sync of this instance went through.
	Fleet   bool
	Term    uint64
	Classic bool
}

// Status returns the Syncer's status. It waits for a sync in flight.
func (s *Syncer[S]) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status{Epoch: s.epoch.Load(), Offset: s.offset.Load(), Fleet: s.fleet.on, Term: s.fleet.term, Classic: s.fleet.classicVersion != 0}
}

// Wake asks the background loop to sync now rather than at its time,
// without waiting: a revoke then reaches the shared state, and through it
// the other instances, a SyncInterval sooner. The loop syncs no sooner
// than WakeGap after its previous sync began, so a burst of wakes costs at
// most ten syncs a SyncInterval; while the store fails, it keeps to its
// backoff.
func (s *Syncer[S]) Wake() {
	select {
	case s.wake <- struct{}{}:
	default: // a sync is asked for already
	}
}

// Update runs fn in one transaction of the room's shared state (fn may be
// called more than once, as the store retries): a settings transaction.
// restore is as Host.Settle has it. It returns fn's error, or the
// store's.
func (s *Syncer[S]) Update(ctx context.Context, fn func(st *store.State, restore *S) error) error {
	if s.closed.Load() {
		return s.cfg.Closed
	}
	return s.cfg.Store.Update(ctx, s.cfg.Name, func(st *store.State) error {
		return fn(st, s.open(st))
	})
}

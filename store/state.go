package store

// State is the shared state of one room. The zero State means the room has
// no state (new, expired or lost).
//
// Instants are Unix times in the unit each field documents.
// Slices are kept sorted by their keys by the code that writes them; readers
// must not rely on it for correctness.
type State struct {
	// Epoch identifies one life of the state. A room writes a fresh random
	// non-zero epoch when it finds a zero State, so every instance can tell
	// that the state it knew was lost and rebuild its share of the counters.
	Epoch uint64
	// Version counts updates of this epoch, starting at 1.
	Version uint64
	// Clock is the room's shared clock, in Unix milliseconds: the latest
	// time any instance synced at. Instances whose clock runs behind adopt
	// it, so that minute keys agree across instances despite clock skew.
	Clock int64
	// Grace is the Unix time, in milliseconds, until which no admissions
	// are granted because the state is being rebuilt after a loss (every
	// instance re-contributes its counts at its next sync).
	Grace int64
	// Settings is the room's live configuration, encoded by package
	// waitingroom. Stores keep it as opaque bytes.
	Settings []byte
	// SettingsVersion increases every time Settings changes.
	SettingsVersion uint64
	// ConfigHash identifies the Config that last initialised Settings.
	ConfigHash uint64

	// Sessions has one record per admitted visitor whose session is alive
	// or whose cookies could still be presented, sorted by ID. Active
	// visitors are the live sessions among them, so however a cookie is
	// copied or replayed its holders count once. Their number is bounded
	// by TotalActiveUsers plus the admissions of the last QueueHold or
	// session, never by the number of visitors.
	Sessions []Session
	// Admitted counts admissions by minute (Key: Unix seconds / 60).
	Admitted []Count
	// Waiting counts queued visitors by arrival bucket (Unix seconds)
	// and the check-in slot of their latest refresh.
	Waiting []Cell
	// Instances has one record per instance that synced recently.
	Instances []Instance

	// Tallies are the figures of the recent minutes not yet written to
	// the room's kept history (HistoryStore), oldest first: a minute or
	// two, whatever the traffic. Recorded is the latest minute (Unix
	// seconds / 60) written or being written; later reports about it or
	// an older one are not recorded.
	Tallies  []Tally
	Recorded int64

	// Asks are the waiting visitors asked for lately (Ask), by Visitor:
	// no instance gives one a chance before the moment they said they
	// would be back (a copy of their cookie elsewhere waits for it), and
	// a sync may pick them, until the ask lapses (docs/design.md, "Picks
	// and the reserve").
	Asks []Ask

	// Picks are the visitors picked for a slot (by a fleet's aggregator,
	// or in random by any sync). Lease and Reserve are the records of a
	// fleet that syncs through an aggregator (docs/design.md, "A fleet
	// syncing through an aggregator"): its lease and the slots it
	// reserved, nil in a room whose instances sync on their own.
	Lease   *Lease
	Picks   []Pick
	Reserve *Reserve

	// Mailbox is set in the state of an instance's mailbox, a state of
	// its own under a name derived from the room's: what the instance
	// and the aggregator exchange. Nil in a room's state.
	Mailbox *Mailbox

	// Seeds are the secrets of the room's lottery (package lottery), one
	// per period, in order of Start: the next period's, created by the
	// first sync of the period before; the current period's; and the
	// ended ones, down to the latest whose reveal time passed. They are
	// secret until then: the store holds them like the cookie keys'
	// secrets, and views of the room show only their commitments.
	Seeds []Seed

	// Places is set in the state of the list of an event's shuffle, a
	// state of its own under a name derived from the room's and the
	// shuffle's period: the places (lottery.Place, times 2^53) of the
	// visitors the instances saw in the event's pre-queue, in ascending
	// order, without identities; published with the period's record. Nil
	// in a room's state.
	Places []uint64
}

// Seed is the secret of one period of the room's lottery.
type Seed struct {
	// Start and End are the period, [Start, End) in Unix seconds.
	Start, End int64
	// Secret is the period's seed: 32 random bytes.
	Secret [32]byte
	// Interval is the length, in ms, of the refresh intervals whose odds
	// Odds holds; 0 before the first.
	Interval int64
	// Odds are the odds of the draws of the period's intervals, one
	// record per interval, in order: each fixed by the interval's first
	// sync and never changed, published with the period.
	Odds []Odds
	// Cuts are, for the shuffle of a scheduled event's pre-queue, the
	// share of it let in by each interval after the event's start (the
	// visitors whose place in the shuffle is below it), in the same form
	// as Odds: fixed by the interval's first sync, never decreasing.
	// Prequeued is the number of visitors the pre-queue held when its
	// first cut was fixed; 0 before.
	Cuts      []Odds
	Prequeued int64
}

// Odds is the chance one waiting visitor wins the lottery's draw in one
// refresh interval.
type Odds struct {
	Interval int64   // the interval's number: its first ms over its length
	Odds     float64 // in [0, 1]
}

// Lease is the record of the instance that holds a fleet's lease: the
// aggregator, which applies every instance's counts and carves their
// grants. A lease not renewed for three instance TTLs has expired.
type Lease struct {
	// Holder is the aggregator's instance ID.
	Holder string
	// Term is the state's Version when the lease was taken; a later term
	// fences every earlier holder.
	Term uint64
	// Renewed is the Unix time, in milliseconds, of the latest renewal.
	Renewed int64
	// Fleet is, in the fleet's view (the state as the aggregator
	// publishes it), the number of instances in the fleet; 0 in the
	// room's state.
	Fleet int64
}

// Pick is a waiting visitor whom a fleet's aggregator picked for a slot:
// whichever instance they reach from From to Until lets them in, from the
// slot the pick holds (one), which every limit counts until their session
// is in the state or the pick expires.
type Pick struct {
	// Visitor is the visitor's identity.
	Visitor uint64
	// Bucket is the arrival bucket (Unix seconds) they asked in.
	Bucket int64
	// From is the Unix time, in milliseconds, from which they may be let
	// in: when they said they would be back, so that copies of their
	// cookie that reach other instances sooner gain nothing.
	From int64
	// Until is the Unix time, in milliseconds, up to which they may be
	// let in.
	Until int64
}

// Reserve is what a fleet's aggregator set aside for the due visitors of
// the oldest buckets, for the fleet as a whole rather than for any one
// instance.
type Reserve struct {
	// Slots is the number of slots held, which every limit counts.
	Slots int64
	// Upto is the newest arrival bucket (Unix seconds) it covers.
	Upto int64
	// Set is the Unix time, in milliseconds, of the round that set it.
	Set int64
}

// Mailbox is what an instance of a fleet and the aggregator exchange:
// the instance leaves its numbered batches of counts and what it may
// still admit; the aggregator leaves the grant it carved for the
// instance, and which batches the state applied.
type Mailbox struct {
	// Term is the latest lease term that read the mailbox: an aggregator
	// of an earlier term writes nothing into it.
	Term uint64
	// Seq is the instance's latest batch, Seen the Unix time, in ms, of
	// its latest write and Prev of the write before (0: none since its
	// latest sync of its own).
	Seq        uint64
	Seen, Prev int64
	// Held is what the instance may admit from its latest write on.
	Held int64
	// Batches are the instance's batches the state has not applied, as
	// far as it knows; Acked is the latest the state applied.
	Batches []Batch
	Acked   uint64
	// Grant is the latest grant carved for the instance, by arrival
	// bucket (Key; math.MaxInt64 for any bucket) and number of slots;
	// Version is the state's Version it was carved at, Base the batch
	// whose Held it was carved from, Epoch the state's epoch, Fair the
	// instance's share of the slots released at the carve. Scarce says
	// it was carved with few slots an instance: the instance keeps none
	// of it.
	Grant         []Count
	Version, Base uint64
	Epoch         uint64
	Fair          int64
	Scarce        bool
	// Adopted is the Version of the latest grant the instance adopted.
	Adopted uint64
	// In is the epoch of the state the instance joined through its
	// mailbox.
	In uint64
	// Back is set by an aggregator that found the state without some of
	// the batches it had applied (the store lost acknowledged writes):
	// the instance sends again those numbered above Had up to Upto.
	Back      bool
	Had, Upto uint64
	// Left is set by an instance that is closing, with its last batch
	// and nothing held.
	Left bool
}

// Batch is the counts an instance gathered between two of its syncs,
// numbered: a batch is applied once, whichever way it reaches the state.
type Batch struct {
	Seq uint64
	// Sessions are reports of admitted visitors' sessions.
	Sessions []Session
	// Waiting are changes of the waiting counts.
	Waiting []Cell
	// Waits are the waits, in ms, of the visitors the instance let in
	// (Key: the visitor's identity as an int64; N: the wait).
	Waits []Count
	// Attempts counts admission attempts.
	Attempts int64
	// Asks are the waiting visitors the instance had no slot for.
	Asks []Ask
}

// Ask is a waiting visitor whom an instance had no slot for at a chance
// they were due, near the front: a sync may pick them, and no instance
// gives them a chance before At.
type Ask struct {
	Visitor uint64
	// Bucket is the arrival bucket they are in (Unix seconds).
	Bucket int64
	// At is the Unix time, in ms, at which they said they would be back
	// (their next chance).
	At int64
}

// Count is a counter under an integer key.
type Count struct {
	Key int64
	N   int64
}

// Session is what the shared state knows of one admitted visitor: the
// identity their cookies carry, when they were let in and when any holder
// of those cookies was last seen. Records of the same ID merge by taking
// the latest Seen, the earliest Admitted and End, and Revoked if either is,
// so applying one twice changes nothing.
type Session struct {
	// ID is the visitor's random identity, fixed from their first
	// request; never 0.
	ID uint64
	// Admitted is the Unix time, in seconds, of the admission.
	Admitted int64
	// Seen is the Unix time, in seconds, of the latest request of any
	// holder of the visitor's cookies that an instance reported.
	Seen int64
	// End is the Unix time, in seconds, at which the session ends whatever
	// the visitor does (session renewal disabled); 0 for none.
	End int64
	// Revoked reports that the application ended the session: it no
	// longer counts, and its cookies no longer let anyone in.
	Revoked bool
}

// Cell counts waiting visitors of one arrival bucket who last checked in
// during one check-in slot.
type Cell struct {
	Bucket int64
	Slot   int64
	N      int64
}

// Instance is what the shared state knows of one running instance.
type Instance struct {
	// ID is the instance's random identifier, fixed for its lifetime.
	// Stores keep it as opaque bytes.
	ID string
	// Traffic is the instance's recent rate of admission attempts
	// (an exponentially weighted average, attempts per sync).
	Traffic float64
	// Grant is the number of admissions the instance holds and has not
	// reported as used or returned.
	Grant int64
	// Seen is the Unix time, in milliseconds, of the instance's latest sync.
	Seen int64
	// Seq is the sequence number of the instance's latest sync applied to
	// this state. An instance that did not hear back from a sync sends its
	// counts again with a later number; those with a number up to Seq were
	// applied already, so nothing is counted twice.
	Seq uint64
}

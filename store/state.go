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
	// Waiting counts queued visitors by arrival bucket (Unix seconds / 60)
	// and the check-in slot of their latest refresh.
	Waiting []Cell
	// Instances has one record per instance that synced recently.
	Instances []Instance

	// Tallies are the figures of the recent minutes not yet written to
	// the room's kept history (HistoryStore), oldest first: a minute or
	// two, whatever the traffic. Recorded is the latest minute (Unix
	// seconds / 60) written or being written; later reports about it or
	// an older one are not recorded. Both are kept in EncodingVersion
	// only: a state written in an older encoding drops them.
	Tallies  []Tally
	Recorded int64
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

// Package share is what the instances of a room share and how they share
// it (docs/design.md, "What the room shares" and "Syncing"). It knows
// nothing of the room above it: the room's settings are a type parameter
// S, and what they mean to the algorithm comes down as Rules (Host.Settle);
// the room hears back only through its Host.
//
// It has three layers, from the bottom up; a file uses its own layer and
// those below it.
//
//   - The algorithm (apply.go, merge.go, silence.go, grant.go, picks.go,
//     tally.go, schedule.go, delta.go, session.go, view.go, rules.go,
//     time.go, memory.go): the shared state's rules, run once in Go inside
//     one store transaction whatever the store. applySync merges an
//     instance's reports into store.State, drops what expired and carves
//     its grant; applyRound does it for every instance of a fleet's round
//     at once. No I/O, no clock, no lock.
//   - The request's share (local.go): Local, the grant an instance admits
//     from and the reports it owes the next sync, under one lock that no
//     I/O is done under; and Snapshot, which requests read without a lock.
//   - The protocol (syncer.go, loop.go, classic.go, fleet.go, mailbox.go,
//     join.go, lease.go, aggregate.go, kept.go, ready.go): the Syncer, one
//     per instance, which syncs with the store every SyncInterval (the
//     classic sync, or through a fleet's aggregator from FleetMin
//     instances on), installs the view it brings as the next Snapshot,
//     writes the kept history's minutes, and says whether the store works
//     (Ready, Healthy).
//
// Where the promises of docs/design.md are kept:
//
//   - Limits exact (1): a grant is carved only from the slots the state
//     leaves free, every slot held counted (carve, freeSlots; the picks'
//     and the reserve's in picks.go); what an instance admits while its
//     sync is in flight is charged to the grant the sync brings
//     (Local.Take, Grant.charge); an instance that stops is counted as
//     having used its grant (lostToSilence); in a fleet, a grant is
//     adopted charged with every admission since the write it was carved
//     from, and no aggregator writes one into a mailbox a later term read
//     (fleet.go, aggregate.go).
//   - No queueing while there is room (2), FIFO across a fleet (3): the
//     release paced over the minute but never for buckets the free slots
//     cover whole (carve), the fleet's reserve and picks (picks.go), the
//     round's release per member (laterAdmissions).
//   - A request never waits on the store (5): Local's lock is never held
//     across I/O; the Snapshot is swapped in whole (Syncer.Snapshot).
//   - An outage is no failure of a request (6): a failed sync keeps its
//     batches, drops the grant and says so (syncFailed, Healthy, Ready);
//     after a gap nobody is granted a slot until every instance could
//     bring its counts in (the grace, GraceAfterGap).
//   - One place, one count (8, 9): reports merge by visitor ID, idempotent
//     and commutative (mergeSession, mergeSessions); batches are numbered
//     and applied once (batch, unacked, Instance.Seq); a lost state is
//     rebuilt and one that went back is brought up again from what the
//     instances kept (classicNews, findGoneBack, resend); a session counts
//     until every report of it can have arrived (SessionTimes).
package share

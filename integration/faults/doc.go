// Package faults tests the waiting room through real store failures, in
// real time, against servers that the tests start themselves on loopback
// ports of their own: a redis-server child process, a throwaway PostgreSQL
// cluster and a throwaway MariaDB server. The shared servers on the usual
// ports are never touched.
//
// Every scenario runs three Rooms (forty for a fleet) in this process, as
// instances of one room, each with a store client of its own, syncing every 200 ms, and
// drives cookie-keeping virtual visitors through their handlers. In the
// middle of the traffic it breaks the store in one way:
//
//   - Redis: killed and restarted empty on the same port; paused with
//     SIGSTOP for 5 s, then SIGCONT; slowed down by a loopback TCP proxy
//     that adds 200 ms to every round trip; emptied with FLUSHALL.
//   - Redis Cluster (six nodes of the test's own, cluster_test.go): the
//     primary holding the room killed after its replica was kept 5.5 s
//     behind, so that its replica takes over without the writes of those
//     5.5 s.
//   - PostgreSQL and MariaDB: the server restarted; the room's row
//     deleted; the row locked by another session for 5 s.
//   - A fleet of 40 instances on Redis (fleet_test.go), syncing through
//     an aggregator: killed and restarted empty;
//     emptied with FLUSHALL; paused with SIGSTOP; restarted from a dump
//     taken 3 s before it was killed (every key goes back); four
//     instances cut off from it by a loopback proxy while the rest go
//     on; the aggregator (the instance holding the fleet's lease)
//     stopped. And the Redis Cluster failover above with the fleet
//     (cluster_test.go): every key of the room is in its slot, mailboxes
//     included, so the failover takes all of them back together.
//   - A fleet of 40 instances on MariaDB, and one on PostgreSQL
//     (sql_test.go): the SQL faults above, and the aggregator stopped.
//
// and then checks, from the visitors' side, what the design promises
// through any store failure under the default FailClosed policy: no 5xx,
// admitted visitors keep passing, the limits hold (admissions per minute,
// visitors active at once), waiting visitors keep their arrival minute and
// are let in first-in-first-out, the room admits again within a bounded
// time once the store is back (and New Users Per Minute's release over
// the minute lets it), each instance logs one line per outage,
// and no request waits on the store; a fleet also syncs through its
// aggregator before the fault (Stats.Aggregated) and again within a
// bounded time after it.
//
// The tests in bugs_test.go pin down defects these scenarios once ran
// into, each with the smallest setup that shows it, so that they stay
// fixed. WAITINGROOM_FAULTS_VERBOSE=1
// logs every scenario's room logs and timeline of store calls and
// admissions (they are logged anyway when a scenario fails), and
// WAITINGROOM_FAULTS_SERVER_LOGS=1 adds redis-server's output.
//
// The helpers of this package (the servers, the proxy, the log buffer) are
// exported for the soak program in package soak below this one.
//
// A scenario's timeline lasts 18 s, then goes on until the room has shown
// its recovery and two refresh intervals more (or until the recovery's
// bound has passed): about 20 s in all. The fleets' scenarios run one
// after the other, beside the three-instance suites, which run side by
// side, each against servers of its own (with go test -parallel 8, as
// scripts/test.sh runs them); go test -short skips them. A missing server binary skips them with a message, or fails them when
// WAITINGROOM_REQUIRE_SERVICES=1 (see internal/servicetest).
package faults

// Package multiproc holds the tests that check the waiting room across
// processes and through store failures, against real servers on 127.0.0.1
// and in real time:
//
//   - TestRedis and TestPostgres build cmd/waitingroom once, start three
//     -demo processes sharing one store and drive cookie-keeping clients
//     at all three; the demo applications' own counts (/active) must show
//     the global limits held.
//   - TestRedisOutage runs rooms against a redis-server of its own, stops it
//     in the middle of the traffic and starts it again, once with its data
//     and once empty.
//   - TestStoreOpsFlat and the benchmarks (BenchmarkSync, BenchmarkLoad)
//     show that store traffic depends on the sync interval, not on the
//     request rate, and measure a sync against every store.
//
// The tests skip with a message when a server is unreachable, and fail
// instead when WAITINGROOM_REQUIRE_SERVICES=1 (see internal/servicetest).
// The process and outage tests run for tens of seconds: go test -short
// skips them.
package multiproc

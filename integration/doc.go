// Package integration holds the tests that need real servers or real
// processes: the surge and the admin API against every real store (Redis,
// PostgreSQL, MariaDB, SQLite) and how soon a revoke reaches the other
// instances on Redis in this package, store failures in
// integration/faults (and its soak program, integration/faults/soak),
// several cmd/waitingroom processes sharing one store in
// integration/multiproc, and the room behind real nginx and Caddy servers
// (forward-auth) in integration/frontdoor, and the proxy of the previous
// release beside this one on one store (an upgrade and a rollback) in
// integration/release. It also compiles the README's programs as
// written, against every store and driver (TestReadmeSnippetsCompile).
//
// It is a module of its own, so that the library's module does not
// require the store drivers, the proxy or their dependencies. The proxy
// is a tool of this module (the tool directive of its go.mod), which
// integration/multiproc builds. The tests
// reach the servers at the addresses in the environment variables of
// internal/servicetest; they skip with a message when a server is
// unreachable, and fail instead when WAITINGROOM_REQUIRE_SERVICES=1.
package integration

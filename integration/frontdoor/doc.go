// Package frontdoor tests the room as the forward-auth service of real
// servers: nginx (auth_request) and Caddy (forward_auth), each started by
// the tests on loopback ports with its own configuration in a temporary
// directory, in front of a small application and of cmd/waitingroom
// -forward-auth processes. The configurations are those of
// docs/forward-auth/, read from it verbatim; only the addresses change.
// The ingress-nginx annotations run in nginx inside the part of the
// controller's configuration that an Ingress with them gets.
//
// The tests skip with a message naming the program (nginx, caddy) when it
// is not on PATH, and fail instead when WAITINGROOM_REQUIRE_SERVICES=1
// (see internal/servicetest); .ci/run installs both from Debian's
// packages.
package frontdoor

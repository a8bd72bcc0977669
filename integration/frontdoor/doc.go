// Package frontdoor tests the room as the forward-auth service of real
// servers: nginx (auth_request) and Caddy (forward_auth), each started by
// the tests on loopback ports with its own configuration in a temporary
// directory, in front of a small application and of cmd/waitingroom
// -forward-auth processes. The configurations are the complete files of
// docs/forward-auth/ (nginx/*.conf, caddy/Caddyfile), which the pages
// show as they are (TestPagesShowTheFiles); the tests run them with only
// what the pages say to change replaced: the addresses, and the pass
// secret. nginx runs in a prefix directory of its own (-p), where those
// files put everything nginx writes. The ingress-nginx annotations run in
// nginx inside the part of the controller's configuration that an Ingress
// with them gets.
//
// The tests skip with a message naming the program (nginx, caddy) when it
// is not on PATH, and fail instead when WAITINGROOM_REQUIRE_SERVICES=1
// (see internal/servicetest); .ci/run installs both from Debian's
// packages.
package frontdoor

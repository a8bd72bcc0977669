// Package servicetest decides what a test does when a server it needs
// (Redis, PostgreSQL, MariaDB) cannot be reached: skip with a clear message
// on a developer's machine, fail when WAITINGROOM_REQUIRE_SERVICES=1 (CI).
package servicetest

import (
	"os"
	"testing"
)

// RequireEnv is the environment variable that turns a missing service into
// a test failure.
const RequireEnv = "WAITINGROOM_REQUIRE_SERVICES"

// Required reports whether missing services must fail tests.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Unavailable stops the test because service could not be reached: it skips
// it, or fails it when Required.
func Unavailable(tb testing.TB, service string, err error) {
	tb.Helper()
	if Required() {
		tb.Fatalf("%s is required (%s=1) but not reachable: %v", service, RequireEnv, err)
	}
	tb.Skipf("skipping: %s not reachable (%v); start it or set its URL, and set %s=1 to make this a failure", service, err, RequireEnv)
}

// URL returns the value of the environment variable name, or def when it is
// unset or empty.
func URL(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

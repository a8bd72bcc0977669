// Package servicetest decides what a test does when a server it needs
// (Redis, PostgreSQL, MariaDB) or a program cannot be reached: skip with a
// message that names the environment variable to set, on a developer's
// machine, or fail when WAITINGROOM_REQUIRE_SERVICES=1 (CI). It also starts
// a Redis Cluster of a test's own (StartRedisCluster).
package servicetest

import (
	"fmt"
	"os"
	"testing"
)

// RequireEnv is the environment variable that turns a missing service into
// a test failure.
const RequireEnv = "WAITINGROOM_REQUIRE_SERVICES"

// Required reports whether missing services must fail tests.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Service is something a test needs from outside its process: a server at
// a URL that an environment variable sets, or a program found on PATH.
type Service struct {
	// Name says what the service is, in messages: "Redis".
	Name string
	// Env is the environment variable that says where the service is: the
	// variable holding its URL, or PATH for a program. Empty for what no
	// variable changes (a system user, an in-process database).
	Env string
	// Default is the URL used when Env is unset or empty; empty for a
	// program.
	Default string
}

// The servers the tests share, each at the URL of its variable or, when
// that is unset, at its default on loopback.
var (
	Redis      = Service{Name: "Redis", Env: "WAITINGROOM_REDIS_URL", Default: "redis://127.0.0.1:6379/0"}
	PostgreSQL = Service{Name: "PostgreSQL", Env: "WAITINGROOM_POSTGRES_URL", Default: "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"}
	MariaDB    = Service{Name: "MariaDB", Env: "WAITINGROOM_MYSQL_URL", Default: "root@tcp(127.0.0.1:3306)/test"}
)

// Program is the program name, looked up on PATH; what says what the test
// runs it for.
func Program(name, what string) Service {
	return Service{Name: name + " (" + what + ")", Env: "PATH"}
}

// URL returns the value of s.Env, or s.Default when it is unset or empty.
func (s Service) URL() string {
	if v := os.Getenv(s.Env); s.Env != "" && v != "" {
		return v
	}
	return s.Default
}

// Unavailable stops the test because s could not be reached (err says
// why): it skips it, or fails it when Required. Either message names the
// variable that says where s is, and its default.
func Unavailable(tb testing.TB, s Service, err error) {
	tb.Helper()
	if Required() {
		tb.Fatal(message(s, err, true))
		return
	}
	tb.Skip(message(s, err, false))
}

// message is what Unavailable says.
func message(s Service, err error, required bool) string {
	var how string
	switch {
	case s.Env == "PATH":
		how = "install it, or add its directory to PATH"
	case s.Env != "":
		how = fmt.Sprintf("start it, or set %s to its URL (default %s)", s.Env, s.Default)
	}
	if required {
		msg := fmt.Sprintf("%s is required (%s=1) but not reachable: %v", s.Name, RequireEnv, err)
		if how != "" {
			msg += "; " + how
		}
		return msg
	}
	msg := fmt.Sprintf("skipping: %s not reachable (%v); ", s.Name, err)
	if how != "" {
		msg += how + ", and "
	}
	return msg + fmt.Sprintf("set %s=1 to make this a failure", RequireEnv)
}

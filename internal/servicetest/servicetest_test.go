package servicetest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// recorder is a testing.TB that records how Unavailable stopped the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()          {}
func (r *recorder) Skip(args ...any) { r.skipped = args[0].(string) }
func (r *recorder) Fatal(args ...any) {
	r.failed = args[0].(string)
}

func TestUnavailable(t *testing.T) {
	refused := errors.New("connection refused")
	for _, tc := range []struct {
		name     string
		s        Service
		required bool
		skipped  string
		failed   string
	}{
		{"redis", Redis, false,
			"skipping: Redis not reachable (connection refused); start it, or set WAITINGROOM_REDIS_URL to its URL (default redis://127.0.0.1:6379/0), and set WAITINGROOM_REQUIRE_SERVICES=1 to make this a failure", ""},
		{"postgres, required", PostgreSQL, true, "",
			"PostgreSQL is required (WAITINGROOM_REQUIRE_SERVICES=1) but not reachable: connection refused; start it, or set WAITINGROOM_POSTGRES_URL to its URL (default postgres://postgres@127.0.0.1:5432/test?sslmode=disable)"},
		{"mariadb", MariaDB, false,
			"skipping: MariaDB not reachable (connection refused); start it, or set WAITINGROOM_MYSQL_URL to its URL (default root@tcp(127.0.0.1:3306)/test), and set WAITINGROOM_REQUIRE_SERVICES=1 to make this a failure", ""},
		{"program", Program("redis-server", "to run a server of the test's own"), false,
			"skipping: redis-server (to run a server of the test's own) not reachable (connection refused); install it, or add its directory to PATH, and set WAITINGROOM_REQUIRE_SERVICES=1 to make this a failure", ""},
		{"no variable", Service{Name: "a postgres user"}, false,
			"skipping: a postgres user not reachable (connection refused); set WAITINGROOM_REQUIRE_SERVICES=1 to make this a failure", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.required {
				t.Setenv(RequireEnv, "1")
			} else {
				t.Setenv(RequireEnv, "")
			}
			r := &recorder{TB: t}
			Unavailable(r, tc.s, refused)
			assert.Equal(t, tc.skipped, r.skipped)
			assert.Equal(t, tc.failed, r.failed)
		})
	}
}

func TestURL(t *testing.T) {
	t.Setenv(Redis.Env, "")
	assert.Equal(t, Redis.Default, Redis.URL(), "unset: the default")
	t.Setenv(Redis.Env, "redis://elsewhere:6380/1")
	assert.Equal(t, "redis://elsewhere:6380/1", Redis.URL())
	assert.Equal(t, "", Service{Name: "SQLite"}.URL())
}

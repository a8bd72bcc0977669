package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// sqlStateErr mimics *pgconn.PgError.
type sqlStateErr struct{ code, msg string }

func (e *sqlStateErr) Error() string    { return e.msg }
func (e *sqlStateErr) SQLState() string { return e.code }

// codeErr mimics *sqlite.Error of modernc.org/sqlite.
type codeErr struct{ code int }

func (e *codeErr) Error() string { return fmt.Sprintf("sqlite error %d", e.code) }
func (e *codeErr) Code() int     { return e.code }

func TestRetryable(t *testing.T) {
	tests := []struct {
		name    string
		dialect Dialect
		err     error
		want    bool
	}{
		{"pg deadlock code", Postgres, fmt.Errorf("wrapped: %w", &sqlStateErr{"40P01", "x"}), true},
		{"pg serialization code", Postgres, &sqlStateErr{"40001", "x"}, true},
		{"pg lock timeout code", Postgres, &sqlStateErr{"55P03", "x"}, true},
		{"pg unique violation", Postgres, &sqlStateErr{"23505", "duplicate key"}, false},
		{"pg deadlock text", Postgres, errors.New("ERROR: deadlock detected (SQLSTATE 40P01)"), true},
		{"pg lib/pq text", Postgres, errors.New("pq: could not serialize access due to concurrent update"), true},
		{"pg missing table", Postgres, errors.New(`ERROR: relation "x" does not exist (SQLSTATE 42P01)`), false},
		{"mysql deadlock", MySQL, errors.New("Error 1213 (40001): Deadlock found when trying to get lock; try restarting transaction"), true},
		{"mysql old deadlock", MySQL, errors.New("Error 1213: Deadlock found when trying to get lock"), true},
		{"mysql lock wait", MySQL, errors.New("Error 1205 (HY000): Lock wait timeout exceeded; try restarting transaction"), true},
		{"mariadb record changed", MySQL, errors.New("Error 1020 (HY000): Record has changed since last read in table 't'"), true},
		{"mysql other errno", MySQL, errors.New("Error 12130 (HY000): not a deadlock"), false},
		{"mysql missing table", MySQL, errors.New("Error 1146 (42S02): Table 'test.x' doesn't exist"), false},
		{"sqlite busy code", SQLite, &codeErr{5}, true},
		{"sqlite busy snapshot code", SQLite, &codeErr{5 | 2<<8}, true},
		{"sqlite locked code", SQLite, &codeErr{6}, true},
		{"sqlite constraint code", SQLite, &codeErr{19}, false},
		{"sqlite busy text", SQLite, errors.New("database is locked (5) (SQLITE_BUSY)"), true},
		{"mattn busy text", SQLite, errors.New("database is locked"), true},
		{"sqlite no table", SQLite, errors.New("SQL logic error: no such table: x (1)"), false},
		{"sqlite code on mysql", MySQL, &codeErr{5}, false},
		{"canceled", Postgres, context.Canceled, false},
		{"nil", Postgres, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.dialect.retryable(tt.err))
		})
	}
}

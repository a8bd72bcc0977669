package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/go-waitingroom/waitingroom/store"
)

// TestClassify covers the codes and texts of drivers the live tests cannot
// produce (a password refused under trust authentication, a server shutting
// down, mattn/go-sqlite3's errors without a Code method).
func TestClassify(t *testing.T) {
	tests := []struct {
		name    string
		dialect Dialect
		err     error
		want    error // nil: not classified
	}{
		{"pg undefined table code", Postgres, fmt.Errorf("wrapped: %w", &sqlStateErr{"42P01", "x"}), store.ErrNoSchema},
		{"pg undefined table text", Postgres, errors.New(`pq: relation "t" does not exist (SQLSTATE 42P01)`), store.ErrNoSchema},
		{"pg invalid password", Postgres, &sqlStateErr{"28P01", "password authentication failed"}, store.ErrAuth},
		{"pg no pg_hba entry", Postgres, &sqlStateErr{"28000", "no pg_hba.conf entry"}, store.ErrAuth},
		{"pg insufficient privilege", Postgres, &sqlStateErr{"42501", "permission denied"}, store.ErrAuth},
		{"pg connection failure", Postgres, &sqlStateErr{"08006", "connection failure"}, store.ErrUnavailable},
		{"pg too many connections", Postgres, &sqlStateErr{"53300", "too many clients"}, store.ErrUnavailable},
		{"pg admin shutdown", Postgres, &sqlStateErr{"57P01", "terminating connection"}, store.ErrUnavailable},
		{"pg starting up", Postgres, &sqlStateErr{"57P03", "the database system is starting up"}, store.ErrUnavailable},
		{"pg lost connection", Postgres, errors.New("failed to receive message: unexpected EOF"), store.ErrUnavailable},
		{"pg deadlock", Postgres, &sqlStateErr{"40P01", "deadlock"}, nil},
		{"pg unique violation", Postgres, &sqlStateErr{"23505", "duplicate key"}, nil},
		{"pg database does not exist", Postgres, &sqlStateErr{"3D000", `database "x" does not exist`}, nil},
		{"mysql no such table", MySQL, errors.New("Error 1146 (42S02): Table 'test.x' doesn't exist"), store.ErrNoSchema},
		{"mysql access denied", MySQL, errors.New("Error 1045 (28000): Access denied for user 'u'@'h' (using password: YES)"), store.ErrAuth},
		{"mysql database access denied", MySQL, errors.New("Error 1044 (42000): Access denied for user 'u'@'%' to database 'd'"), store.ErrAuth},
		{"mysql table access denied", MySQL, errors.New("Error 1142 (42000): INSERT command denied to user"), store.ErrAuth},
		{"mysql too many connections", MySQL, errors.New("Error 1040 (08004): Too many connections"), store.ErrUnavailable},
		{"mysql invalid connection", MySQL, errors.New("invalid connection"), store.ErrUnavailable},
		{"mysql deadlock", MySQL, errors.New("Error 1213 (40001): Deadlock found"), nil},
		{"mysql errno that only starts alike", MySQL, errors.New("Error 11460 (HY000): something else"), nil},
		{"sqlite no such table", SQLite, errors.New("SQL logic error: no such table: x (1)"), store.ErrNoSchema},
		{"mattn no such table", SQLite, errors.New("no such table: waitingroom_state"), store.ErrNoSchema},
		{"sqlite readonly code", SQLite, &codeErr{8}, store.ErrAuth},
		{"sqlite readonly dbmoved code", SQLite, &codeErr{8 | 4<<8}, store.ErrAuth},
		{"sqlite perm code", SQLite, &codeErr{3}, store.ErrAuth},
		{"mattn readonly", SQLite, errors.New("attempt to write a readonly database"), store.ErrAuth},
		{"sqlite cantopen code", SQLite, &codeErr{14}, store.ErrUnavailable},
		{"mattn cantopen", SQLite, errors.New("unable to open database file: no such file or directory"), store.ErrUnavailable},
		{"sqlite busy", SQLite, &codeErr{5}, nil},
		{"sqlite constraint", SQLite, &codeErr{19}, nil},
		{"mysql code on postgres", Postgres, errors.New("Error 1146 (42S02): Table 'test.x' doesn't exist"), nil},
		{"deadline", Postgres, fmt.Errorf("x: %w", context.DeadlineExceeded), store.ErrUnavailable},
		{"bad connection", MySQL, driver.ErrBadConn, store.ErrUnavailable},
		{"EOF", SQLite, io.ErrUnexpectedEOF, store.ErrUnavailable},
		{"cancelled", Postgres, fmt.Errorf("%w: %w", context.Canceled, errors.New("conn closed")), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Store{dialect: tt.dialect, table: "t"}
			got := s.classify(tt.err)
			assert.ErrorIs(t, got, tt.err, "the driver's error must stay in the chain")
			for _, class := range []error{store.ErrNoSchema, store.ErrAuth, store.ErrUnavailable} {
				assert.Equal(t, class == tt.want, errors.Is(got, class), "%v: %v", class, got)
			}
		})
	}
	assert.NoError(t, (&Store{dialect: Postgres}).classify(nil))
}

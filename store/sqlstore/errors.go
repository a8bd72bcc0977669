package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/go-waitingroom/waitingroom/store"
)

// classify wraps err, an error of the database, with the store error that
// says what is wrong and how to fix it (store.ErrNoSchema, store.ErrAuth,
// store.ErrUnavailable), keeping err in the chain. It returns err unchanged
// when it cannot tell, and for a cancelled context, which is the caller's
// doing. Like retryable, it recognises errors by SQLSTATE, SQLite result
// code or text, so that no driver is imported.
func (s *Store) classify(err error) error {
	d := s.dialect
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return err
	case d.noTable(err):
		return fmt.Errorf("%w: table %s does not exist; create it with (*sqlstore.Store).CreateSchema, or run the statement of sqlstore.Schema(%s, %q): %w",
			store.ErrNoSchema, s.table, d.goName(), s.table, err)
	case d.denied(err) && d == SQLite:
		return fmt.Errorf("%w: SQLite may not write the database; check the permissions of the file and its directory, and the DSN's mode: %w", store.ErrAuth, err)
	case d.denied(err):
		return fmt.Errorf("%w: the database refused the user or a privilege; check the user and password of the DSN, and that the user may SELECT, INSERT and UPDATE table %s (and CREATE, for CreateSchema): %w",
			store.ErrAuth, s.table, err)
	case d.unavailable(err):
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// goName is the name of d's constant, as a Go expression.
func (d Dialect) goName() string {
	switch d {
	case Postgres:
		return "sqlstore.Postgres"
	case MySQL:
		return "sqlstore.MySQL"
	case SQLite:
		return "sqlstore.SQLite"
	}
	return d.String()
}

// noTable reports whether err says that the table does not exist.
func (d Dialect) noTable(err error) bool {
	switch d {
	case Postgres:
		return hasSQLState(err, "42P01") // undefined_table
	case MySQL:
		return mysqlErrno(err.Error(), "1146") // ER_NO_SUCH_TABLE
	case SQLite:
		return strings.Contains(err.Error(), "no such table")
	}
	return false
}

// denied reports whether err says that the database refused the
// credentials or a privilege.
func (d Dialect) denied(err error) bool {
	switch d {
	case Postgres:
		// invalid_authorization_specification (an unknown role, or no
		// pg_hba.conf entry), invalid_password, insufficient_privilege.
		return hasSQLState(err, "28000", "28P01", "42501")
	case MySQL:
		// ER_ACCESS_DENIED_ERROR (user or password), ER_DBACCESS_DENIED_ERROR
		// (database), ER_TABLEACCESS_DENIED_ERROR, ER_COLUMNACCESS_DENIED_ERROR.
		return mysqlErrno(err.Error(), "1045", "1044", "1142", "1143")
	case SQLite:
		var ce interface{ Code() int }
		if errors.As(err, &ce) {
			switch ce.Code() & 0xff {
			case 3, 8, 23: // SQLITE_PERM, SQLITE_READONLY, SQLITE_AUTH
				return true
			}
		}
		return containsAny(err.Error(), "attempt to write a readonly database", "access permission denied", "authorization denied")
	}
	return false
}

// unavailable reports whether err says that the database could not be
// reached, did not answer in time, or cannot serve for now.
func (d Dialect) unavailable(err error) bool {
	var ne net.Error // dial errors, resets, timeouts, context.DeadlineExceeded
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	msg := err.Error()
	switch d {
	case Postgres:
		// Class 08: connection exception; 53300: too_many_connections;
		// 57P01-57P03: admin_shutdown, crash_shutdown, cannot_connect_now
		// (starting up or shutting down).
		if st := sqlState(err); strings.HasPrefix(st, "08") {
			return true
		}
		return hasSQLState(err, "53300", "57P01", "57P02", "57P03") ||
			containsAny(msg, "unexpected EOF", "conn closed")
	case MySQL:
		// 1040: too many connections; 1053: server shutdown in progress.
		// go-sql-driver/mysql reports a broken connection as "invalid
		// connection".
		return mysqlErrno(msg, "1040", "1053") ||
			containsAny(msg, "invalid connection", "bad connection", "unexpected EOF")
	case SQLite:
		var ce interface{ Code() int }
		if errors.As(err, &ce) && ce.Code()&0xff == 14 { // SQLITE_CANTOPEN
			return true
		}
		return strings.Contains(msg, "unable to open database file")
	}
	return false
}

// sqlState returns the SQLSTATE of err when its driver reports one (pgx's
// *pgconn.PgError has a SQLState method), or "".
func sqlState(err error) string {
	var se interface{ SQLState() string }
	if errors.As(err, &se) {
		return se.SQLState()
	}
	return ""
}

// hasSQLState reports whether err carries one of the SQLSTATE codes, by
// method or in its text ("(SQLSTATE 42P01)", as pgx writes it).
func hasSQLState(err error, codes ...string) bool {
	st := sqlState(err)
	msg := err.Error()
	for _, c := range codes {
		if st == c || strings.Contains(msg, "SQLSTATE "+c) {
			return true
		}
	}
	return false
}

// classifyHistory classifies an error of the history table as classify
// does the state table's, naming the history table and its statement.
func (s *Store) classifyHistory(err error) error {
	d := s.dialect
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return err
	case d.noTable(err):
		return fmt.Errorf("%w: table %s does not exist; create it with (*sqlstore.Store).CreateSchema, or run the statement of sqlstore.HistorySchema(%s, %q): %w",
			store.ErrNoSchema, historyTable(s.table), d.goName(), s.table, err)
	case d.denied(err) && d != SQLite:
		return fmt.Errorf("%w: the database refused the user or a privilege; check that the user may SELECT, INSERT, UPDATE and DELETE table %s: %w",
			store.ErrAuth, historyTable(s.table), err)
	}
	return s.classify(err)
}

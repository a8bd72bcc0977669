package sqlstore

import (
	"context"
	"fmt"

	"github.com/go-waitingroom/waitingroom/store"
)

// Dialect selects the SQL spoken to the database. The zero Dialect is not
// valid: New rejects it.
type Dialect int

const (
	// Postgres is PostgreSQL (9.5 or later, for ON CONFLICT).
	Postgres Dialect = iota + 1
	// MySQL is MySQL or MariaDB with the InnoDB engine.
	MySQL
	// SQLite is SQLite 3.
	SQLite
)

// String returns "postgres", "mysql" or "sqlite", or "Dialect(n)" for an
// unknown value.
func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "postgres"
	case MySQL:
		return "mysql"
	case SQLite:
		return "sqlite"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// valid reports whether d is one of the dialects.
func (d Dialect) valid() bool { return d >= Postgres && d <= SQLite }

// DefaultTable is the table name used when Options.Table is empty.
const DefaultTable = "waitingroom_state"

// MaxRoomLenMySQL is the longest room name, in bytes, that the MySQL table
// can hold (its room column is VARBINARY(255)). Update rejects longer names
// on MySQL rather than let the server truncate them. PostgreSQL and SQLite
// keep names of any length.
const MaxRoomLenMySQL = 255

// queries holds the statements of one dialect and table.
type queries struct {
	schema string
	// selectState reads the state; on PostgreSQL and MySQL it locks the
	// row. Argument: room.
	selectState string
	// ensure creates the row with an empty state if missing and, on MySQL,
	// locks it. Argument: room. PostgreSQL and MySQL only.
	ensure string
	// update writes the state. Arguments: state, room.
	update string
	// insert creates the row. Arguments: room, state. SQLite only.
	insert string
	// read reads the state without a lock, outside any transaction.
	// Argument: room.
	read string
	// remove deletes the row. Argument: room.
	remove string
}

// validIdent reports whether s matches [A-Za-z_][A-Za-z0-9_]{0,62}.
func validIdent(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// quote quotes the identifier ident as dialect d does.
func quote(d Dialect, ident string) string {
	if d == MySQL {
		return "`" + ident + "`"
	}
	return `"` + ident + `"`
}

// Schema returns the CREATE TABLE IF NOT EXISTS statement that creates the
// table of dialect d named table (DefaultTable if empty). It is one
// statement, safe to run again. It returns "" for an unknown dialect or a
// table name that New would reject.
//
// PostgreSQL:
//
//	CREATE TABLE IF NOT EXISTS "waitingroom_state" (
//		room       TEXT        NOT NULL PRIMARY KEY,
//		state      BYTEA       NOT NULL,
//		updated_at TIMESTAMPTZ NOT NULL
//	)
//
// MySQL and MariaDB (a binary room column compares names byte for byte:
// no case folding, no trailing-space padding):
//
//	CREATE TABLE IF NOT EXISTS `waitingroom_state` (
//		room       VARBINARY(255) NOT NULL PRIMARY KEY,
//		state      LONGBLOB       NOT NULL,
//		updated_at DATETIME(6)    NOT NULL
//	) ENGINE=InnoDB
//
// SQLite (updated_at is ISO 8601 text in UTC):
//
//	CREATE TABLE IF NOT EXISTS "waitingroom_state" (
//		room       TEXT NOT NULL PRIMARY KEY,
//		state      BLOB NOT NULL,
//		updated_at TEXT NOT NULL
//	)
func Schema(d Dialect, table string) string {
	if table == "" {
		table = DefaultTable
	}
	if !d.valid() || !validIdent(table) {
		return ""
	}
	t := quote(d, table)
	switch d {
	case Postgres:
		return "CREATE TABLE IF NOT EXISTS " + t + " (\n" +
			"\troom       TEXT        NOT NULL PRIMARY KEY,\n" +
			"\tstate      BYTEA       NOT NULL,\n" +
			"\tupdated_at TIMESTAMPTZ NOT NULL\n" +
			")"
	case MySQL:
		return "CREATE TABLE IF NOT EXISTS " + t + " (\n" +
			"\troom       VARBINARY(255) NOT NULL PRIMARY KEY,\n" +
			"\tstate      LONGBLOB       NOT NULL,\n" +
			"\tupdated_at DATETIME(6)    NOT NULL\n" +
			") ENGINE=InnoDB"
	default: // SQLite
		return "CREATE TABLE IF NOT EXISTS " + t + " (\n" +
			"\troom       TEXT NOT NULL PRIMARY KEY,\n" +
			"\tstate      BLOB NOT NULL,\n" +
			"\tupdated_at TEXT NOT NULL\n" +
			")"
	}
}

// buildQueries returns the statements of dialect d on table.
func buildQueries(d Dialect, table string) queries {
	t := quote(d, table)
	q := queries{schema: Schema(d, table)}
	switch d {
	case Postgres:
		q.selectState = "SELECT state FROM " + t + " WHERE room = $1 FOR UPDATE"
		q.ensure = "INSERT INTO " + t + " (room, state, updated_at) VALUES ($1, ''::bytea, now()) ON CONFLICT (room) DO NOTHING"
		q.update = "UPDATE " + t + " SET state = $1, updated_at = now() WHERE room = $2"
		q.read = "SELECT state FROM " + t + " WHERE room = $1"
		q.remove = "DELETE FROM " + t + " WHERE room = $1"
	case MySQL:
		q.selectState = "SELECT state FROM " + t + " WHERE room = ? FOR UPDATE"
		q.ensure = "INSERT INTO " + t + " (room, state, updated_at) VALUES (?, '', UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE room = room"
		q.update = "UPDATE " + t + " SET state = ?, updated_at = UTC_TIMESTAMP(6) WHERE room = ?"
		q.read = "SELECT state FROM " + t + " WHERE room = ?"
		q.remove = "DELETE FROM " + t + " WHERE room = ?"
	case SQLite:
		const now = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
		q.selectState = "SELECT state FROM " + t + " WHERE room = ?"
		q.update = "UPDATE " + t + " SET state = ?, updated_at = " + now + " WHERE room = ?"
		q.insert = "INSERT INTO " + t + " (room, state, updated_at) VALUES (?, ?, " + now + ")"
		q.read = q.selectState
		q.remove = "DELETE FROM " + t + " WHERE room = ?"
	}
	return q
}

// CreateSchema runs Schema(dialect, table) and HistorySchema(dialect,
// table) on the database: it creates the tables if they do not exist and
// leaves existing ones untouched (no migration; a database of a release
// without history gets its history table). It is safe to call from many processes at once. Its errors
// are classified as Update's are.
func (s *Store) CreateSchema(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if s.dialect != Postgres {
		if _, err := s.db.ExecContext(ctx, s.q.schema); err != nil {
			return fmt.Errorf("waitingroom/sqlstore: create table %s: %w", s.table, s.classify(err))
		}
		if _, err := s.db.ExecContext(ctx, s.hq.schema); err != nil {
			return fmt.Errorf("waitingroom/sqlstore: create table %s: %w", historyTable(s.table), s.classify(err))
		}
		return nil
	}
	// PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against itself:
	// two at once can both miss the table and one fails on the catalog's
	// unique index. A transaction-scoped advisory lock on the table's name
	// lets one process create it while the others wait.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("waitingroom/sqlstore: create table %s: %w", s.table, s.classify(err))
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "waitingroom/sqlstore:"+s.table); err != nil {
		return fmt.Errorf("waitingroom/sqlstore: create table %s: lock: %w", s.table, s.classify(err))
	}
	if _, err := tx.ExecContext(ctx, s.q.schema); err != nil {
		return fmt.Errorf("waitingroom/sqlstore: create table %s: %w", s.table, s.classify(err))
	}
	if _, err := tx.ExecContext(ctx, s.hq.schema); err != nil {
		return fmt.Errorf("waitingroom/sqlstore: create table %s: %w", historyTable(s.table), s.classify(err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("waitingroom/sqlstore: create table %s: %w", s.table, s.classify(err))
	}
	return nil
}

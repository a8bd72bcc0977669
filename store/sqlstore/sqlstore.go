// Package sqlstore keeps waiting-room state in a SQL database shared by many
// processes: PostgreSQL, MySQL or MariaDB (InnoDB), or SQLite.
//
// It is built on database/sql only and imports no driver: open a *sql.DB
// with the driver of your choice (for example github.com/jackc/pgx/v5/stdlib,
// github.com/go-sql-driver/mysql, modernc.org/sqlite or
// github.com/mattn/go-sqlite3) and pass it to New with its Dialect.
//
// # The table
//
// Every room has one row in one table (default "waitingroom_state"):
//
//	room        the room name, primary key (TEXT; VARBINARY(255) on MySQL)
//	state       the room's state in the binary form of store.MarshalState
//	            (BYTEA / LONGBLOB / BLOB)
//	updated_at  when the store last wrote the row (server clock, UTC)
//
// Schema returns the exact CREATE TABLE IF NOT EXISTS statement of each
// dialect; HistorySchema that of the history table beside it ("_history"
// after the table's name: see "History" below). The store never creates or alters the table by itself, New does
// not touch the database at all: run the statement with your migration tool,
// or call CreateSchema once at start-up. A row's size grows with minutes of
// queue and of session (a day of queue is a few tens of kilobytes), never with
// the number of visitors. There is no expiry, unlike Redis: the store deletes
// a row only when an Update leaves the zero State in it (the waiting room
// does so for the fleet mailbox of an instance that is gone), so delete the
// rows of rooms you retire. Deleting a live room's
// row resets that room, which the waiting room detects and rebuilds.
//
// # History
//
// The rooms' kept history (store.HistoryStore) is a second table, named
// after the first (its first 55 characters) with "_history" (default
// "waitingroom_state_history"):
// one row per room and minute (room, minute, data), primary key (room,
// minute), created by CreateSchema or the statement of HistorySchema.
// AppendHistory is one transaction, once a minute per room, that writes
// the minutes and deletes the room's rows older than 30 days; ReadHistory
// one SELECT. A database without that table keeps working: the room logs
// that it cannot write its history. An instance of a release without
// history never touches it.
//
// # Locking
//
// Update is one short transaction per call that locks the room's row, so
// updates of one room are serialized across every process sharing the
// database while updates of different rooms run in parallel:
//
//   - PostgreSQL and MySQL/MariaDB: BEGIN; SELECT state ... FOR UPDATE; fn;
//     UPDATE; COMMIT, in the database's default isolation level (READ
//     COMMITTED or REPEATABLE READ both work: a locking read always sees the
//     latest committed row). The first update of a room finds no row; it
//     rolls back and starts again with a transaction that first creates the
//     row with an empty state (PostgreSQL: INSERT ... ON CONFLICT DO NOTHING;
//     MySQL: INSERT ... ON DUPLICATE KEY UPDATE, which takes the exclusive
//     lock at once where INSERT IGNORE would take a shared lock and deadlock
//     with a concurrent creator on the following SELECT ... FOR UPDATE).
//     If fn fails, the whole transaction rolls back, so even that row is not
//     created.
//   - SQLite: database/sql has no way to begin an IMMEDIATE transaction that
//     works with every driver, so the store takes a dedicated connection
//     from the pool (db.Conn) and runs BEGIN IMMEDIATE, SELECT, fn, INSERT or
//     UPDATE, and COMMIT (or ROLLBACK) on it. BEGIN IMMEDIATE takes the
//     database's write lock before the read, so two writers can never both
//     read and then fail to upgrade. No DSN parameter such as _txlock is
//     needed. Give every connection a busy timeout (modernc.org/sqlite:
//     "_pragma=busy_timeout(5000)"; mattn/go-sqlite3: "_busy_timeout=5000",
//     its default) so that writers wait for the lock inside SQLite; WAL mode
//     ("_pragma=journal_mode(WAL)") lets readers proceed
//     while a writer holds the lock (modernc.org/sqlite stops waiting when ctx is done; a driver
//     whose busy handler ignores ctx may hold Update up to the busy
//     timeout). A connection whose ROLLBACK fails is discarded, never
//     returned to the pool with a transaction open.
//
// fn runs while the row (SQLite: the database) is locked: keep it short.
//
// Read (store.Reader) is a plain SELECT outside any transaction: it takes
// no lock, so readers neither queue on a room's row nor hold up its
// writers.
//
// # Retries
//
// Deadlocks, serialization failures, lock wait timeouts and SQLITE_BUSY /
// SQLITE_LOCKED are retried, with a freshly read state and so a new call of
// fn, after a jittered exponential backoff (1 ms doubling up to 100 ms)
// until the update succeeds, ctx is done or the Store is closed. They are
// recognised by SQLSTATE (drivers whose errors have a SQLState() string
// method, such as pgx), by an error code (SQLite drivers with a Code() int
// method) or by error text, so no driver is imported. With a ctx that has no
// deadline, a database that stays locked makes Update wait for ever: give
// Update a deadline.
//
// # Errors
//
// Errors of Update and CreateSchema that the store can classify, in the same
// way, wrap a sentinel of package store besides the driver's error, and name
// the fix:
//
//   - store.ErrNoSchema: the table does not exist (PostgreSQL SQLSTATE 42P01,
//     MySQL error 1146, SQLite "no such table"). Create it with CreateSchema
//     or the statement of Schema.
//   - store.ErrAuth: the database refused the user, the password or a
//     privilege (SQLSTATE 28000, 28P01, 42501; MySQL 1044, 1045, 1142, 1143;
//     SQLite SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH).
//   - store.ErrUnavailable: the database could not be reached or did not
//     answer in time (connection refused or lost, ctx's deadline, SQLSTATE
//     class 08, 53300, 57P01-57P03; MySQL 1040, 1053; SQLite
//     SQLITE_CANTOPEN).
//
// A context cancelled by the caller is not classified.
package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-waitingroom/waitingroom/store"
)

var (
	_ store.Store  = (*Store)(nil)
	_ store.Reader = (*Store)(nil)
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

func (d Dialect) valid() bool { return d >= Postgres && d <= SQLite }

// DefaultTable is the table name used when Options.Table is empty.
const DefaultTable = "waitingroom_state"

// MaxRoomLenMySQL is the longest room name, in bytes, that the MySQL table
// can hold (its room column is VARBINARY(255)). Update rejects longer names
// on MySQL rather than let the server truncate them. PostgreSQL and SQLite
// keep names of any length.
const MaxRoomLenMySQL = 255

// Options configures a Store. The zero value uses every default.
type Options struct {
	// Table is the name of the table holding one row per room. Default
	// DefaultTable ("waitingroom_state"). It must be a plain identifier
	// matching [A-Za-z_][A-Za-z0-9_]{0,62}; to use another schema or
	// database, select it in the DSN (PostgreSQL: search_path). The name is
	// quoted in every statement, so it is used exactly as given, case
	// included.
	Table string
}

// Store is a store.Store backed by a SQL table. Create it with New. It is
// safe for concurrent use by many goroutines, and many processes may share
// one table.
type Store struct {
	db      *sql.DB
	dialect Dialect
	table   string
	q       queries
	hq      historyQueries

	closed    atomic.Bool
	done      chan struct{}
	closeOnce sync.Once
}

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

// New returns a Store that keeps its rows in opts.Table of db, spoken to in
// dialect d. It validates its arguments and does not touch the database: it
// neither checks the connection nor creates the table (see Schema and
// CreateSchema). The Store does not own db: Close leaves it open.
func New(db *sql.DB, d Dialect, opts Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("waitingroom/sqlstore: nil *sql.DB")
	}
	if !d.valid() {
		return nil, fmt.Errorf("waitingroom/sqlstore: unknown dialect %v", d)
	}
	table := opts.Table
	if table == "" {
		table = DefaultTable
	}
	if !validIdent(table) {
		return nil, fmt.Errorf("waitingroom/sqlstore: invalid table name %q: want a plain identifier [A-Za-z_][A-Za-z0-9_]{0,62}", table)
	}
	return &Store{
		db:      db,
		dialect: d,
		table:   table,
		q:       buildQueries(d, table),
		hq:      buildHistoryQueries(d, table),
		done:    make(chan struct{}),
	}, nil
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

// Backoff bounds between retries of a transient failure.
const (
	minBackoff = time.Millisecond
	maxBackoff = 100 * time.Millisecond
)

// maxMissing bounds how often a row created by the ensure statement can be
// found missing right after, before Update gives up (someone keeps deleting
// it).
const maxMissing = 3

// errNoRow reports that the room's row does not exist (yet).
var errNoRow = errors.New("no row")

// fnError carries the error of the caller's fn, to be returned unchanged.
type fnError struct{ err error }

func (e *fnError) Error() string { return e.err.Error() }

// Update implements store.Store with one transaction that locks the room's
// row (see the package documentation). fn is called with the lock held; it
// is called again, with a freshly read state, when the transaction hits a
// deadlock, a serialization failure or a busy SQLite database and is
// retried. If fn returns an error, the transaction is rolled back and that
// error is returned unchanged. When fn leaves the state's encoding as it
// was, nothing is written; when it leaves the zero State, the room's row is
// deleted (a missing row reads as the zero State). A row whose state is empty or cannot be decoded
// is presented to fn as the zero State.
//
// On MySQL, room names longer than MaxRoomLenMySQL bytes are rejected; on
// PostgreSQL, room names must be valid UTF-8 without NUL bytes.
//
// Other errors wrap store.ErrNoSchema, store.ErrAuth or store.ErrUnavailable
// when the store can tell what is wrong (see the package documentation).
//
// Update is safe for concurrent use.
func (s *Store) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.dialect == MySQL && len(room) > MaxRoomLenMySQL {
		return fmt.Errorf("waitingroom/sqlstore: room name of %d bytes is longer than the %d bytes MySQL can hold", len(room), MaxRoomLenMySQL)
	}
	create := false
	missing := 0
	retries := 0
	for {
		var err error
		if s.dialect == SQLite {
			err = s.updateSQLite(ctx, room, fn)
		} else {
			err = s.updateTx(ctx, room, fn, create)
		}
		if err == nil {
			return nil
		}
		if fe, ok := err.(*fnError); ok {
			return fe.err
		}
		if err == errNoRow {
			if create {
				missing++
				if missing >= maxMissing {
					return fmt.Errorf("waitingroom/sqlstore: update room %q: its row in %s disappears as soon as it is created", room, s.table)
				}
			}
			create = true
			continue
		}
		if cerr := ctx.Err(); cerr != nil {
			if !errors.Is(err, cerr) {
				err = fmt.Errorf("%w: %w", cerr, err)
			}
			return fmt.Errorf("waitingroom/sqlstore: update room %q: %w", room, s.classify(err))
		}
		if s.closed.Load() {
			return store.ErrClosed
		}
		if !s.dialect.retryable(err) {
			return fmt.Errorf("waitingroom/sqlstore: update room %q: %w", room, s.classify(err))
		}
		if berr := s.backoff(ctx, retries); berr != nil {
			if berr == store.ErrClosed {
				return berr
			}
			return fmt.Errorf("waitingroom/sqlstore: update room %q: %w", room, s.classify(fmt.Errorf("%w while retrying after: %w", berr, err)))
		}
		retries++
	}
}

// zeroState is the encoding of the zero State. Update removes the row of a
// room whose fn leaves it: a missing row reads the same.
var zeroState = store.MarshalState(&store.State{})

// Read implements store.Reader with one SELECT outside any transaction
// (no FOR UPDATE; SQLite: no BEGIN IMMEDIATE): it waits for no lock of
// Update's and holds none. Each statement reads the latest committed row
// (PostgreSQL and MySQL/MariaDB: a statement in autocommit mode reads a
// snapshot taken when it starts, in READ COMMITTED as in REPEATABLE READ;
// SQLite: a read transaction of its own, which in WAL mode does not wait
// for a writer). A missing row, an empty one, or one whose state does
// not decode is the zero State. A busy SQLite database (outside WAL mode)
// is retried as Update retries it; errors are classified as Update's.
//
// Read is safe for concurrent use.
func (s *Store) Read(ctx context.Context, room string) (*store.State, error) {
	if s.dialect == MySQL && len(room) > MaxRoomLenMySQL {
		return nil, fmt.Errorf("waitingroom/sqlstore: room name of %d bytes is longer than the %d bytes MySQL can hold", len(room), MaxRoomLenMySQL)
	}
	for retries := 0; ; retries++ {
		if s.closed.Load() {
			return nil, store.ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("waitingroom/sqlstore: read room %q: %w", room, s.classify(err))
		}
		var data []byte
		err := s.db.QueryRowContext(ctx, s.q.read, room).Scan(&data)
		switch {
		case err == nil:
			st, err := store.Decode(data)
			if err != nil {
				return nil, fmt.Errorf("waitingroom/sqlstore: read room %q: %w", room, err)
			}
			return st, nil
		case errors.Is(err, sql.ErrNoRows):
			return &store.State{}, nil
		}
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		if ctx.Err() != nil || !s.dialect.retryable(err) {
			return nil, fmt.Errorf("waitingroom/sqlstore: read room %q: %w", room, s.classify(err))
		}
		if berr := s.backoff(ctx, retries); berr != nil {
			if berr == store.ErrClosed {
				return nil, berr
			}
			return nil, fmt.Errorf("waitingroom/sqlstore: read room %q: %w", room, s.classify(fmt.Errorf("%w while retrying after: %w", berr, err)))
		}
	}
}

// updateTx is one attempt of Update on PostgreSQL or MySQL. With create, it
// first makes sure the row exists.
func (s *Store) updateTx(ctx context.Context, room string, fn func(*store.State) error, create bool) (err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback()
		}
	}()
	if create {
		if _, err := tx.ExecContext(ctx, s.q.ensure, room); err != nil {
			return err
		}
	}
	var data []byte
	if err := tx.QueryRowContext(ctx, s.q.selectState, room).Scan(&data); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return errNoRow
		}
		return err
	}
	st, err := store.Decode(data)
	if err != nil {
		return &fnError{fmt.Errorf("waitingroom/sqlstore: room %q: %w", room, err)}
	}
	if err := fn(st); err != nil {
		return &fnError{err}
	}
	switch b := store.MarshalState(st); {
	case bytes.Equal(b, zeroState):
		// The zero State reads as a missing row: remove the row.
		if _, err := tx.ExecContext(ctx, s.q.remove, room); err != nil {
			return err
		}
	case !bytes.Equal(b, data):
		if _, err := tx.ExecContext(ctx, s.q.update, b, room); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	committed = true
	return nil
}

// updateSQLite is one attempt of Update on SQLite: an IMMEDIATE transaction
// on a dedicated connection.
func (s *Store) updateSQLite(ctx context.Context, room string, fn func(*store.State) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		if ctx.Err() != nil {
			// The driver may have been interrupted after SQLite began
			// the transaction: do not pool a connection in doubt.
			discard(conn)
		}
		return err
	}
	finished := false
	defer func() {
		if finished {
			return
		}
		// Roll back even when ctx is done: the connection goes back to
		// the pool and must not keep the transaction (and the lock).
		if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			discard(conn)
		}
	}()
	var data []byte
	found := true
	if err := conn.QueryRowContext(ctx, s.q.selectState, room).Scan(&data); err != nil {
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		found = false
	}
	st, err := store.Decode(data)
	if err != nil {
		return &fnError{fmt.Errorf("waitingroom/sqlstore: room %q: %w", room, err)}
	}
	if err := fn(st); err != nil {
		return &fnError{err}
	}
	b := store.MarshalState(st)
	switch {
	case bytes.Equal(b, zeroState):
		if found {
			_, err = conn.ExecContext(ctx, s.q.remove, room)
		}
	case !found:
		_, err = conn.ExecContext(ctx, s.q.insert, room, b)
	case !bytes.Equal(b, data):
		_, err = conn.ExecContext(ctx, s.q.update, b, room)
	}
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		// A COMMIT that fails with SQLITE_BUSY leaves the transaction
		// open: the deferred ROLLBACK ends it.
		return err
	}
	finished = true
	return nil
}

// discard makes database/sql close conn instead of returning it to the pool.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
}

// backoff sleeps before retry number n (from 0): a random duration between
// half and all of minBackoff·2ⁿ, capped at maxBackoff. It returns early with
// ctx's error or store.ErrClosed.
func (s *Store) backoff(ctx context.Context, n int) error {
	d := maxBackoff
	if n < 16 {
		d = min(minBackoff<<n, maxBackoff)
	}
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return store.ErrClosed
	case <-t.C:
		return nil
	}
}

// retryable reports whether err is a transient failure of a transaction of
// dialect d that is worth retrying from the start.
func (d Dialect) retryable(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	switch d {
	case Postgres:
		var se interface{ SQLState() string }
		if errors.As(err, &se) {
			switch se.SQLState() {
			case "40001", "40P01", "55P03": // serialization_failure, deadlock_detected, lock_not_available
				return true
			}
		}
		return containsAny(msg, "SQLSTATE 40001", "SQLSTATE 40P01", "SQLSTATE 55P03",
			"deadlock detected", "could not serialize access")
	case MySQL:
		// go-sql-driver/mysql: "Error 1213 (40001): Deadlock found ...".
		// 1213: deadlock; 1205: lock wait timeout; 1020: record changed
		// since last read (MariaDB snapshot isolation).
		return mysqlErrno(msg, "1213", "1205", "1020") ||
			containsAny(msg, "Deadlock found", "Lock wait timeout exceeded", "try restarting transaction")
	case SQLite:
		var ce interface{ Code() int }
		if errors.As(err, &ce) {
			switch ce.Code() & 0xff { // primary result code
			case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
				return true
			}
		}
		return containsAny(msg, "database is locked", "database table is locked",
			"database schema is locked", "SQLITE_BUSY", "SQLITE_LOCKED")
	}
	return false
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// mysqlErrno reports whether msg carries "Error N" for one of the numbers,
// not followed by another digit.
func mysqlErrno(msg string, numbers ...string) bool {
	for _, n := range numbers {
		p := "Error " + n
		for i := 0; ; {
			j := strings.Index(msg[i:], p)
			if j < 0 {
				break
			}
			end := i + j + len(p)
			if end == len(msg) || msg[end] < '0' || msg[end] > '9' {
				return true
			}
			i = end
		}
	}
	return false
}

// Close implements store.Store. It does not close the *sql.DB passed to New,
// which belongs to the caller. Updates waiting to retry return
// store.ErrClosed; later calls of Update, Read and CreateSchema return
// store.ErrClosed. Close is idempotent and safe for concurrent use.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.done)
	})
	return nil
}

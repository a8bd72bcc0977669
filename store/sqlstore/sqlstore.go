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
// # Connections
//
// Each Update, Read and history call holds one connection of db's pool
// while it runs, and a waiting room makes many at once: the aggregator of
// a fleet reads and writes up to 32 mailboxes at once every round, and
// instances that share a pool sync at once. database/sql closes every
// released connection beyond the pool's MaxIdleConns (2 unless set), and
// opening one again is costly (on PostgreSQL a server process starts for
// each): 32 queries at once on the default pool took 750 ms instead of 4
// on a loaded machine, and a fleet of 40 instances on one pool missed its
// deadlines through every fault and admitted nobody again. So the Stores
// on a pool count the calls they have in flight at once and, when that
// goes above 2 and the most so far, raise its MaxIdleConns to it, or to
// its MaxOpenConns when that is set: the connections they used at once
// stay open for the next round. They never set it otherwise (but for a
// pool without MaxOpenConns whose MaxIdleConns was set above what they
// use at once: they set it to that; set MaxOpenConns to keep more); to
// close connections left idle, use the pool's SetConnMaxIdleTime.
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
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-waitingroom/waitingroom/store"
)

var (
	_ store.Store  = (*Store)(nil)
	_ store.Reader = (*Store)(nil)
)

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
	pool    *pool // the calls in flight on db (pool.go)

	closed    atomic.Bool
	done      chan struct{}
	closeOnce sync.Once
}

// New returns a Store that keeps its rows in opts.Table of db, spoken to in
// dialect d. It validates its arguments and does not touch the database: it
// neither checks the connection nor creates the table (see Schema and
// CreateSchema). The Store does not own db: Close leaves it open. The
// Stores on db raise its MaxIdleConns as they need connections at once
// (see "Connections" in the package documentation).
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
		pool:    poolOf(db),
		done:    make(chan struct{}),
	}, nil
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

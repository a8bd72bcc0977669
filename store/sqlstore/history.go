package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/go-waitingroom/waitingroom/store"
)

var _ store.HistoryStore = (*Store)(nil)

// historyTable is the name of the history table beside table: table (its
// first 55 characters) followed by "_history".
func historyTable(table string) string { return table[:min(len(table), 55)] + "_history" }

// HistorySchema returns the CREATE TABLE IF NOT EXISTS statement of the
// table that keeps the rooms' history (store.HistoryStore) for dialect d,
// beside the state table named table (DefaultTable if empty): the same
// name (its first 55 characters) followed by "_history". It is one statement, safe to run again.
// CreateSchema runs it after Schema's. It returns "" for an unknown
// dialect or a table name that New would reject.
//
// PostgreSQL:
//
//	CREATE TABLE IF NOT EXISTS "waitingroom_state_history" (
//		room   TEXT   NOT NULL,
//		minute BIGINT NOT NULL,
//		data   BYTEA  NOT NULL,
//		PRIMARY KEY (room, minute)
//	)
//
// MySQL and MariaDB:
//
//	CREATE TABLE IF NOT EXISTS `waitingroom_state_history` (
//		room   VARBINARY(255) NOT NULL,
//		minute BIGINT         NOT NULL,
//		data   BLOB           NOT NULL,
//		PRIMARY KEY (room, minute)
//	) ENGINE=InnoDB
//
// SQLite:
//
//	CREATE TABLE IF NOT EXISTS "waitingroom_state_history" (
//		room   TEXT    NOT NULL,
//		minute INTEGER NOT NULL,
//		data   BLOB    NOT NULL,
//		PRIMARY KEY (room, minute)
//	)
//
// A room has at most store.HistoryMinutes rows (30 days, one a minute), of
// about 100 bytes of data each: some 5 MB a room with the key and the
// index. An instance of a release without history never reads the table;
// a store whose table is missing keeps the state all the same, and the
// room logs that it cannot write its history.
func HistorySchema(d Dialect, table string) string {
	if table == "" {
		table = DefaultTable
	}
	if !d.valid() || !validIdent(table) {
		return ""
	}
	t := quote(d, historyTable(table))
	switch d {
	case Postgres:
		return "CREATE TABLE IF NOT EXISTS " + t + " (\n" +
			"\troom   TEXT   NOT NULL,\n" +
			"\tminute BIGINT NOT NULL,\n" +
			"\tdata   BYTEA  NOT NULL,\n" +
			"\tPRIMARY KEY (room, minute)\n" +
			")"
	case MySQL:
		return "CREATE TABLE IF NOT EXISTS " + t + " (\n" +
			"\troom   VARBINARY(255) NOT NULL,\n" +
			"\tminute BIGINT         NOT NULL,\n" +
			"\tdata   BLOB           NOT NULL,\n" +
			"\tPRIMARY KEY (room, minute)\n" +
			") ENGINE=InnoDB"
	default: // SQLite
		return "CREATE TABLE IF NOT EXISTS " + t + " (\n" +
			"\troom   TEXT    NOT NULL,\n" +
			"\tminute INTEGER NOT NULL,\n" +
			"\tdata   BLOB    NOT NULL,\n" +
			"\tPRIMARY KEY (room, minute)\n" +
			")"
	}
}

// historyQueries are the statements of the history table.
type historyQueries struct {
	schema string
	// upsert writes a minute. Arguments: room, minute, data.
	upsert string
	// prune drops a room's minutes before one. Arguments: room, minute.
	prune string
	// read reads a room's minutes in a range. Arguments: room, from, to.
	read string
}

func buildHistoryQueries(d Dialect, table string) historyQueries {
	t := quote(d, historyTable(table))
	q := historyQueries{schema: HistorySchema(d, table)}
	switch d {
	case Postgres:
		q.upsert = "INSERT INTO " + t + " (room, minute, data) VALUES ($1, $2, $3) ON CONFLICT (room, minute) DO UPDATE SET data = EXCLUDED.data"
		q.prune = "DELETE FROM " + t + " WHERE room = $1 AND minute < $2"
		q.read = "SELECT minute, data FROM " + t + " WHERE room = $1 AND minute >= $2 AND minute < $3 ORDER BY minute"
	case MySQL:
		q.upsert = "INSERT INTO " + t + " (room, minute, data) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE data = VALUES(data)"
		q.prune = "DELETE FROM " + t + " WHERE room = ? AND minute < ?"
		q.read = "SELECT minute, data FROM " + t + " WHERE room = ? AND minute >= ? AND minute < ? ORDER BY minute"
	case SQLite:
		q.upsert = "INSERT OR REPLACE INTO " + t + " (room, minute, data) VALUES (?, ?, ?)"
		q.prune = "DELETE FROM " + t + " WHERE room = ? AND minute < ?"
		q.read = "SELECT minute, data FROM " + t + " WHERE room = ? AND minute >= ? AND minute < ? ORDER BY minute"
	}
	return q
}

// AppendHistory implements store.HistoryStore: one transaction that
// writes each record (replacing the room's row of that minute) and deletes
// the room's rows older than the retention. It is not retried: the room
// sends the records again with its next ones. Errors are classified as
// Update's are (store.ErrNoSchema: create the table of HistorySchema).
func (s *Store) AppendHistory(ctx context.Context, room string, recs []store.Record) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if len(recs) == 0 {
		return nil
	}
	if s.dialect == MySQL && len(room) > MaxRoomLenMySQL {
		return fmt.Errorf("waitingroom/sqlstore: room name of %d bytes is longer than the %d bytes MySQL can hold", len(room), MaxRoomLenMySQL)
	}
	newest := recs[0].Minute
	for _, r := range recs {
		if len(r.Data) > store.MaxRecordBytes {
			return fmt.Errorf("waitingroom/sqlstore: history record of %d bytes, more than %d", len(r.Data), store.MaxRecordBytes)
		}
		newest = max(newest, r.Minute)
	}
	fail := func(err error) error {
		return fmt.Errorf("waitingroom/sqlstore: append history of room %q to %s: %w", room, historyTable(s.table), s.classifyHistory(err))
	}
	defer s.pool.hold(s.db)()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, r := range recs {
		if _, err := tx.ExecContext(ctx, s.hq.upsert, room, r.Minute, r.Data); err != nil {
			return fail(err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.hq.prune, room, newest-store.HistoryMinutes+1); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return nil
}

// ReadHistory implements store.HistoryStore: one SELECT on the primary
// key's range.
func (s *Store) ReadHistory(ctx context.Context, room string, from, to int64) ([]store.Record, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if to <= from {
		return nil, nil
	}
	defer s.pool.hold(s.db)()
	rows, err := s.db.QueryContext(ctx, s.hq.read, room, from, to)
	if err != nil {
		return nil, fmt.Errorf("waitingroom/sqlstore: read history of room %q from %s: %w", room, historyTable(s.table), s.classifyHistory(err))
	}
	defer rows.Close()
	var out []store.Record
	for rows.Next() {
		var r store.Record
		var data sql.RawBytes
		if err := rows.Scan(&r.Minute, &data); err != nil {
			return nil, fmt.Errorf("waitingroom/sqlstore: read history of room %q: %w", room, err)
		}
		r.Data = append([]byte(nil), data...)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("waitingroom/sqlstore: read history of room %q: %w", room, s.classifyHistory(err))
	}
	return out, nil
}

package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/go-waitingroom/waitingroom/store"
)

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

// maxMissing bounds how often a row created by the ensure statement can be
// found missing right after, before Update gives up (someone keeps deleting
// it).
const maxMissing = 3

// errNoRow reports that the room's row does not exist (yet).
var errNoRow = errors.New("no row")

// fnError carries the error of the caller's fn, to be returned unchanged.
type fnError struct{ err error }

// Error returns the message of fn's error.
func (e *fnError) Error() string { return e.err.Error() }

// zeroState is the encoding of the zero State. Update removes the row of a
// room whose fn leaves it: a missing row reads the same.
var zeroState = store.MarshalState(&store.State{})

// updateTx is one attempt of Update on PostgreSQL or MySQL. With create, it
// first makes sure the row exists.
func (s *Store) updateTx(ctx context.Context, room string, fn func(*store.State) error, create bool) (err error) {
	defer s.pool.hold(s.db)()
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
	defer s.pool.hold(s.db)()
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

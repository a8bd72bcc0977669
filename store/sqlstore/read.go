package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-waitingroom/waitingroom/store"
)

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
		release := s.pool.hold(s.db)
		err := s.db.QueryRowContext(ctx, s.q.read, room).Scan(&data)
		release()
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

package sqlstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom/store"
)

// Backoff bounds between retries of a transient failure.
const (
	minBackoff = time.Millisecond
	maxBackoff = 100 * time.Millisecond
)

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

// containsAny reports whether s contains one of subs.
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

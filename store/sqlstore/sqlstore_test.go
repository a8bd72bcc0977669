package sqlstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
	"github.com/go-waitingroom/waitingroom/store/storetest"
)

// backend is one database the tests run against.
type backend struct {
	name    string
	service servicetest.Service
	dialect sqlstore.Dialect
	driver  string
	// dsn returns the data source name for one test.
	dsn func(tb testing.TB) string
}

var backends = []backend{
	{
		name: "postgres", service: servicetest.PostgreSQL, dialect: sqlstore.Postgres, driver: "pgx",
		dsn: func(testing.TB) string {
			return servicetest.PostgreSQL.URL()
		},
	},
	{
		name: "mysql", service: servicetest.MariaDB, dialect: sqlstore.MySQL, driver: "mysql",
		dsn: func(testing.TB) string {
			return servicetest.MariaDB.URL()
		},
	},
	{
		name: "sqlite", service: servicetest.Service{Name: "SQLite"}, dialect: sqlstore.SQLite, driver: "sqlite",
		dsn: func(tb testing.TB) string {
			// One file per test, shared by every client of the test. The
			// busy timeout makes writers wait for the lock inside SQLite.
			return "file:" + filepath.Join(tb.TempDir(), "waitingroom.db") +
				"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
		},
	},
}

// env is one test's database: a DSN and a random table of its own, created
// at setup and dropped at cleanup.
type env struct {
	backend
	dsn   string
	table string
	admin *sql.DB
}

// setup opens the backend, or skips (fails in CI) when it is unreachable,
// and creates a table with a random name.
func setup(tb testing.TB, b backend) *env {
	tb.Helper()
	e := &env{backend: b, dsn: b.dsn(tb), table: randomTable()}
	admin, err := sql.Open(b.driver, e.dsn)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = admin.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		servicetest.Unavailable(tb, b.service, err)
	}
	e.admin = admin
	s, err := sqlstore.New(admin, b.dialect, sqlstore.Options{Table: e.table})
	require.NoError(tb, err)
	require.NoError(tb, s.CreateSchema(ctx))
	tb.Cleanup(func() {
		_, err := admin.Exec("DROP TABLE IF EXISTS " + e.table)
		assert.NoError(tb, err)
		_, err = admin.Exec("DROP TABLE IF EXISTS " + e.table[:min(len(e.table), 55)] + "_history")
		assert.NoError(tb, err)
	})
	return e
}

func randomTable() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "wrtest_" + hex.EncodeToString(b[:])
}

// db opens a new *sql.DB (a separate client with its own connections),
// closed at cleanup.
func (e *env) db(tb testing.TB) *sql.DB {
	db, err := sql.Open(e.driver, e.dsn)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// store returns a Store on a new client, closed at cleanup.
func (e *env) store(tb testing.TB) *sqlstore.Store {
	s, err := sqlstore.New(e.db(tb), e.dialect, sqlstore.Options{Table: e.table})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// rebind turns ? placeholders into $n for PostgreSQL.
func (e *env) rebind(q string) string {
	if e.dialect != sqlstore.Postgres {
		return q
	}
	var sb strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&sb, "$%d", n)
			continue
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// row reads the raw state and updated_at of room; ok is false if there is
// no row.
func (e *env) row(t *testing.T, room string) (state []byte, updated string, ok bool) {
	t.Helper()
	err := e.admin.QueryRow(e.rebind("SELECT state, updated_at FROM "+e.table+" WHERE room = ?"), room).Scan(&state, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", false
	}
	require.NoError(t, err)
	return state, updated, true
}

// putRaw writes raw bytes as the state of room, bypassing the store.
func (e *env) putRaw(t *testing.T, room string, state []byte) {
	t.Helper()
	now := map[sqlstore.Dialect]string{
		sqlstore.Postgres: "now()",
		sqlstore.MySQL:    "UTC_TIMESTAMP(6)",
		sqlstore.SQLite:   "'2026-01-01T00:00:00.000Z'",
	}[e.dialect]
	_, err := e.admin.Exec(e.rebind("INSERT INTO "+e.table+" (room, state, updated_at) VALUES (?, ?, "+now+")"), room, state)
	require.NoError(t, err)
}

// forEach runs f as a subtest for every backend, each with its own env.
// The backends are separate servers, so their subtests run in parallel.
func forEach(t *testing.T, f func(t *testing.T, e *env)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, setup(t, b))
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func setEpoch(e uint64) func(*store.State) error {
	return func(st *store.State) error { st.Epoch = e; return nil }
}

func getState(t *testing.T, s store.Store, room string) store.State {
	t.Helper()
	var got store.State
	require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error { got = *st; return nil }))
	return got
}

func TestConformance(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		storetest.Run(t, func(tb testing.TB) store.Store { return e.store(tb) })
	})
}

func TestDialectString(t *testing.T) {
	for d, want := range map[sqlstore.Dialect]string{
		sqlstore.Postgres: "postgres",
		sqlstore.MySQL:    "mysql",
		sqlstore.SQLite:   "sqlite",
		0:                 "Dialect(0)",
		42:                "Dialect(42)",
	} {
		assert.Equal(t, want, d.String())
	}
}

func TestNewErrors(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "unused.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })

	tests := []struct {
		name    string
		db      *sql.DB
		dialect sqlstore.Dialect
		table   string
		wantErr string // "" for success
	}{
		{name: "default table", db: db, dialect: sqlstore.SQLite},
		{name: "plain", db: db, dialect: sqlstore.Postgres, table: "rooms"},
		{name: "underscore first", db: db, dialect: sqlstore.MySQL, table: "_rooms_2"},
		{name: "mixed case", db: db, dialect: sqlstore.SQLite, table: "Rooms"},
		{name: "63 chars", db: db, dialect: sqlstore.SQLite, table: strings.Repeat("a", 63)},
		{name: "64 chars", db: db, dialect: sqlstore.SQLite, table: strings.Repeat("a", 64), wantErr: "invalid table name"},
		{name: "digit first", db: db, dialect: sqlstore.SQLite, table: "1rooms", wantErr: "invalid table name"},
		{name: "dash", db: db, dialect: sqlstore.SQLite, table: "waiting-room", wantErr: "invalid table name"},
		{name: "space", db: db, dialect: sqlstore.SQLite, table: "waiting room", wantErr: "invalid table name"},
		{name: "schema qualified", db: db, dialect: sqlstore.Postgres, table: "public.rooms", wantErr: "invalid table name"},
		{name: "quote", db: db, dialect: sqlstore.Postgres, table: `rooms"`, wantErr: "invalid table name"},
		{name: "injection", db: db, dialect: sqlstore.MySQL, table: "t; DROP TABLE x", wantErr: "invalid table name"},
		{name: "non-ASCII", db: db, dialect: sqlstore.SQLite, table: "räume", wantErr: "invalid table name"},
		{name: "nil db", db: nil, dialect: sqlstore.SQLite, wantErr: "nil *sql.DB"},
		{name: "zero dialect", db: db, dialect: 0, wantErr: "unknown dialect Dialect(0)"},
		{name: "unknown dialect", db: db, dialect: 7, wantErr: "unknown dialect Dialect(7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := sqlstore.New(tt.db, tt.dialect, sqlstore.Options{Table: tt.table})
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.NotNil(t, s)
				require.NoError(t, s.Close())
				return
			}
			require.Error(t, err)
			assert.Nil(t, s)
			assert.True(t, strings.HasPrefix(err.Error(), "waitingroom/sqlstore: "), err.Error())
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestSchemaText(t *testing.T) {
	tests := []struct {
		dialect sqlstore.Dialect
		table   string
		want    []string // substrings; nil means Schema must return ""
	}{
		{sqlstore.Postgres, "", []string{`CREATE TABLE IF NOT EXISTS "waitingroom_state"`, "room       TEXT", "BYTEA", "TIMESTAMPTZ", "PRIMARY KEY"}},
		{sqlstore.MySQL, "rooms", []string{"CREATE TABLE IF NOT EXISTS `rooms`", "VARBINARY(255)", "LONGBLOB", "DATETIME(6)", "PRIMARY KEY", "ENGINE=InnoDB"}},
		{sqlstore.SQLite, "Rooms", []string{`CREATE TABLE IF NOT EXISTS "Rooms"`, "TEXT", "BLOB", "PRIMARY KEY"}},
		{sqlstore.SQLite, "bad-name", nil},
		{0, "rooms", nil},
		{9, "", nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%s", tt.dialect, tt.table), func(t *testing.T) {
			got := sqlstore.Schema(tt.dialect, tt.table)
			if tt.want == nil {
				assert.Empty(t, got)
				return
			}
			for _, w := range tt.want {
				assert.Contains(t, got, w)
			}
			assert.NotContains(t, got, ";", "Schema must be one statement")
		})
	}
}

func TestCreateSchema(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		// setup ran CreateSchema once: running it again must be a no-op
		// that keeps the rows.
		s := e.store(t)
		require.NoError(t, s.Update(ctx(t), "r", setEpoch(3)))
		require.NoError(t, s.CreateSchema(ctx(t)))
		require.NoError(t, s.CreateSchema(ctx(t)))
		assert.Equal(t, uint64(3), getState(t, s, "r").Epoch)

		// Schema runs as is, and CreateSchema on top of it is a no-op.
		other := randomTable()
		t.Cleanup(func() {
			_, _ = e.admin.Exec("DROP TABLE IF EXISTS " + other)
			_, _ = e.admin.Exec("DROP TABLE IF EXISTS " + other + "_history")
		})
		_, err := e.admin.Exec(sqlstore.Schema(e.dialect, other))
		require.NoError(t, err, "Schema must run as is")
		def, err := sqlstore.New(e.db(t), e.dialect, sqlstore.Options{Table: other})
		require.NoError(t, err)
		require.NoError(t, def.CreateSchema(ctx(t)))
		require.NoError(t, def.Update(ctx(t), "r", setEpoch(4)))
		var n int
		require.NoError(t, e.admin.QueryRow("SELECT COUNT(*) FROM "+other).Scan(&n))
		assert.Equal(t, 1, n)

		require.NoError(t, def.Close())
		assert.ErrorIs(t, def.CreateSchema(ctx(t)), store.ErrClosed)
	})
}

func TestMissingTable(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		s, err := sqlstore.New(e.db(t), e.dialect, sqlstore.Options{Table: randomTable()})
		require.NoError(t, err, "New must not touch the database")
		err = s.Update(ctx(t), "r", setEpoch(1))
		require.Error(t, err)
		assert.True(t, strings.HasPrefix(err.Error(), "waitingroom/sqlstore: "), err.Error())
	})
}

func TestUndecodableState(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		s := e.store(t)
		for name, raw := range map[string][]byte{
			"garbage":   {store.EncodingVersion, 0xff, 0x00, 0x13, 0x37},
			"truncated": store.MarshalState(storetest.Sample())[:10],
			"empty":     {},
		} {
			t.Run(name, func(t *testing.T) {
				room := storetest.RoomName("raw")
				e.putRaw(t, room, raw)
				var got store.State
				require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error {
					got = *st
					st.Epoch = 11
					return nil
				}))
				assert.Equal(t, store.State{}, got, "undecodable state must read as the zero State")
				data, _, ok := e.row(t, room)
				require.True(t, ok)
				st, err := store.UnmarshalState(data)
				require.NoError(t, err)
				assert.Equal(t, uint64(11), st.Epoch, "the new state replaces the garbage")
			})
		}
	})
}

// A state of another encoding version (another release's) is refused,
// never taken for a lost state and overwritten.
func TestOtherVersionRefused(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		s := e.store(t)
		room := storetest.RoomName("raw")
		raw := append([]byte{store.EncodingVersion + 1}, store.MarshalState(storetest.Sample())[1:]...)
		e.putRaw(t, room, raw)
		err := s.Update(ctx(t), room, func(*store.State) error {
			t.Error("fn called with a state of another version")
			return nil
		})
		require.ErrorIs(t, err, store.ErrVersion)
		assert.ErrorContains(t, err, "encoding version")
		_, err = s.Read(ctx(t), room)
		require.ErrorIs(t, err, store.ErrVersion)
		data, _, ok := e.row(t, room)
		require.True(t, ok)
		assert.Equal(t, raw, data, "the row is left as it was")
	})
}

func TestFnErrorWritesNothing(t *testing.T) {
	errBoom := errors.New("boom")
	fail := func(st *store.State) error { st.Epoch = 99; st.Version = 7; return errBoom }
	forEach(t, func(t *testing.T, e *env) {
		s := e.store(t)

		t.Run("new room", func(t *testing.T) {
			room := storetest.RoomName("fnerr-new")
			err := s.Update(ctx(t), room, fail)
			assert.True(t, err == errBoom, "fn's error must be returned unchanged, got %v", err)
			_, _, ok := e.row(t, room)
			assert.False(t, ok, "a failed fn must not even create the row")
		})

		t.Run("existing room", func(t *testing.T) {
			room := storetest.RoomName("fnerr-old")
			require.NoError(t, s.Update(ctx(t), room, setEpoch(5)))
			before, updatedBefore, ok := e.row(t, room)
			require.True(t, ok)
			time.Sleep(5 * time.Millisecond) // a write would move updated_at
			err := s.Update(ctx(t), room, fail)
			assert.True(t, err == errBoom, "fn's error must be returned unchanged, got %v", err)
			after, updatedAfter, ok := e.row(t, room)
			require.True(t, ok)
			assert.Equal(t, before, after)
			assert.Equal(t, updatedBefore, updatedAfter)
		})

		t.Run("unchanged state is not written", func(t *testing.T) {
			room := storetest.RoomName("noop")
			require.NoError(t, s.Update(ctx(t), room, setEpoch(5)))
			_, updatedBefore, _ := e.row(t, room)
			time.Sleep(5 * time.Millisecond)
			require.NoError(t, s.Update(ctx(t), room, func(*store.State) error { return nil }))
			_, updatedAfter, _ := e.row(t, room)
			assert.Equal(t, updatedBefore, updatedAfter)
		})
	})
}

func TestRoomNamesAreExact(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		s := e.store(t)
		base := storetest.RoomName("exact")
		rooms := []string{base, base + " ", strings.ToUpper(base), base + "\u00e9", ""}
		for i, room := range rooms {
			require.NoError(t, s.Update(ctx(t), room, setEpoch(uint64(i+1))), "room %q", room)
		}
		for i, room := range rooms {
			assert.Equal(t, uint64(i+1), getState(t, s, room).Epoch, "room %q", room)
		}
	})
}

func TestMySQLRoomLength(t *testing.T) {
	e := setup(t, backends[1])
	s := e.store(t)
	long := strings.Repeat("x", sqlstore.MaxRoomLenMySQL)
	require.NoError(t, s.Update(ctx(t), long, setEpoch(1)))
	assert.Equal(t, uint64(1), getState(t, s, long).Epoch)
	err := s.Update(ctx(t), long+"y", setEpoch(2))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "waitingroom/sqlstore: room name of 256 bytes")
	assert.Equal(t, uint64(1), getState(t, s, long).Epoch, "a longer name must not be truncated onto another room")
}

func TestCloseLeavesDBUsable(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		db := e.db(t)
		s, err := sqlstore.New(db, e.dialect, sqlstore.Options{Table: e.table})
		require.NoError(t, err)
		require.NoError(t, s.Update(ctx(t), "r", setEpoch(8)))
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "Close must be idempotent")
		assert.ErrorIs(t, s.Update(ctx(t), "r", setEpoch(9)), store.ErrClosed)

		require.NoError(t, db.PingContext(ctx(t)), "Close must not close the caller's *sql.DB")
		s2, err := sqlstore.New(db, e.dialect, sqlstore.Options{Table: e.table})
		require.NoError(t, err)
		defer s2.Close()
		assert.Equal(t, uint64(8), getState(t, s2, "r").Epoch)
	})
}

// lockRoom holds the lock an Update of room needs, from a separate client,
// until the returned function is called.
func (e *env) lockRoom(t *testing.T, room string) (release func()) {
	t.Helper()
	c := ctx(t)
	conn, err := e.db(t).Conn(c)
	require.NoError(t, err)
	if e.dialect == sqlstore.SQLite {
		_, err = conn.ExecContext(c, "BEGIN IMMEDIATE")
		require.NoError(t, err)
		return func() {
			_, err := conn.ExecContext(c, "ROLLBACK")
			assert.NoError(t, err)
			_ = conn.Close()
		}
	}
	tx, err := conn.BeginTx(c, nil)
	require.NoError(t, err)
	var data []byte
	require.NoError(t, tx.QueryRowContext(c, e.rebind("SELECT state FROM "+e.table+" WHERE room = ? FOR UPDATE"), room).Scan(&data))
	return func() {
		assert.NoError(t, tx.Rollback())
		_ = conn.Close()
	}
}

func TestLockedRoomHonoursContext(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		s := e.store(t)
		room := storetest.RoomName("locked")
		require.NoError(t, s.Update(ctx(t), room, setEpoch(1)))
		release := e.lockRoom(t, room)

		c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := s.Update(c, room, setEpoch(2))
		release()
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(start), 5*time.Second)

		// The store's connections came back clean: no transaction left open.
		for i := range 5 {
			require.NoError(t, s.Update(ctx(t), room, setEpoch(uint64(10+i))))
		}
		assert.Equal(t, uint64(14), getState(t, s, room).Epoch)
	})
}

func TestCloseStopsRetries(t *testing.T) {
	b := backends[2] // SQLite: the store itself retries SQLITE_BUSY
	e := setup(t, b)
	e.dsn = strings.Replace(e.dsn, "busy_timeout(10000)", "busy_timeout(0)", 1)
	s := e.store(t)
	room := storetest.RoomName("closing")
	require.NoError(t, s.Update(ctx(t), room, setEpoch(1)))
	release := e.lockRoom(t, room)
	defer release()
	errc := make(chan error, 1)
	go func() { errc <- s.Update(ctx(t), room, setEpoch(2)) }()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, s.Close())
	select {
	case err := <-errc:
		assert.ErrorIs(t, err, store.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Update kept retrying after Close")
	}
}

func BenchmarkUpdate(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			e := setup(b, be)
			storetest.Benchmark(b, func(tb testing.TB) store.Store { return e.store(tb) })
		})
	}
}

// Without a busy timeout, SQLite fails BEGIN IMMEDIATE at once with
// SQLITE_BUSY while another connection writes: the store's own retries must
// still serialize every update.
func TestSQLiteWithoutBusyTimeout(t *testing.T) {
	t.Parallel()
	e := setup(t, backends[2])
	e.dsn = strings.Replace(e.dsn, "busy_timeout(10000)", "busy_timeout(0)", 1)
	storetest.Run(t, func(tb testing.TB) store.Store { return e.store(tb) })
}

// TestCreateSchemaConcurrent starts many processes' worth of CreateSchema at
// once against a missing table: every one succeeds.
func TestCreateSchemaConcurrent(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := setup(t, b)
			for range 5 {
				_, err := e.admin.Exec("DROP TABLE IF EXISTS " + e.table)
				require.NoError(t, err)
				var wg sync.WaitGroup
				for range 8 {
					s := e.store(t)
					wg.Go(func() { assert.NoError(t, s.CreateSchema(context.Background())) })
				}
				wg.Wait()
			}
		})
	}
}

// TestZeroStateRemovesRow: an Update that leaves the zero State deletes
// the room's row (a fleet mailbox of an instance that is gone goes so), and
// one on a room without a row creates none; the room reads as before.
func TestZeroStateRemovesRow(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		s := e.store(t)
		room := storetest.RoomName("remove")
		require.NoError(t, s.Update(ctx(t), room, setEpoch(5)))
		_, _, ok := e.row(t, room)
		require.True(t, ok)
		require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error { *st = store.State{}; return nil }))
		_, _, ok = e.row(t, room)
		assert.False(t, ok, "the row of a state left zero is deleted")
		require.NoError(t, s.Update(ctx(t), room, func(*store.State) error { return nil }))
		_, _, ok = e.row(t, room)
		assert.False(t, ok, "an Update leaving a missing room zero creates no row")
		got, err := s.Read(ctx(t), room)
		require.NoError(t, err)
		assert.Equal(t, store.State{}, *got)
		require.NoError(t, s.Update(ctx(t), room, setEpoch(6)))
		assert.Equal(t, uint64(6), getState(t, s, room).Epoch)
	})
}

// TestReadUndecodable: a row whose state does not decode, or is empty,
// reads as the zero State, as Update presents it.
func TestReadUndecodable(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		s := e.store(t)
		for _, raw := range [][]byte{{store.EncodingVersion, 0xff, 1, 2}, {}} {
			room := storetest.RoomName("undecodable")
			e.putRaw(t, room, raw)
			got, err := s.Read(ctx(t), room)
			require.NoError(t, err)
			assert.Equal(t, store.State{}, *got)
		}
	})
}

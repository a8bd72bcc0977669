package sqlstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
)

// errorCase is one way of misconfiguring or losing a database, and what
// the store must say about it.
type errorCase struct {
	name string
	// open returns the database the store uses and the table it names.
	open func(t *testing.T, e *env) (db *sql.DB, table string)
	// createSchema calls CreateSchema instead of Update.
	createSchema bool
	// readable: Read succeeds (the user may read the table), where
	// Update fails.
	readable bool
	timeout  time.Duration // 0: 10 s
	want     error
	// driver checks that the driver's error stays in the chain.
	driver func(err error) bool
	// message lists what the error must say (the fix), {table} standing for
	// the table's name.
	message []string
}

var noSchemaMessage = []string{"table {table} does not exist", "(*sqlstore.Store).CreateSchema", "sqlstore.Schema("}

// errorCases are the cases of each backend, against the real servers.
var errorCases = map[string][]errorCase{
	"postgres": {
		{
			name: "missing table", open: missingTable, want: store.ErrNoSchema,
			driver: sqlState("42P01"), message: append(noSchemaMessage, `sqlstore.Schema(sqlstore.Postgres, "{table}")`),
		},
		{
			name: "unknown role", want: store.ErrAuth, driver: sqlState("28000"), message: []string{"user and password of the DSN"},
			open: func(t *testing.T, e *env) (*sql.DB, string) {
				return e.open(t, pgDSN(t, e.dsn, func(u *url.URL) { u.User = url.UserPassword("wrtest_nobody", "secret") })), e.table
			},
		},
		{
			name: "role without privileges", want: store.ErrAuth, driver: sqlState("42501"), message: []string{"SELECT, INSERT and UPDATE table {table}"},
			open: func(t *testing.T, e *env) (*sql.DB, string) {
				return e.open(t, pgDSN(t, e.dsn, func(u *url.URL) { u.User = url.User(pgRole(t, e)) })), e.table
			},
		},
		{
			name: "CreateSchema by a role that may not create tables", createSchema: true, want: store.ErrAuth, driver: sqlState("42501"),
			message: []string{"(and CREATE, for CreateSchema)"},
			open: func(t *testing.T, e *env) (*sql.DB, string) {
				return e.open(t, pgDSN(t, e.dsn, func(u *url.URL) { u.User = url.User(pgRole(t, e)) })), randomTable()
			},
		},
		{
			name: "closed port", want: store.ErrUnavailable, driver: isNetError, message: []string{"connection refused"},
			open: func(t *testing.T, e *env) (*sql.DB, string) {
				return e.open(t, pgDSN(t, e.dsn, func(u *url.URL) { u.Host = closedPort(t) })), e.table
			},
		},
		{
			name: "server that never answers", timeout: 200 * time.Millisecond, want: store.ErrUnavailable, driver: isTimeout,
			open: func(t *testing.T, e *env) (*sql.DB, string) {
				return e.open(t, pgDSN(t, e.dsn, func(u *url.URL) { u.Host = silentServer(t) })), e.table
			},
		},
	},
	"mysql": {
		{
			name: "missing table", open: missingTable, want: store.ErrNoSchema,
			driver: mysqlErr(1146), message: append(noSchemaMessage, `sqlstore.Schema(sqlstore.MySQL, "{table}")`),
		},
		{
			name: "wrong password", want: store.ErrAuth, driver: mysqlErr(1045), message: []string{"user and password of the DSN"},
			open: func(t *testing.T, e *env) (*sql.DB, string) {
				return e.open(t, myDSN(t, e.dsn, func(c *mysql.Config) { c.Passwd = "not-the-password" })), e.table
			},
		},
		{
			name: "user without access to the database", want: store.ErrAuth, driver: mysqlErr(1044), message: []string{"user and password of the DSN"},
			open: func(t *testing.T, e *env) (*sql.DB, string) {
				user, password := myUser(t, e, "")
				return e.open(t, myDSN(t, e.dsn, func(c *mysql.Config) { c.User, c.Passwd = user, password })), e.table
			},
		},
		{
			name: "user who may only read the table", readable: true, want: store.ErrAuth, driver: mysqlErr(1142), message: []string{"SELECT, INSERT and UPDATE table {table}"},
			open: func(t *testing.T, e *env) (*sql.DB, string) {
				user, password := myUser(t, e, "SELECT ON "+e.table)
				return e.open(t, myDSN(t, e.dsn, func(c *mysql.Config) { c.User, c.Passwd = user, password })), e.table
			},
		},
		{
			name: "closed port", want: store.ErrUnavailable, driver: isNetError, message: []string{"connection refused"},
			open: func(t *testing.T, e *env) (*sql.DB, string) {
				return e.open(t, myDSN(t, e.dsn, func(c *mysql.Config) { c.Addr = closedPort(t) })), e.table
			},
		},
		{
			name: "server that never answers", timeout: 200 * time.Millisecond, want: store.ErrUnavailable, driver: isTimeout,
			open: func(t *testing.T, e *env) (*sql.DB, string) {
				return e.open(t, myDSN(t, e.dsn, func(c *mysql.Config) { c.Addr = silentServer(t) })), e.table
			},
		},
	},
	"sqlite": {
		{
			name: "missing table", open: missingTable, want: store.ErrNoSchema,
			driver: sqliteCode(1), message: append(noSchemaMessage, `sqlstore.Schema(sqlstore.SQLite, "{table}")`),
		},
		{
			name: "read-only database", readable: true, want: store.ErrAuth, driver: sqliteCode(8), message: []string{"permissions of the file"},
			open: func(t *testing.T, e *env) (*sql.DB, string) {
				return e.open(t, e.dsn+"&mode=ro"), e.table
			},
		},
		{
			name: "directory that does not exist", want: store.ErrUnavailable, driver: sqliteCode(14),
			open: func(t *testing.T, e *env) (*sql.DB, string) {
				return e.open(t, "file:"+filepath.Join(t.TempDir(), "missing", "waitingroom.db")), e.table
			},
		},
	},
}

// TestErrorClasses checks that Update, Read and CreateSchema say what is wrong:
// a missing table is store.ErrNoSchema naming CreateSchema and Schema, a
// refused user or privilege is store.ErrAuth, a database that cannot be
// reached or does not answer is store.ErrUnavailable, and the driver's own
// error stays in the chain.
func TestErrorClasses(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, b)
			for _, tc := range errorCases[b.name] {
				t.Run(tc.name, func(t *testing.T) {
					db, table := tc.open(t, e)
					s, err := sqlstore.New(db, e.dialect, sqlstore.Options{Table: table})
					require.NoError(t, err)
					ctx, cancel := context.WithTimeout(context.Background(), cmpOr(tc.timeout, 10*time.Second))
					defer cancel()
					if tc.createSchema {
						err = s.CreateSchema(ctx)
					} else {
						err = s.Update(ctx, "errors", setEpoch(1))
					}
					check(t, err, tc, table)
					if tc.createSchema {
						return
					}
					// Read: the same errors, classified the same way.
					ctx, cancel = context.WithTimeout(context.Background(), cmpOr(tc.timeout, 10*time.Second))
					defer cancel()
					_, err = s.Read(ctx, "errors")
					if tc.readable {
						assert.NoError(t, err)
						return
					}
					check(t, err, tc, table)
				})
			}
		})
	}
}

// check asserts that err is of tc's class alone, keeps the driver's error
// and names the fix.
func check(t *testing.T, err error, tc errorCase, table string) {
	t.Helper()
	require.Error(t, err)
	t.Log(err)
	assert.ErrorIs(t, err, tc.want)
	for _, other := range []error{store.ErrNoSchema, store.ErrAuth, store.ErrUnavailable} {
		if other != tc.want {
			assert.NotErrorIs(t, err, other)
		}
	}
	assert.True(t, tc.driver(err), "the driver's error must stay in the chain: %v", err)
	assert.Contains(t, err.Error(), "waitingroom/sqlstore: ")
	for _, m := range tc.message {
		assert.Contains(t, err.Error(), strings.ReplaceAll(m, "{table}", table))
	}
}

// TestCancelledIsNotClassified: a context the caller cancels is not an
// outage of the database.
func TestCancelledIsNotClassified(t *testing.T) {
	for _, b := range backends[:2] { // the servers
		t.Run(b.name, func(t *testing.T) {
			e := &env{backend: b, dsn: b.dsn(t)}
			var db *sql.DB
			if b.dialect == sqlstore.Postgres {
				db = e.open(t, pgDSN(t, e.dsn, func(u *url.URL) { u.Host = silentServer(t) }))
			} else {
				db = e.open(t, myDSN(t, e.dsn, func(c *mysql.Config) { c.Addr = silentServer(t) }))
			}
			s, err := sqlstore.New(db, b.dialect, sqlstore.Options{})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			err = s.Update(ctx, "r", setEpoch(1))
			require.ErrorIs(t, err, context.Canceled)
			assert.NotErrorIs(t, err, store.ErrUnavailable)
		})
	}
}

func missingTable(t *testing.T, e *env) (*sql.DB, string) { return e.db(t), randomTable() }

// open opens dsn with the backend's driver, closed at cleanup.
func (e *env) open(t *testing.T, dsn string) *sql.DB {
	db, err := sql.Open(e.driver, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func pgDSN(t *testing.T, dsn string, change func(*url.URL)) string {
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	change(u)
	return u.String()
}

func myDSN(t *testing.T, dsn string, change func(*mysql.Config)) string {
	c, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	change(c)
	return c.FormatDSN()
}

// pgRole creates a PostgreSQL role that may log in and nothing else,
// dropped at cleanup, and returns its name.
func pgRole(t *testing.T, e *env) string {
	name := "wrtest_" + randomHex()
	_, err := e.admin.Exec("CREATE ROLE " + name + " LOGIN")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = e.admin.Exec("DROP ROLE IF EXISTS " + name) })
	return name
}

// myUser creates a MariaDB user with the privileges of grant ("" for none),
// dropped at cleanup, and returns its name and password.
func myUser(t *testing.T, e *env, grant string) (user, password string) {
	user, password = "wrtest_"+randomHex(), randomHex()
	_, err := e.admin.Exec(fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", user, password))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = e.admin.Exec(fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%'", user)) })
	if grant != "" {
		_, err := e.admin.Exec(fmt.Sprintf("GRANT %s TO '%s'@'%%'", grant, user))
		require.NoError(t, err)
	}
	return user, password
}

func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func sqlState(code string) func(error) bool {
	return func(err error) bool {
		var se interface{ SQLState() string }
		return errors.As(err, &se) && se.SQLState() == code
	}
}

func mysqlErr(n uint16) func(error) bool {
	return func(err error) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && me.Number == n
	}
}

func sqliteCode(code int) func(error) bool {
	return func(err error) bool {
		var ce interface{ Code() int }
		return errors.As(err, &ce) && ce.Code()&0xff == code
	}
}

func isNetError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// silentServer returns the address of a server that accepts connections and
// never answers, closed at cleanup.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
			close(done)
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().String()
}

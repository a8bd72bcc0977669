package faults

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
)

// sqlServer is what the SQL scenarios need of a server of the test's own.
type sqlServer struct {
	dialect sqlstore.Dialect
	driver  string
	dsn     string
	admin   *sql.DB // the test's own session, for the faults
	stop    func()
	start   func() error
}

// lockFor is how long another session holds the room's row.
const lockFor = 5 * time.Second

// runSQL runs the SQL scenarios against srv, each on a table of its own.
func runSQL(t *testing.T, srv sqlServer) {
	for _, tc := range []struct {
		name  string
		kind  faultKind
		fault func(t *testing.T, table string) (inject, heal func(*testing.T))
	}{
		{
			name: "server restarted",
			kind: faultKind{outage: true},
			fault: func(*testing.T, string) (func(*testing.T), func(*testing.T)) {
				return func(*testing.T) { srv.stop() },
					func(t *testing.T) { require.NoError(t, srv.start(), "restarting the server") }
			},
		},
		{
			name: "row deleted",
			kind: faultKind{loss: true},
			fault: func(_ *testing.T, table string) (func(*testing.T), func(*testing.T)) {
				return func(t *testing.T) {
					_, err := srv.admin.Exec("DELETE FROM " + table)
					require.NoError(t, err)
				}, nil
			},
		},
		{
			name: "row locked by another session",
			kind: faultKind{outage: true},
			fault: func(_ *testing.T, table string) (func(*testing.T), func(*testing.T)) {
				done := make(chan error, 1)
				return func(t *testing.T) {
						locked := make(chan error, 1)
						go func() { done <- holdLock(srv.admin, table, locked) }()
						require.NoError(t, <-locked, "locking the row")
					}, func(t *testing.T) {
						require.NoError(t, <-done, "holding the lock")
					}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := randomName("faults_")
			s, err := sqlstore.New(srv.admin, srv.dialect, sqlstore.Options{Table: table})
			require.NoError(t, err)
			require.NoError(t, s.CreateSchema(context.Background()))
			t.Cleanup(func() { _, _ = srv.admin.Exec("DROP TABLE IF EXISTS " + table) })
			inject, heal := tc.fault(t, table)
			r := runScenario(t, scenario{
				name: srv.dialect.String() + " " + tc.name,
				kind: tc.kind,
				open: func(t *testing.T, _ int) store.Store {
					db, err := sql.Open(srv.driver, srv.dsn)
					require.NoError(t, err)
					t.Cleanup(func() { _ = db.Close() })
					st, err := sqlstore.New(db, srv.dialect, sqlstore.Options{Table: table})
					require.NoError(t, err)
					return st
				},
				inject: inject,
				heal:   heal,
			})
			r.check(t)
		})
	}
}

// holdLock locks every row of table in a transaction of its own session,
// reports on locked once it holds them, keeps them for lockFor and
// commits.
func holdLock(db *sql.DB, table string, locked chan<- error) error {
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		locked <- err
		return err
	}
	rows, err := tx.QueryContext(ctx, "SELECT room FROM "+table+" FOR UPDATE")
	if err == nil {
		for rows.Next() {
		}
		err = rows.Close()
	}
	locked <- err
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	time.Sleep(lockFor)
	return tx.Commit()
}

// TestPostgres runs the SQL scenarios against a PostgreSQL cluster of the
// test's own.
func TestPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: three scenarios of about 20 s against a PostgreSQL cluster")
	}
	// The three-instance suites run side by side (each against servers
	// of its own, mostly waiting on their timelines); the fleet's run
	// alone before them.
	t.Parallel()
	srv := StartPostgres(t)
	admin := srv.DB()
	admin.SetMaxOpenConns(4)
	runSQL(t, sqlServer{dialect: sqlstore.Postgres, driver: "pgx", dsn: srv.DSN(), admin: admin, stop: srv.Stop, start: srv.Start})
}

// TestMariaDB runs the SQL scenarios against a MariaDB server of the
// test's own.
func TestMariaDB(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: three scenarios of about 20 s against a MariaDB server")
	}
	// The three-instance suites run side by side (each against servers
	// of its own, mostly waiting on their timelines); the fleet's run
	// alone before them.
	t.Parallel()
	srv := StartMariaDB(t)
	admin := srv.DB()
	admin.SetMaxOpenConns(4)
	runSQL(t, sqlServer{dialect: sqlstore.MySQL, driver: "mysql", dsn: srv.DSN(), admin: admin, stop: srv.Stop, start: srv.Start})
}

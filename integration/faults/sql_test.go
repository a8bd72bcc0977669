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

// fleetPool is the connections the instances of a fleet scenario share
// on SQL: one pool, as BenchmarkFleet's instances do (40 pools of their
// own would ask more of the server than its max_connections).
const fleetPool = 40

// runSQL runs the SQL scenarios against srv, each on a table of its own:
// with three instances, or with fleet, fleetRooms syncing through an
// aggregator, on a pool of fleetPool connections they share, and one
// scenario more, the aggregator stopped.
func runSQL(t *testing.T, srv sqlServer, fleet bool) {
	type sqlFault struct {
		name  string
		kind  faultKind
		fault func(t *testing.T, table string, r **run) (inject, heal func(*testing.T))
	}
	faults := []sqlFault{
		{
			name: "server restarted",
			kind: faultKind{outage: true},
			fault: func(*testing.T, string, **run) (func(*testing.T), func(*testing.T)) {
				return func(*testing.T) { srv.stop() },
					func(t *testing.T) { require.NoError(t, srv.start(), "restarting the server") }
			},
		},
		{
			name: "row deleted",
			kind: faultKind{loss: true},
			fault: func(_ *testing.T, table string, _ **run) (func(*testing.T), func(*testing.T)) {
				return func(t *testing.T) {
					_, err := srv.admin.Exec("DELETE FROM " + table)
					require.NoError(t, err)
				}, nil
			},
		},
		{
			name: "row locked by another session",
			kind: faultKind{outage: true},
			fault: func(_ *testing.T, table string, _ **run) (func(*testing.T), func(*testing.T)) {
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
	}
	if fleet {
		faults = append(faults, sqlFault{
			name: "the aggregator stopped",
			fault: func(_ *testing.T, _ string, r **run) (func(*testing.T), func(*testing.T)) {
				return func(t *testing.T) { stopAggregator(t, *r) }, nil
			},
		})
	}
	for _, tc := range faults {
		t.Run(tc.name, func(t *testing.T) {
			table := randomName("faults_")
			s, err := sqlstore.New(srv.admin, srv.dialect, sqlstore.Options{Table: table})
			require.NoError(t, err)
			require.NoError(t, s.CreateSchema(context.Background()))
			t.Cleanup(func() { _, _ = srv.admin.Exec("DROP TABLE IF EXISTS " + table) })
			var r *run
			inject, heal := tc.fault(t, table, &r)
			var shared *sql.DB
			if fleet {
				db, err := sql.Open(srv.driver, srv.dsn)
				require.NoError(t, err)
				db.SetMaxOpenConns(fleetPool)
				t.Cleanup(func() { _ = db.Close() })
				shared = db
			}
			sc := scenario{
				name: srv.dialect.String() + " " + tc.name,
				kind: tc.kind,
				open: func(t *testing.T, _ int) store.Store {
					db := shared
					if db == nil {
						var err error
						db, err = sql.Open(srv.driver, srv.dsn)
						require.NoError(t, err)
						t.Cleanup(func() { _ = db.Close() })
					}
					st, err := sqlstore.New(db, srv.dialect, sqlstore.Options{Table: table})
					require.NoError(t, err)
					return st
				},
				inject: inject,
				heal:   heal,
				setup:  func(rr *run) { r = rr },
			}
			if fleet {
				sc.name = srv.dialect.String() + " fleet " + tc.name
				sc.rooms, sc.fleet = fleetRooms, true
			}
			r = runScenario(t, sc)
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
	t.Parallel() // beside the other suites and the fleets (fleetTurn)
	runSQL(t, postgres(t), false)
}

// TestMariaDB runs the SQL scenarios against a MariaDB server of the
// test's own.
func TestMariaDB(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: three scenarios of about 20 s against a MariaDB server")
	}
	t.Parallel() // beside the other suites and the fleets (fleetTurn)
	runSQL(t, mariaDB(t), false)
}

// TestMariaDBFleet runs the SQL scenarios with a fleet of fleetRooms
// instances syncing through an aggregator against a MariaDB server of the
// test's own: restarted, every row of the room deleted (the state, the
// mailboxes, the view), every row locked by another session for lockFor,
// and the aggregator stopped. TestPostgresFleet runs them against
// PostgreSQL.
func TestMariaDBFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: four scenarios of about 20 s, each with 40 instances, against a MariaDB server")
	}
	t.Parallel() // from the start, beside the Redis fleets' turns (fleetTurn)
	runSQL(t, mariaDB(t), true)
}

// TestPostgresFleet runs the scenarios of TestMariaDBFleet against a
// PostgreSQL cluster of the test's own. The instances share a pool of
// fleetPool connections left with database/sql's default MaxIdleConns
// (2), as TestMariaDBFleet's do: the stores keep open the connections
// they use at once (sqlstore's "Connections"). When they did not, every
// burst of the aggregator's calls started a server process a connection,
// and the fleet admitted nobody again after any of these faults.
func TestPostgresFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: four scenarios of about 20 s, each with 40 instances, against a PostgreSQL cluster")
	}
	t.Parallel() // from the start, beside the Redis fleets' turns (fleetTurn)
	runSQL(t, postgres(t), true)
}

// postgres starts a PostgreSQL cluster of the test's own.
func postgres(t *testing.T) sqlServer {
	srv := StartPostgres(t)
	admin := srv.DB()
	admin.SetMaxOpenConns(4)
	return sqlServer{dialect: sqlstore.Postgres, driver: "pgx", dsn: srv.DSN(), admin: admin, stop: srv.Stop, start: srv.Start}
}

// mariaDB starts a MariaDB server of the test's own.
func mariaDB(t *testing.T) sqlServer {
	srv := StartMariaDB(t)
	admin := srv.DB()
	admin.SetMaxOpenConns(4)
	return sqlServer{dialect: sqlstore.MySQL, driver: "mysql", dsn: srv.DSN(), admin: admin, stop: srv.Stop, start: srv.Start}
}

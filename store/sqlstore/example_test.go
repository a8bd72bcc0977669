package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
)

// A store on SQLite. For PostgreSQL, open the *sql.DB with
// sql.Open("pgx", "postgres://...") and pass sqlstore.Postgres; for MySQL or
// MariaDB, sql.Open("mysql", "user@tcp(host:3306)/db") and sqlstore.MySQL.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "sqlstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// Every connection waits up to 5 s for the write lock.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "rooms.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close() // the Store never closes db

	s, err := sqlstore.New(db, sqlstore.SQLite, sqlstore.Options{}) // table "waitingroom_state"
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ctx := context.Background()
	// New does not create the table: do it once at start-up (or run
	// sqlstore.Schema(sqlstore.SQLite, "") with your migration tool).
	if err := s.CreateSchema(ctx); err != nil {
		log.Fatal(err)
	}

	for range 2 {
		err := s.Update(ctx, "checkout", func(st *store.State) error {
			st.Version++
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	_ = s.Update(ctx, "checkout", func(st *store.State) error {
		fmt.Println("version", st.Version)
		return nil
	})
	// Output: version 2
}

package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
)

// A store whose table was never created says so, and how to fix it.
func Example_noSchema() {
	dir, err := os.MkdirTemp("", "sqlstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "rooms.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	s, err := sqlstore.New(db, sqlstore.SQLite, sqlstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ctx := context.Background()
	touch := func(st *store.State) error { st.Version++; return nil }
	err = s.Update(ctx, "checkout", touch)
	fmt.Println(errors.Is(err, store.ErrNoSchema))
	fmt.Println(err)

	if err := s.CreateSchema(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Update(ctx, "checkout", touch))
	// Output:
	// true
	// waitingroom/sqlstore: update room "checkout": waitingroom/store: no schema: table waitingroom_state does not exist; create it with (*sqlstore.Store).CreateSchema, or run the statement of sqlstore.Schema(sqlstore.SQLite, "waitingroom_state"): SQL logic error: no such table: waitingroom_state (1)
	// <nil>
}

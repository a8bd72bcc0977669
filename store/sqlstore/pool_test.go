package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
)

// TestPoolKeepsConnections runs rounds of Updates at once, as a fleet's
// aggregator does, on a pool left as sql.Open makes it (MaxIdleConns 2)
// or with MaxOpenConns: the connections the Stores used at once stay open
// for the next round, none is closed for want of room among the idle
// ones (on PostgreSQL, each connection opened again starts a server
// process). Stores sharing a pool count together.
func TestPoolKeepsConnections(t *testing.T) {
	cases := []struct {
		name    string
		maxOpen int // 0: unlimited
		stores  int // Stores on the pool
		callers int // Updates at once
	}{
		{name: "default pool, one store", callers: 12},
		{name: "default pool, stores sharing it", stores: 6, callers: 12},
		{name: "bounded pool", maxOpen: 8, stores: 3, callers: 16},
	}
	for _, b := range backends {
		if b.dialect == sqlstore.SQLite {
			continue // one writer at a time: its Updates never run at once
		}
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, b)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					db := e.db(t)
					if tc.maxOpen > 0 {
						db.SetMaxOpenConns(tc.maxOpen)
					}
					stores := make([]*sqlstore.Store, max(tc.stores, 1))
					for i := range stores {
						s, err := sqlstore.New(db, e.dialect, sqlstore.Options{Table: e.table})
						require.NoError(t, err)
						t.Cleanup(func() { _ = s.Close() })
						stores[i] = s
					}
					together := tc.callers // in their transactions at once
					if tc.maxOpen > 0 {
						together = min(together, tc.maxOpen)
					}
					const rounds = 3
					for round := range rounds {
						updateAtOnce(t, stores, tc.callers, together, fmt.Sprintf("%s-%s-%d", b.name, tc.name, round))
					}
					st := db.Stats()
					assert.Zero(t, st.MaxIdleClosed, "connections closed for want of room among the idle ones: %+v", st)
					assert.Equal(t, together, st.OpenConnections, "the connections used at once stay open: %+v", st)
				})
			}
		})
	}
}

// updateAtOnce runs callers Updates of rooms of their own across stores,
// together of them at once in their transactions (each waits in fn for
// the others, 10 s at most).
func updateAtOnce(t *testing.T, stores []*sqlstore.Store, callers, together int, prefix string) {
	t.Helper()
	var arrived atomic.Int64
	all := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() {
			c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			errs[i] = stores[i%len(stores)].Update(c, fmt.Sprintf("%s-%d", prefix, i), func(st *store.State) error {
				if arrived.Add(1) >= int64(together) {
					once.Do(func() { close(all) })
				}
				select {
				case <-all:
				case <-time.After(10 * time.Second):
				}
				st.Epoch++
				return nil
			})
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

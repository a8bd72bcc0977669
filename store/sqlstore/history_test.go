package sqlstore_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
)

func TestHistorySchemaText(t *testing.T) {
	long := strings.Repeat("a", 63)
	tests := []struct {
		dialect sqlstore.Dialect
		table   string
		want    []string // substrings; nil means HistorySchema must return ""
	}{
		{sqlstore.Postgres, "", []string{`CREATE TABLE IF NOT EXISTS "waitingroom_state_history"`, "BIGINT", "BYTEA", "PRIMARY KEY (room, minute)"}},
		{sqlstore.MySQL, "rooms", []string{"CREATE TABLE IF NOT EXISTS `rooms_history`", "VARBINARY(255)", "BLOB", "PRIMARY KEY (room, minute)", "ENGINE=InnoDB"}},
		{sqlstore.SQLite, long, []string{`"` + long[:55] + `_history"`, "INTEGER", "BLOB"}},
		{sqlstore.SQLite, "bad-name", nil},
		{0, "rooms", nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%s", tt.dialect, tt.table), func(t *testing.T) {
			got := sqlstore.HistorySchema(tt.dialect, tt.table)
			if tt.want == nil {
				assert.Empty(t, got)
				return
			}
			for _, w := range tt.want {
				assert.Contains(t, got, w)
			}
			assert.NotContains(t, got, ";", "HistorySchema must be one statement")
		})
	}
}

// A database of a release without history (the state table only) keeps
// the state; the history says what to create, and once the table is there
// (CreateSchema on the live database) it works.
func TestHistoryTableMissing(t *testing.T) {
	forEach(t, func(t *testing.T, e *env) {
		table := randomTable()
		t.Cleanup(func() {
			_, _ = e.admin.Exec("DROP TABLE IF EXISTS " + table)
			_, _ = e.admin.Exec("DROP TABLE IF EXISTS " + table + "_history")
		})
		_, err := e.admin.Exec(sqlstore.Schema(e.dialect, table))
		require.NoError(t, err)
		s, err := sqlstore.New(e.db(t), e.dialect, sqlstore.Options{Table: table})
		require.NoError(t, err)
		require.NoError(t, s.Update(ctx(t), "r", setEpoch(2)))
		err = s.AppendHistory(ctx(t), "r", []store.Record{{Minute: 1, Data: []byte("x")}})
		require.ErrorIs(t, err, store.ErrNoSchema)
		assert.Contains(t, err.Error(), "sqlstore.HistorySchema(")
		_, err = s.ReadHistory(ctx(t), "r", 0, 2)
		require.ErrorIs(t, err, store.ErrNoSchema)
		assert.Equal(t, uint64(2), getState(t, s, "r").Epoch, "the state is untouched")

		require.NoError(t, s.CreateSchema(ctx(t)))
		require.NoError(t, s.AppendHistory(ctx(t), "r", []store.Record{{Minute: 1, Data: []byte("x")}}))
		recs, err := s.ReadHistory(ctx(t), "r", 0, 2)
		require.NoError(t, err)
		assert.Equal(t, []store.Record{{Minute: 1, Data: []byte("x")}}, recs)
		assert.Equal(t, uint64(2), getState(t, s, "r").Epoch)
	})
}

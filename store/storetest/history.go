package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
)

// testHistory checks store.HistoryStore, for stores that implement it:
// records kept by minute, replaced, bounded, isolated between rooms and
// shared between clients; none of it touching the State.
func testHistory(t *testing.T, newStore func(tb testing.TB) store.Store) {
	if _, ok := open(t, newStore).(store.HistoryStore); !ok {
		t.Skip("the store keeps no history (store.HistoryStore)")
	}
	hist := func(t *testing.T) store.HistoryStore { return open(t, newStore).(store.HistoryStore) }
	rec := func(m int64, data string) store.Record { return store.Record{Minute: m, Data: []byte(data)} }
	const m0 = 29_833_333

	t.Run("Empty", func(t *testing.T) {
		got, err := hist(t).ReadHistory(ctx(t), RoomName("hist-empty"), 0, 1<<40)
		require.NoError(t, err)
		assert.Empty(t, got)
		require.NoError(t, hist(t).AppendHistory(ctx(t), RoomName("hist-none"), nil), "appending nothing")
	})

	t.Run("RangeAndReplace", func(t *testing.T) {
		h := hist(t)
		room := RoomName("hist-range")
		require.NoError(t, h.AppendHistory(ctx(t), room, []store.Record{rec(m0+2, "c"), rec(m0, "a"), rec(m0+1, "b")}))
		require.NoError(t, h.AppendHistory(ctx(t), room, []store.Record{rec(m0+1, "B"), rec(m0+3, "d\x00\xff")}))
		got, err := h.ReadHistory(ctx(t), room, m0, m0+4)
		require.NoError(t, err)
		assert.Equal(t, []store.Record{rec(m0, "a"), rec(m0+1, "B"), rec(m0+2, "c"), rec(m0+3, "d\x00\xff")}, got,
			"oldest first, a minute written again replaced, bytes kept as they are")
		got, err = h.ReadHistory(ctx(t), room, m0+1, m0+3)
		require.NoError(t, err)
		assert.Equal(t, []store.Record{rec(m0+1, "B"), rec(m0+2, "c")}, got, "from included, to excluded")
		got, err = h.ReadHistory(ctx(t), room, m0+3, m0+1)
		require.NoError(t, err)
		assert.Empty(t, got, "an empty range")
	})

	t.Run("Retention", func(t *testing.T) {
		h := hist(t)
		room := RoomName("hist-retention")
		require.NoError(t, h.AppendHistory(ctx(t), room, []store.Record{rec(m0, "old"), rec(m0+1, "kept")}))
		require.NoError(t, h.AppendHistory(ctx(t), room, []store.Record{rec(m0+store.HistoryMinutes, "new")}))
		got, err := h.ReadHistory(ctx(t), room, 0, 1<<40)
		require.NoError(t, err)
		assert.Equal(t, []store.Record{rec(m0+1, "kept"), rec(m0+store.HistoryMinutes, "new")}, got,
			"at most HistoryMinutes minutes are kept")
	})

	t.Run("TooLarge", func(t *testing.T) {
		h := hist(t)
		room := RoomName("hist-large")
		big := make([]byte, store.MaxRecordBytes+1)
		require.Error(t, h.AppendHistory(ctx(t), room, []store.Record{rec(m0, "a"), {Minute: m0 + 1, Data: big}}))
		got, err := h.ReadHistory(ctx(t), room, 0, 1<<40)
		require.NoError(t, err)
		assert.Empty(t, got, "nothing written")
		require.NoError(t, h.AppendHistory(ctx(t), room, []store.Record{{Minute: m0, Data: big[:store.MaxRecordBytes]}}), "MaxRecordBytes fits")
	})

	t.Run("IsolatedAndShared", func(t *testing.T) {
		a, b := hist(t), hist(t)
		ra, rb := RoomName("hist-a"), RoomName("hist-b")+":x/y z\u00e9"
		require.NoError(t, a.AppendHistory(ctx(t), ra, []store.Record{rec(m0, "a")}))
		require.NoError(t, a.AppendHistory(ctx(t), rb, []store.Record{rec(m0, "b")}))
		got, err := b.ReadHistory(ctx(t), ra, m0, m0+1)
		require.NoError(t, err)
		assert.Equal(t, []store.Record{rec(m0, "a")}, got, "another client sees the record, of its room only")
		got, err = b.ReadHistory(ctx(t), rb, m0, m0+1)
		require.NoError(t, err)
		assert.Equal(t, []store.Record{rec(m0, "b")}, got)
	})

	t.Run("ApartFromState", func(t *testing.T) {
		s := open(t, newStore)
		room := RoomName("hist-state")
		require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error { st.Epoch = 5; return nil }))
		require.NoError(t, s.(store.HistoryStore).AppendHistory(ctx(t), room, []store.Record{rec(m0, "a")}))
		require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error {
			assert.Equal(t, uint64(5), st.Epoch, "the history leaves the state alone")
			return nil
		}))
	})

	t.Run("CanceledAndClosed", func(t *testing.T) {
		c, cancel := context.WithCancel(context.Background())
		cancel()
		h := hist(t)
		_, err := h.ReadHistory(c, RoomName("hist-canceled"), 0, 1)
		assert.ErrorIs(t, err, context.Canceled)
		s := newStore(t)
		require.NoError(t, s.Close())
		h = s.(store.HistoryStore)
		assert.ErrorIs(t, h.AppendHistory(context.Background(), RoomName("hist-closed"), []store.Record{rec(m0, "a")}), store.ErrClosed)
		_, err = h.ReadHistory(context.Background(), RoomName("hist-closed"), 0, 1)
		assert.ErrorIs(t, err, store.ErrClosed)
	})
}

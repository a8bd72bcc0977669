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
	for _, c := range []struct {
		name string
		test func(*testing.T, func(tb testing.TB) store.Store)
	}{
		{"Empty", testHistoryEmpty},
		{"RangeAndReplace", testHistoryRange},
		{"Retention", testHistoryRetention},
		{"TooLarge", testHistoryTooLarge},
		{"IsolatedAndShared", testHistoryIsolated},
		{"ApartFromState", testHistoryApart},
		{"CanceledAndClosed", testHistoryClosed},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, newStore) })
	}
}

// m0 is the first minute the history tests write.
const m0 = 29_833_333

// openHistory opens a client of newStore, as its HistoryStore.
func openHistory(t *testing.T, newStore func(tb testing.TB) store.Store) store.HistoryStore {
	return open(t, newStore).(store.HistoryStore)
}

// rec returns the record of minute m holding data.
func rec(m int64, data string) store.Record { return store.Record{Minute: m, Data: []byte(data)} }

// testHistoryEmpty: a room without history reads none, and appending
// nothing succeeds.
func testHistoryEmpty(t *testing.T, newStore func(tb testing.TB) store.Store) {
	got, err := openHistory(t, newStore).ReadHistory(ctx(t), RoomName("hist-empty"), 0, 1<<40)
	require.NoError(t, err)
	assert.Empty(t, got)
	require.NoError(t, openHistory(t, newStore).AppendHistory(ctx(t), RoomName("hist-none"), nil), "appending nothing")
}

// testHistoryRange: records read oldest first within [from, to), a minute
// written again replaced, their bytes kept as they are.
func testHistoryRange(t *testing.T, newStore func(tb testing.TB) store.Store) {
	h := openHistory(t, newStore)
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
}

// testHistoryRetention: at most store.HistoryMinutes minutes are kept.
func testHistoryRetention(t *testing.T, newStore func(tb testing.TB) store.Store) {
	h := openHistory(t, newStore)
	room := RoomName("hist-retention")
	require.NoError(t, h.AppendHistory(ctx(t), room, []store.Record{rec(m0, "old"), rec(m0+1, "kept")}))
	require.NoError(t, h.AppendHistory(ctx(t), room, []store.Record{rec(m0+store.HistoryMinutes, "new")}))
	got, err := h.ReadHistory(ctx(t), room, 0, 1<<40)
	require.NoError(t, err)
	assert.Equal(t, []store.Record{rec(m0+1, "kept"), rec(m0+store.HistoryMinutes, "new")}, got,
		"at most HistoryMinutes minutes are kept")
}

// testHistoryTooLarge: an append with a record over store.MaxRecordBytes
// fails and writes nothing; one of MaxRecordBytes fits.
func testHistoryTooLarge(t *testing.T, newStore func(tb testing.TB) store.Store) {
	h := openHistory(t, newStore)
	room := RoomName("hist-large")
	big := make([]byte, store.MaxRecordBytes+1)
	require.Error(t, h.AppendHistory(ctx(t), room, []store.Record{rec(m0, "a"), {Minute: m0 + 1, Data: big}}))
	got, err := h.ReadHistory(ctx(t), room, 0, 1<<40)
	require.NoError(t, err)
	assert.Empty(t, got, "nothing written")
	require.NoError(t, h.AppendHistory(ctx(t), room, []store.Record{{Minute: m0, Data: big[:store.MaxRecordBytes]}}), "MaxRecordBytes fits")
}

// testHistoryIsolated: another client reads a room's records, and those of
// that room only.
func testHistoryIsolated(t *testing.T, newStore func(tb testing.TB) store.Store) {
	a, b := openHistory(t, newStore), openHistory(t, newStore)
	ra, rb := RoomName("hist-a"), RoomName("hist-b")+":x/y z\u00e9"
	require.NoError(t, a.AppendHistory(ctx(t), ra, []store.Record{rec(m0, "a")}))
	require.NoError(t, a.AppendHistory(ctx(t), rb, []store.Record{rec(m0, "b")}))
	got, err := b.ReadHistory(ctx(t), ra, m0, m0+1)
	require.NoError(t, err)
	assert.Equal(t, []store.Record{rec(m0, "a")}, got, "another client sees the record, of its room only")
	got, err = b.ReadHistory(ctx(t), rb, m0, m0+1)
	require.NoError(t, err)
	assert.Equal(t, []store.Record{rec(m0, "b")}, got)
}

// testHistoryApart: appending history leaves the room's State alone.
func testHistoryApart(t *testing.T, newStore func(tb testing.TB) store.Store) {
	s := open(t, newStore)
	room := RoomName("hist-state")
	require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error { st.Epoch = 5; return nil }))
	require.NoError(t, s.(store.HistoryStore).AppendHistory(ctx(t), room, []store.Record{rec(m0, "a")}))
	require.NoError(t, s.Update(ctx(t), room, func(st *store.State) error {
		assert.Equal(t, uint64(5), st.Epoch, "the history leaves the state alone")
		return nil
	}))
}

// testHistoryClosed: a read with a canceled context fails with
// context.Canceled; an append and a read on a closed store fail with
// store.ErrClosed.
func testHistoryClosed(t *testing.T, newStore func(tb testing.TB) store.Store) {
	c, cancel := context.WithCancel(context.Background())
	cancel()
	h := openHistory(t, newStore)
	_, err := h.ReadHistory(c, RoomName("hist-canceled"), 0, 1)
	assert.ErrorIs(t, err, context.Canceled)
	s := newStore(t)
	require.NoError(t, s.Close())
	h = s.(store.HistoryStore)
	assert.ErrorIs(t, h.AppendHistory(context.Background(), RoomName("hist-closed"), []store.Record{rec(m0, "a")}), store.ErrClosed)
	_, err = h.ReadHistory(context.Background(), RoomName("hist-closed"), 0, 1)
	assert.ErrorIs(t, err, store.ErrClosed)
}

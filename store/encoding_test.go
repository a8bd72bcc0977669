package store_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/storetest"
)

func TestMarshalRoundTrip(t *testing.T) {
	for name, s := range map[string]*store.State{
		"zero":   {},
		"sample": storetest.Sample(),
		"negative": {Sessions: []store.Session{{ID: 3, Admitted: -5, Seen: -9, End: -6}, {ID: 1, Admitted: 0, Seen: 0}},
			Waiting: []store.Cell{{Bucket: 10, Slot: 2, N: -4}, {Bucket: 3, Slot: 99, N: 1}}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := store.UnmarshalState(store.MarshalState(s))
			require.NoError(t, err)
			assert.Equal(t, s, got)
		})
	}
}

func TestUnmarshalEmpty(t *testing.T) {
	got, err := store.UnmarshalState(nil)
	require.NoError(t, err)
	assert.Equal(t, &store.State{}, got)
}

func TestUnmarshalCorrupt(t *testing.T) {
	good := store.MarshalState(storetest.Sample())
	// Version 1 counted active visitors by 10-second slot: not read.
	v1 := store.MarshalState(&store.State{Encoding: store.PreviousEncoding, Epoch: 1})
	v1[0] = 1
	cases := map[string][]byte{
		"version":   {9, 1, 2},
		"version 1": v1,
		"trailing":  append(append([]byte{}, good...), 0),
		"huge len":  {good[0], 1, 1, 2, 0xff, 0xff, 0xff, 0xff, 0x0f},
		// A count of active visitors is a number, not a length: a few
		// bytes could ask for any number of legacy records.
		"huge legacy count": {store.PreviousEncoding, 1, 1, 2, 0, 0, 0, 0, 1, 0, 0x80, 0x80, 0x80, 0x10, 0, 0, 0},
		"v2 trailing":       append(golden(t), 0),
	}
	for i := 1; i < len(golden(t)); i++ {
		cases["v2 truncated"+string(rune('a'+i%26))+string(rune('0'+i/26))] = golden(t)[:i]
	}
	for i := 1; i < len(good); i++ {
		cases["truncated"+string(rune('a'+i%26))+string(rune('0'+i/26))] = good[:i]
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := store.UnmarshalState(b)
			assert.ErrorIs(t, err, store.ErrCorrupt)
			if name == "huge legacy count" {
				assert.ErrorContains(t, err, "active visitors counted by second")
			}
		})
	}
}

func FuzzUnmarshalState(f *testing.F) {
	f.Add(store.MarshalState(storetest.Sample()))
	f.Add([]byte{3})
	f.Add([]byte{2})
	f.Add(golden(f))
	previous := storetest.Sample()
	previous.Encoding = store.PreviousEncoding
	f.Add(store.MarshalState(previous))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := store.UnmarshalState(b)
		if err != nil {
			return
		}
		// Whatever decodes must encode and decode to the same state
		// (compared encoded: a Traffic of NaN is not equal to itself).
		enc := store.MarshalState(s)
		again, err := store.UnmarshalState(enc)
		require.NoError(t, err)
		assert.Equal(t, enc, store.MarshalState(again))
		assert.Equal(t, s.Encoding, again.Encoding)
	})
}

// golden is the state that a room of the previous release wrote
// (testdata/README.md).
func golden(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile("testdata/state-v2.bin")
	require.NoError(tb, err)
	return b
}

// The previous release's state reads with its active visitors as legacy
// records, and writes back byte for byte as that release wrote it.
func TestPreviousEncodingGolden(t *testing.T) {
	b := golden(t)
	require.Equal(t, byte(store.PreviousEncoding), b[0])
	s, err := store.UnmarshalState(b)
	require.NoError(t, err)

	const t0 = 1_779_897_240 // 2026-05-27 15:54:00 UTC, in Unix seconds
	assert.Equal(t, store.PreviousEncoding, s.Encoding)
	assert.Equal(t, uint64(3), s.Version)
	assert.Equal(t, int64(t0+72)*1000, s.Clock)
	assert.Zero(t, s.Grace)
	assert.Contains(t, string(s.Settings), `"totalActiveUsers":10`)
	assert.Equal(t, []store.Session{
		{ID: store.MinLegacyID, Admitted: t0, Seen: t0},
		{ID: store.MinLegacyID + 1, Admitted: t0, Seen: t0},
		{ID: store.MinLegacyID + 2, Admitted: t0 + 70, Seen: t0 + 70},
	}, s.Sessions)
	assert.Equal(t, []store.Count{{Key: t0 / 60, N: 3}}, s.Admitted)
	assert.Equal(t, []store.Cell{
		{Bucket: t0 / 60, Slot: (t0 + 40) / 10, N: 3},
		{Bucket: t0/60 + 1, Slot: (t0 + 60) / 10, N: 3},
	}, s.Waiting)
	require.Len(t, s.Instances, 1)
	assert.Regexp(t, "^[0-9a-f]{16}$", s.Instances[0].ID)
	assert.Equal(t, int64(t0+72)*1000, s.Instances[0].Seen)
	assert.Equal(t, int64(1), s.Instances[0].Grant)

	assert.Equal(t, b, store.MarshalState(s), "written back in the previous encoding, byte for byte")
	s.Encoding = 0
	again, err := store.UnmarshalState(store.MarshalState(s))
	require.NoError(t, err)
	assert.Equal(t, s, again, "the legacy records carry over to the current encoding")
}

func TestMarshalPreviousEncoding(t *testing.T) {
	const now = 1_790_000_000
	s := &store.State{
		Encoding: store.PreviousEncoding,
		Clock:    now*1000 + 500,
		Sessions: []store.Session{
			{ID: 10, Admitted: now - 100, Seen: now - 5},
			{ID: 11, Admitted: now - 90, Seen: now - 5, End: now + 10},
			{ID: 12, Admitted: now - 80, Seen: now - 2, End: now},      // ended
			{ID: 13, Admitted: now - 70, Seen: now - 1, Revoked: true}, // revoked
			{ID: 14, Admitted: now - 60, Seen: now - 300},
			{ID: store.MinLegacyID, Admitted: now - 300, Seen: now - 300},
			{ID: store.MinLegacyID + 1, Admitted: now - 3, Seen: now - 3},
		},
		Admitted: []store.Count{{Key: now / 60, N: 4}},
	}
	b := store.MarshalState(s)
	require.Equal(t, byte(store.PreviousEncoding), b[0])
	got, err := store.UnmarshalState(b)
	require.NoError(t, err)
	// Counted by second: two at now-300, one at now-5 twice, one at now-3.
	assert.Equal(t, []store.Session{
		{ID: store.MinLegacyID, Admitted: now - 300, Seen: now - 300},
		{ID: store.MinLegacyID + 1, Admitted: now - 300, Seen: now - 300},
		{ID: store.MinLegacyID + 2, Admitted: now - 5, Seen: now - 5},
		{ID: store.MinLegacyID + 3, Admitted: now - 5, Seen: now - 5},
		{ID: store.MinLegacyID + 4, Admitted: now - 3, Seen: now - 3},
	}, got.Sessions)
	assert.Equal(t, s.Admitted, got.Admitted)
	assert.Equal(t, store.PreviousEncoding, got.Encoding)
}

// Active counts of the previous encoding that are unsorted, repeated,
// zero or negative read as the visitors they count (none for a second
// whose counts add up to zero or less), in one order, so that reading
// what was written gives the same state.
func TestPreviousEncodingCounts(t *testing.T) {
	// Version, epoch, version, clock, grace, settings, settings version,
	// config hash, then the active counts: keys as deltas, zigzag varints.
	b := []byte{store.PreviousEncoding, 1, 1, 0, 0, 0, 0, 0,
		5,     // five counts
		20, 2, // key 10: 1
		0x13, 4, // key 0: 2
		0, 3, // key 0: -2
		2, 4, // key 1: 2
		20, 3, // key 11: -2
		0, 0, 0} // admitted, waiting, instances
	s, err := store.UnmarshalState(b)
	require.NoError(t, err)
	assert.Equal(t, []store.Session{
		{ID: store.MinLegacyID, Admitted: 1, Seen: 1},
		{ID: store.MinLegacyID + 1, Admitted: 1, Seen: 1},
		{ID: store.MinLegacyID + 2, Admitted: 10, Seen: 10},
	}, s.Sessions)
	again, err := store.UnmarshalState(store.MarshalState(s))
	require.NoError(t, err)
	assert.Equal(t, s, again)
}

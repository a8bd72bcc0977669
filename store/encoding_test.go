package store_test

import (
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
	// A state of a previous format (active counts by second or by
	// 10-second slot) must not be read as this one's.
	previous := append([]byte{2}, good[1:]...)
	cases := map[string][]byte{
		"version":          {9, 1, 2},
		"previous version": previous,
		"trailing":         append(append([]byte{}, good...), 0),
		"huge len":         {good[0], 1, 1, 2, 0xff, 0xff, 0xff, 0xff, 0x0f},
	}
	for i := 1; i < len(good); i++ {
		cases["truncated"+string(rune('a'+i%26))+string(rune('0'+i/26))] = good[:i]
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := store.UnmarshalState(b)
			assert.ErrorIs(t, err, store.ErrCorrupt)
		})
	}
}

func FuzzUnmarshalState(f *testing.F) {
	f.Add(store.MarshalState(storetest.Sample()))
	f.Add([]byte{3})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := store.UnmarshalState(b)
		if err != nil {
			return
		}
		// Whatever decodes must encode and decode to the same state.
		again, err := store.UnmarshalState(store.MarshalState(s))
		require.NoError(t, err)
		assert.Equal(t, s, again)
	})
}

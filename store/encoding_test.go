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
		"places": {Epoch: 1, Version: 3, Places: []uint64{0, 1, 1 << 40, 1<<53 - 1}},
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
	cases := map[string][]byte{
		"trailing": append(append([]byte{}, good...), 0),
		"huge len": {good[0], 1, 1, 2, 0xff, 0xff, 0xff, 0xff, 0x0f},
	}
	// A shuffle's list must ascend, below 2^53.
	list := func(ps ...uint64) []byte { return store.MarshalState(&store.State{Epoch: 1, Places: ps}) }
	cases["places twice"] = list(5, 5)
	cases["places descending"] = append(list(5, 6)[:len(list(5, 6))-1], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)
	cases["place of 2^53"] = list(1 << 53)
	cases["no places"] = append(list(1)[:len(list(1))-2], 0)
	for i := 1; i < len(good); i++ {
		cases["truncated"+string(rune('a'+i%26))+string(rune('0'+i/26))] = good[:i]
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := store.UnmarshalState(b)
			assert.ErrorIs(t, err, store.ErrCorrupt)
			got, err := store.Decode(b)
			require.NoError(t, err, "a state that cannot be read is a lost one")
			assert.Equal(t, &store.State{}, got)
		})
	}
}

// A state of another encoding version, another release's, is refused:
// never read as corrupt, and so never taken for a lost state and
// overwritten.
func TestUnmarshalOtherVersion(t *testing.T) {
	good := store.MarshalState(storetest.Sample())
	for _, v := range []byte{0, 1, 2, 3, store.EncodingVersion + 1, 0xff} {
		b := append([]byte{v}, good[1:]...)
		_, err := store.UnmarshalState(b)
		require.ErrorIs(t, err, store.ErrVersion, "version %d", v)
		assert.NotErrorIs(t, err, store.ErrCorrupt)
		assert.ErrorContains(t, err, "encoding version")
		st, err := store.Decode(b)
		assert.ErrorIs(t, err, store.ErrVersion)
		assert.Nil(t, st)
	}
}

func FuzzUnmarshalState(f *testing.F) {
	f.Add(store.MarshalState(storetest.Sample()))
	f.Add([]byte{store.EncodingVersion})
	f.Add([]byte{2})
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
	})
}

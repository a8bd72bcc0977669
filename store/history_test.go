package store_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/storetest"
)

func TestTallyRoundTrip(t *testing.T) {
	tl := storetest.Sample().Tallies[0]
	tl.Admitted = 17
	b := store.MarshalTally(&tl)
	assert.Less(t, len(b), 100)
	got, err := store.UnmarshalTally(b)
	require.NoError(t, err)
	assert.Equal(t, &tl, got)
	// A later release may append fields: ignored.
	got, err = store.UnmarshalTally(append(b, 1, 2, 3))
	require.NoError(t, err)
	assert.Equal(t, &tl, got)
	for _, bad := range [][]byte{nil, {0}, b[:len(b)-3]} {
		_, err := store.UnmarshalTally(bad)
		assert.ErrorIs(t, err, store.ErrCorrupt)
	}
}

func FuzzUnmarshalTally(f *testing.F) {
	tl := storetest.Sample().Tallies[0]
	f.Add(store.MarshalTally(&tl))
	f.Fuzz(func(t *testing.T, b []byte) {
		tl, err := store.UnmarshalTally(b)
		if err != nil {
			return
		}
		again, err := store.UnmarshalTally(store.MarshalTally(tl))
		require.NoError(t, err)
		assert.Equal(t, tl, again)
	})
}

package store_test

import (
	"bytes"
	"slices"
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

// A minute's part of the lottery's record: the odds of the intervals
// that began in it, and a seed it revealed, beside another period's
// commitment alone. A record written without (by v0.1.0) reads as none.
func TestTallyLottery(t *testing.T) {
	tl := lotteryTally()
	b := store.MarshalTally(&tl)
	got, err := store.UnmarshalTally(b)
	require.NoError(t, err)
	assert.Equal(t, &tl, got)
	got, err = store.UnmarshalTally(append(b, 1, 2, 3))
	require.NoError(t, err)
	assert.Equal(t, &tl, got, "a later release may append fields")

	old := storetest.Sample().Tallies[0]
	b0 := store.MarshalTally(&old)
	got, err = store.UnmarshalTally(b0[:len(b0)-1]) // without the lottery's count, as v0.1.0 wrote it
	require.NoError(t, err)
	assert.Equal(t, &old, got)

	for _, n := range []int{1, 20, 60, 70, 100} { // cut inside each part
		_, err := store.UnmarshalTally(b[:len(b)-n])
		assert.ErrorIs(t, err, store.ErrCorrupt, "cut %d bytes short", n)
	}
	bad := lotteryTally()
	bad.Lottery[1].Odds[0].Odds = 1.5
	_, err = store.UnmarshalTally(store.MarshalTally(&bad))
	assert.ErrorIs(t, err, store.ErrCorrupt, "odds outside [0, 1]")
	flag := slices.Clone(b)
	flag[bytes.Index(flag, tl.Lottery[0].Commitment[:])+32] = 7 // neither "no seed" nor "a seed"
	_, err = store.UnmarshalTally(flag)
	assert.ErrorIs(t, err, store.ErrCorrupt)

	// A minute of 1-second intervals stays well within a record.
	tl.Lottery[1].Interval = 1000
	tl.Lottery[1].Odds = nil
	for i := range 60 {
		tl.Lottery[1].Odds = append(tl.Lottery[1].Odds, store.Odds{Interval: 1_790_000_000 + int64(i), Odds: 1 / float64(i+3)})
	}
	assert.Less(t, len(store.MarshalTally(&tl)), store.MaxRecordBytes/4)
}

func lotteryTally() store.Tally {
	tl := storetest.Sample().Tallies[0]
	tl.Lottery = []store.Period{
		{Start: 1_789_996_400, End: 1_790_000_000, Commitment: [32]byte{9, 8, 7}, Seed: [32]byte{1, 2, 3}},
		{Start: 1_790_000_000, End: 1_790_003_600, Commitment: [32]byte{31: 4}, Interval: 20_000,
			Odds: []store.Odds{{Interval: 89_500_000, Odds: 0.25}, {Interval: 89_500_001, Odds: 1}, {Interval: 89_500_002, Odds: 0}},
			Cuts: []store.Odds{{Interval: 89_500_001, Odds: 0.01}, {Interval: 89_500_002, Odds: 0.03}}, Prequeued: 300},
	}
	return tl
}

func FuzzUnmarshalTally(f *testing.F) {
	tl := storetest.Sample().Tallies[0]
	f.Add(store.MarshalTally(&tl))
	lt := lotteryTally()
	f.Add(store.MarshalTally(&lt))
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

package share

import (
	"cmp"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store"
)

func TestViewSession(t *testing.T) {
	v := &View{Sessions: []store.Session{{ID: 2, Seen: 20}, {ID: 5, Seen: 50}, {ID: 9, Seen: 90}}}
	for _, id := range []uint64{2, 5, 9} {
		x, ok := v.Session(id)
		assert.True(t, ok, "visitor %d", id)
		assert.Equal(t, id, x.ID)
		assert.Equal(t, int64(id)*10, x.Seen)
	}
	for _, id := range []uint64{0, 1, 3, 10} {
		x, ok := v.Session(id)
		assert.False(t, ok, "visitor %d", id)
		assert.Zero(t, x)
	}
	_, ok := (&View{}).Session(1)
	assert.False(t, ok, "an empty view")
}

// waitingIn is a view's buckets with the visitors waiting in each: the
// arrival buckets b, oldest first, with n[i] visitors in b[i].
func waitingIn(b []int64, n []int64) *View {
	v := &View{}
	var before int64
	for i := range b {
		v.Buckets = append(v.Buckets, Bucket{b[i], n[i], before, 0})
		before += n[i]
	}
	v.Waiting = before
	return v
}

// Near reports whether fewer than n visitors wait in buckets older than
// b, whether or not b's own visitors are counted yet.
func TestViewNear(t *testing.T) {
	v := waitingIn([]int64{100, 102, 104}, []int64{5, 7, 3}) // 5 older than 101 and 102, 12 than 103 and 104, 15 than 105
	for _, tc := range []struct {
		b, n int64
		want bool
	}{
		{100, 1, true}, // nobody older
		{101, 5, false},
		{101, 6, true},
		{102, 5, false},
		{102, 6, true},
		{103, 12, false},
		{104, 13, true},
		{105, 15, false}, // newer than every bucket counted: all 15 are older
		{105, 16, true},
		{200, 3, false},
	} {
		assert.Equal(t, tc.want, v.Near(tc.b, tc.n), "bucket %d, fewer than %d ahead", tc.b, tc.n)
	}
	assert.True(t, (&View{}).Near(100, 1), "nobody waiting")
}

func TestViewAhead(t *testing.T) {
	const s = 1_790_000_000 // an arrival second
	v := &View{Waiting: 10, Buckets: []Bucket{
		{Arrival: s, Waiting: 3, Before: 0},
		{Arrival: s + 1, Waiting: 4, Before: 3},
		{Arrival: s + 5, Waiting: 3, Before: 7},
	}}
	none := [2]int64{}
	for _, tc := range []struct {
		name    string
		lottery [2]int64
		bucket  int64
		fresh   bool
		want    int64
	}{
		{"the oldest second: next, with those of the same second", none, s, false, 0},
		{"everyone of the older seconds", none, s + 1, false, 3},
		{"a second nobody else arrived in", none, s + 3, false, 7},
		{"the newest", none, s + 5, false, 7},
		{"newer than anyone counted", none, s + 9, false, 10},
		{"fresh: behind everyone", none, s, true, 10},
		{"a shuffled pre-queue: half of the others ahead", [2]int64{s + 1, s + 5}, s + 1, false, 3 + 2}, // 1.5, to the nearest
		{"a shuffled pre-queue of several seconds", [2]int64{s, s + 5}, s, false, (7 - 1) / 2},
		{"a second after the pre-queue", [2]int64{s, s + 5}, s + 5, false, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, v.Ahead(tc.bucket, tc.lottery, tc.fresh, 1, 20_000))
		})
	}

	for _, tc := range []struct {
		bucket int64
		fresh  bool
		want   int64
	}{{s, false, 1}, {s + 1, false, 1}, {s + 5, false, 1}, {s + 3, false, 0}, {s + 1, true, 0}} {
		assert.Equal(t, tc.want, v.Tied(tc.bucket, tc.fresh), "bucket %d, fresh %v: half of the others of the second", tc.bucket-s, tc.fresh)
	}

	// With the seed: the visitors whose places lie between the cut and
	// the visitor's, of those above the cut.
	const refresh = 20_000
	pre := [2]int64{s - 600, s}
	x := store.Seed{Start: s - 600, End: s + 3600, Secret: [32]byte{4}, Interval: refresh,
		Cuts: []store.Odds{{Interval: s * 1000 / refresh, Odds: 0.2}}}
	v = &View{At: s*1000 + 30_000, Waiting: 1000, Buckets: []Bucket{{Arrival: s - 300, Waiting: 900}, {Arrival: s + 2, Waiting: 100, Before: 900}}, seeds: []store.Seed{x}}
	prev, seen := int64(-1), 0
	for _, id := range idsByPlace(x.Secret, 50) {
		p := lottery.Place(x.Secret, id)
		got := v.Ahead(s-600, pre, false, id, refresh)
		if p < 0.2 {
			assert.Zero(t, got, "their turn has come")
			continue
		}
		assert.Equal(t, int64(math.Round(899*(p-0.2)/0.8)), got, "place %v", p)
		assert.GreaterOrEqual(t, got, prev, "in the order of places")
		prev, seen = got, seen+1
	}
	assert.Greater(t, seen, 20)
	// Fewer let in than the cut says (Total Active Users binds): of the
	// 1,000 pre-queued, 900 still wait, so those above the lowest tenth
	// of the places, not the fifth, are ahead; nobody under the cut is
	// told they are next but who is.
	v.seeds[0].Prequeued = 1000
	for _, id := range idsByPlace(x.Secret, 50) {
		if p := lottery.Place(x.Secret, id); p > 0.1 {
			assert.Equal(t, int64(math.Round(899*(p-0.1)/0.9)), v.Ahead(s-600, pre, false, id, refresh), "place %v", p)
		}
	}
	v.seeds[0].Prequeued = 1200 // more let in than the cut says (some left): the cut decides
	for _, id := range idsByPlace(x.Secret, 50) {
		if p := lottery.Place(x.Secret, id); p > 0.2 {
			assert.Equal(t, int64(math.Round(899*(p-0.2)/0.8)), v.Ahead(s-600, pre, false, id, refresh), "place %v", p)
		}
	}
	v.seeds[0].Prequeued = 0
	v.seeds[0].Cuts = append(v.seeds[0].Cuts, store.Odds{Interval: s*1000/refresh + 1, Odds: 1})
	assert.Zero(t, v.Ahead(s-600, pre, false, 7, refresh), "everyone's turn has come")
}

// idsByPlace returns n identities in the order of their places under
// seed.
func idsByPlace(seed [32]byte, n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = uint64(i) * 7919
	}
	slices.SortFunc(ids, func(a, b uint64) int { return cmp.Compare(lottery.Place(seed, a), lottery.Place(seed, b)) })
	return ids
}

package share

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGrantTotal(t *testing.T) {
	assert.Zero(t, Grant(nil).Total())
	assert.Equal(t, int64(6), Grant{{Bucket: 100, N: 1}, {Bucket: 101, N: 0}, {Bucket: AnyBucket, N: 5}}.Total())
}

// take: a queued visitor takes from their own bucket first, then from the
// newest entries down to their own, never from an older bucket's; a fresh
// visitor only from the entry for any.
func TestGrantTake(t *testing.T) {
	g := func() Grant { return Grant{{Bucket: 100, N: 1}, {Bucket: 102, N: 1}, {Bucket: AnyBucket, N: 1}} }
	for _, tc := range []struct {
		name   string
		g      Grant
		bucket int64
		fresh  bool
		from   []int64 // the entries taken from, one take after another, until none
	}{
		{"its own bucket first, then the newest", g(), 100, false, []int64{100, AnyBucket, 102}},
		{"a bucket without an entry: the newest, down to its own", g(), 101, false, []int64{AnyBucket, 102}},
		{"a bucket newer than every entry: the one for any", g(), 103, false, []int64{AnyBucket}},
		{"fresh: the one for any only", g(), 100, true, []int64{AnyBucket}},
		{"no older bucket's slot", Grant{{Bucket: 100, N: 3}}, 101, false, nil},
		{"an empty entry is no slot", Grant{{Bucket: 100, N: 0}}, 100, false, nil},
		{"no grant", nil, 100, false, nil},
		// Random's layout: the entry kept for the waiting, below the one
		// for any, is every waiting visitor's and no fresh arrival's.
		{"random, waiting: both entries", Grant{{Bucket: AnyBucket - 1, N: 2}, {Bucket: AnyBucket, N: 1}}, 100, false, []int64{AnyBucket, AnyBucket - 1, AnyBucket - 1}},
		{"random, fresh: the one for any only", Grant{{Bucket: AnyBucket - 1, N: 2}, {Bucket: AnyBucket, N: 1}}, AnyBucket, true, []int64{AnyBucket}},
		{"random, fresh, every slot kept for the waiting", Grant{{Bucket: AnyBucket - 1, N: 2}}, AnyBucket, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var from []int64
			before := tc.g.Total()
			for {
				b, ok := tc.g.take(tc.bucket, tc.fresh)
				if !ok {
					break
				}
				from = append(from, b)
				require.Less(t, len(from), 10)
			}
			assert.Equal(t, tc.from, from)
			assert.Equal(t, before-int64(len(from)), tc.g.Total(), "each take takes one")
		})
	}
}

// keep keeps up to n of a grant, newest entries first, and leaves the
// grant as it was.
func TestGrantKeep(t *testing.T) {
	g := Grant{{Bucket: 100, N: 2}, {Bucket: 101, N: 2}, {Bucket: AnyBucket, N: 3}}
	for _, tc := range []struct {
		n    int64
		want Grant
	}{
		{0, nil},
		{-1, nil},
		{2, Grant{{Bucket: AnyBucket, N: 2}}},
		{4, Grant{{Bucket: 101, N: 1}, {Bucket: AnyBucket, N: 3}}},
		{7, g},
		{100, g},
	} {
		assert.Equal(t, tc.want, g.keep(tc.n), "keep(%d)", tc.n)
	}
	assert.Equal(t, Grant{{Bucket: 100, N: 2}, {Bucket: 101, N: 2}, {Bucket: AnyBucket, N: 3}}, g, "untouched")
	assert.Nil(t, Grant{{Bucket: 100, N: 0}}.keep(3), "nothing to keep")
}

// charge takes what was used from the same entries, else from the newest
// ones, never below nothing.
func TestGrantCharge(t *testing.T) {
	for _, tc := range []struct {
		name string
		used map[int64]int64
		want Grant
	}{
		{"nothing used", nil, Grant{{Bucket: 100, N: 2}, {Bucket: 101, N: 1}, {Bucket: AnyBucket, N: 2}}},
		{"from the same entry", map[int64]int64{100: 1}, Grant{{Bucket: 100, N: 1}, {Bucket: 101, N: 1}, {Bucket: AnyBucket, N: 2}}},
		{"an entry the grant lacks: from the newest", map[int64]int64{99: 3}, Grant{{Bucket: 100, N: 2}, {Bucket: 101, N: 0}, {Bucket: AnyBucket, N: 0}}},
		{"more than the entry: the rest from the newest", map[int64]int64{100: 3}, Grant{{Bucket: 100, N: 0}, {Bucket: 101, N: 1}, {Bucket: AnyBucket, N: 1}}},
		{"more than the grant", map[int64]int64{AnyBucket: 4, 101: 4}, Grant{{Bucket: 100, N: 0}, {Bucket: 101, N: 0}, {Bucket: AnyBucket, N: 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Grant{{Bucket: 100, N: 2}, {Bucket: 101, N: 1}, {Bucket: AnyBucket, N: 2}}
			g.charge(tc.used)
			assert.Equal(t, tc.want, g)
		})
	}
}

func TestFreeSlots(t *testing.T) {
	for _, tc := range []struct {
		total, perMinute, active, admitted, want int64
	}{
		{100, 10, 0, 0, 10},
		{100, 10, 95, 0, 5},
		{100, 10, 0, 7, 3},
		{100, 10, 100, 0, 0},
		{100, 10, 120, 0, 0}, // a limit lowered below the active
		{100, 10, 0, 12, 0},  // below this minute's admissions
		{100, 10, 92, 4, 6},  // both bind: the lower
		{100, 10, 97, 4, 3},  //
	} {
		r := Rules{TotalActiveUsers: tc.total, NewUsersPerMinute: tc.perMinute}
		v := &View{Active: tc.active, AdmittedThisMinute: tc.admitted}
		assert.Equal(t, tc.want, freeSlots(&r, v), "%+v", tc)
	}
}

func TestSyncEvery(t *testing.T) {
	assert.Equal(t, int64(1000), syncEvery(0))
	assert.Equal(t, int64(1000), syncEvery(-5))
	assert.Equal(t, int64(250), syncEvery(250))
	assert.Equal(t, int64(5000), syncEvery(5000))
}

// dues is buckets with the due visitors n, oldest first.
func dues(n ...int64) []Bucket {
	var bs []Bucket
	for _, k := range n {
		bs = append(bs, Bucket{Due: k})
	}
	return bs
}

func TestCoveredWhole(t *testing.T) {
	for _, tc := range []struct {
		free, want int64
	}{{0, 0}, {2, 0}, {3, 3}, {6, 3}, {7, 7}, {11, 7}, {12, 12}, {100, 12}} {
		assert.Equal(t, tc.want, coveredWhole(dues(3, 4, 5), tc.free), "%d free", tc.free)
	}
	assert.Zero(t, coveredWhole(nil, 10))
	assert.Equal(t, int64(4), coveredWhole(dues(0, 4, 0, 9), 5), "buckets with none due cost nothing")
}

// reserveBuckets merges the buckets of a shuffled pre-queue into its
// first, and leaves the others.
func TestReserveBuckets(t *testing.T) {
	bs := []Bucket{{99, 1, 0, 1}, {100, 2, 1, 2}, {101, 3, 3, 1}, {102, 4, 6, 4}, {104, 5, 10, 5}}
	assert.Equal(t, bs, reserveBuckets(bs, &Rules{}), "no pre-queue")
	got := reserveBuckets(bs, &Rules{Lottery: [2]int64{100, 103}})
	assert.Equal(t, []Bucket{{99, 1, 0, 1}, {100, 9, 1, 7}, {104, 5, 10, 5}}, got)
	assert.Equal(t, []Bucket{{99, 1, 0, 1}, {100, 2, 1, 2}, {101, 3, 3, 1}, {102, 4, 6, 4}, {104, 5, 10, 5}}, bs, "the input untouched")
}

// carve never grants what the rules close, takes back what the instance
// holds only beyond the free slots (the limits went down), closed too,
// never adds more than the free slots the others' grants leave, and never
// grants more than the free slots.
func TestCarveWithinFreeSlots(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for trial := range 3000 {
		m := fifo
		if rng.IntN(2) == 0 {
			m = random
		}
		p := params{now: 1_000_000_000 + rng.Int64N(60_000), syncInterval: 1000,
			rules: limits(m, 1+rng.Int64N(300), 1+rng.Int64N(100))}
		p.round = rng.IntN(2) == 0
		buckets := dues(rng.Int64N(20), rng.Int64N(20), rng.Int64N(20))
		v := &View{Active: rng.Int64N(300), AdmittedThisMinute: rng.Int64N(100), Waiting: rng.Int64N(100), Buckets: buckets}
		others, held := rng.Int64N(20), rng.Int64N(5)
		free := freeSlots(&p.rules, v)
		g := carve(p, v, buckets, buckets, rng.Float64(), others, held, 0)
		require.NotNil(t, g, "trial %d", trial)
		require.GreaterOrEqual(t, g.Total(), min(held, free), "trial %d: what it holds is not taken back within the free slots", trial)
		require.LessOrEqual(t, g.Total(), max(min(held, free), free-others), "trial %d: within the free slots the others leave", trial)
		require.LessOrEqual(t, g.Total(), free, "trial %d: within the free slots", trial)

		// Closed, or a method that grants no slots: the holding stays
		// (nil) if it fits, else it goes.
		closed := p
		closed.rules.Closed = true
		noSlots := p
		noSlots.rules.Layout = nil
		for _, q := range []params{closed, noSlots} {
			g := carve(q, v, buckets, buckets, 1, others, held, 0)
			if held <= free {
				require.Nil(t, g, "trial %d: closed, the holding fits", trial)
			} else {
				require.Equal(t, Grant{}, g, "trial %d: closed, the holding is beyond the free slots", trial)
			}
		}
	}
}
func TestGroupBuckets(t *testing.T) {
	const m = 29_000_000 * 60 // the first second of a minute
	due := func(b int64, n int64) Bucket { return Bucket{Arrival: b, Waiting: n + 1, Due: n} }
	seconds := func(b, k, n int64) []Bucket { // k seconds from b, n due each
		var out []Bucket
		for i := range k {
			out = append(out, due(b+i, n))
		}
		return out
	}
	few := append([]Bucket{due(m+21, 1), due(m+27, 1)}, seconds(m+30, 16, 1)...) // a few left of the oldest span
	for _, tc := range []struct {
		name       string
		in         []Bucket
		need, inst int64
		grp        grouping
		want       []Bucket
	}{
		{"a visitor an interval: second by second", []Bucket{due(m+3, 1), due(m+9, 1)}, 1, 4, grouping{span: 1}, []Bucket{due(m+3, 1), due(m+9, 1)}},
		{"nobody due: as they are", []Bucket{{Arrival: m + 3, Waiting: 4}}, 50, 4, grouping{span: 1}, []Bucket{{Arrival: m + 3, Waiting: 4}}},
		{"the shortest span that holds enough from the oldest due", []Bucket{due(m+1, 2), due(m+4, 2), due(m+6, 2), due(m+12, 1)}, 4, 4, grouping{5, m + 4, m + 4},
			[]Bucket{{Arrival: m + 4, Waiting: 6, Due: 4}, {Arrival: m + 9, Waiting: 3, Due: 2}, {Arrival: m + 14, Waiting: 2, Due: 1}}},
		{"a minute at most, aligned to it", []Bucket{due(m+58, 1), due(m+61, 1)}, 100, 4, grouping{60, m + 59, m + 59},
			[]Bucket{{Arrival: m + 59, Waiting: 2, Due: 1}, {Arrival: m + 119, Waiting: 2, Due: 1}}},
		{"a few left of the oldest span, one instance: a group of their own", few, 8, 1, grouping{15, m + 29, m + 29},
			[]Bucket{{Arrival: m + 29, Waiting: 4, Due: 2}, {Arrival: m + 44, Waiting: 30, Due: 15}, {Arrival: m + 59, Waiting: 2, Due: 1}}},
		{"a few left of the oldest span, instances: with the next span", few, 8, 4, grouping{15, m + 29, m + 44},
			[]Bucket{{Arrival: m + 44, Waiting: 34, Due: 17}, {Arrival: m + 59, Waiting: 2, Due: 1}}},
		{"the oldest spans join within their minute only", append([]Bucket{due(m+50, 1)}, seconds(m+55, 10, 1)...), 8, 40, grouping{15, m + 59, m + 59},
			[]Bucket{{Arrival: m + 59, Waiting: 12, Due: 6}, {Arrival: m + 74, Waiting: 10, Due: 5}}},
		{"the oldest due decides, not the oldest waiting", []Bucket{{Arrival: m, Waiting: 9}, due(m+10, 3), due(m+11, 3)}, 6, 4, grouping{2, m + 11, m + 11},
			[]Bucket{{Arrival: m + 1, Waiting: 9}, {Arrival: m + 11, Waiting: 8, Due: 6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, grp := groupBuckets(tc.in, tc.need, tc.inst)
			assert.Equal(t, tc.grp, grp)
			assert.Equal(t, tc.want, got)
			var w, d int64
			for _, b := range got {
				w, d = w+b.Waiting, d+b.Due
			}
			var w0, d0 int64
			for _, b := range tc.in {
				w0, d0 = w0+b.Waiting, d0+b.Due
				k := grp.key(b.Arrival)
				assert.True(t, k >= b.Arrival && FloorDiv(k, 60) == FloorDiv(b.Arrival, 60) && (k+1)%grp.span == 0, "second %d in the group ending %d", b.Arrival, k)
				assert.True(t, slices.ContainsFunc(got, func(g Bucket) bool { return g.Arrival == k }), "second %d's group", b.Arrival)
			}
			assert.Equal(t, [2]int64{w0, d0}, [2]int64{w, d}, "nobody lost or counted twice")
		})
	}
}

// A visitor of a span takes from its group's entry, an older span's
// visitor from a newer one's, never the other way round.
func TestGroupKeyTake(t *testing.T) {
	const m int64 = 29_000_000 * 60
	g := Grant{{Bucket: spanKey(m+7, 10), N: 1}, {Bucket: spanKey(m+12, 10), N: 1}}
	_, ok := g.take(m+13, false)
	assert.True(t, ok, "a visitor of the newer span: its own")
	_, ok = g.take(m+15, false)
	assert.False(t, ok, "nothing of the newer span left; the older span's is not theirs")
	b, ok := g.take(m+1, false)
	assert.True(t, ok)
	assert.Equal(t, m+9, b, "the older span's visitor: theirs")
}

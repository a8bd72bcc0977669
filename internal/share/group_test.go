package share

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGroupBuckets(t *testing.T) {
	const m = 29_000_000 * 60 // the first second of a minute
	due := func(b int64, n int64) Bucket { return Bucket{Arrival: b, Waiting: n + 1, Due: n} }
	for _, tc := range []struct {
		name string
		in   []Bucket
		need int64
		span int64
		want []Bucket
	}{
		{"a visitor an interval: second by second", []Bucket{due(m+3, 1), due(m+9, 1)}, 1, 1, []Bucket{due(m+3, 1), due(m+9, 1)}},
		{"nobody due: as they are", []Bucket{{Arrival: m + 3, Waiting: 4}}, 50, 1, []Bucket{{Arrival: m + 3, Waiting: 4}}},
		{"the shortest span whose oldest holds enough", []Bucket{due(m+1, 2), due(m+4, 2), due(m+6, 2), due(m+12, 1)}, 4, 5,
			[]Bucket{{Arrival: m + 4, Waiting: 6, Due: 4}, {Arrival: m + 9, Waiting: 3, Due: 2}, {Arrival: m + 14, Waiting: 2, Due: 1}}},
		{"a minute at most, aligned to it", []Bucket{due(m+58, 1), due(m+61, 1)}, 100, 60,
			[]Bucket{{Arrival: m + 59, Waiting: 2, Due: 1}, {Arrival: m + 119, Waiting: 2, Due: 1}}},
		{"the oldest due decides, not the oldest waiting", []Bucket{{Arrival: m, Waiting: 9}, due(m+10, 3), due(m+11, 3)}, 6, 2,
			[]Bucket{{Arrival: m + 1, Waiting: 9}, {Arrival: m + 11, Waiting: 8, Due: 6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, span := groupBuckets(tc.in, tc.need)
			assert.Equal(t, tc.span, span)
			assert.Equal(t, tc.want, got)
			var w, d int64
			for _, b := range got {
				w, d = w+b.Waiting, d+b.Due
			}
			var w0, d0 int64
			for _, b := range tc.in {
				w0, d0 = w0+b.Waiting, d0+b.Due
				k := spanKey(b.Arrival, span)
				assert.True(t, k >= b.Arrival && k-span < b.Arrival && (k+1)%span == 0, "second %d in the span ending %d", b.Arrival, k)
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

package waitingroom

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/go-waitingroom/waitingroom/internal/share"
)

// due is a bucket b with n visitors due.
func due(b, n int64) share.Bucket { return share.Bucket{Arrival: b, Waiting: n, Due: n} }

// FIFO's layout reserves slots for the oldest buckets' due visitors
// first, the rest for anyone.
func TestFIFOLayout(t *testing.T) {
	bs := []share.Bucket{due(100, 2), due(101, 0), due(102, 3)}
	for _, tc := range []struct {
		n    int64
		want grant
	}{
		{0, grant{}},
		{1, grant{{Bucket: 100, N: 1}}},
		{2, grant{{Bucket: 100, N: 2}}},
		{4, grant{{Bucket: 100, N: 2}, {Bucket: 102, N: 2}}},
		{5, grant{{Bucket: 100, N: 2}, {Bucket: 102, N: 3}}},
		{9, grant{{Bucket: 100, N: 2}, {Bucket: 102, N: 3}, {Bucket: anyBucket, N: 4}}},
	} {
		g := fifoLayout(tc.n, bs)
		assert.Equal(t, tc.want, g, "%d slots", tc.n)
		assert.Equal(t, tc.n, g.Total(), "%d slots: every one laid out", tc.n)
	}
	assert.Equal(t, grant{{Bucket: anyBucket, N: 3}}, fifoLayout(3, nil), "nobody waiting")
}

// A random grant keeps as many slots as visitors are due from fresh
// arrivals, who get the rest; any waiting visitor may take any of them.
func TestRandomLayout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int64
		buckets []share.Bucket
		want    grant
	}{
		{"nobody due: every slot to anyone", 5, nil, grant{{Bucket: anyBucket, N: 5}}},
		{"fewer due than slots: the rest to fresh arrivals", 5, []share.Bucket{due(100, 2)}, grant{{Bucket: waitingBucket, N: 2}, {Bucket: anyBucket, N: 3}}},
		{"due over several buckets", 5, []share.Bucket{due(100, 2), due(160, 1)}, grant{{Bucket: waitingBucket, N: 3}, {Bucket: anyBucket, N: 2}}},
		{"more due than slots: none to fresh arrivals", 5, []share.Bucket{due(100, 4), due(160, 9)}, grant{{Bucket: waitingBucket, N: 5}}},
		{"no slot", 0, []share.Bucket{due(100, 4)}, grant{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, randomLayout(tc.n, tc.buckets))
		})
	}
}

// A visitor the draw holds comes back in a quarter of the refresh
// interval, whole seconds, a second at least.
func TestDrawRetry(t *testing.T) {
	for _, tc := range []struct{ refresh, want int64 }{
		{20_000, 5000}, {5000, 1000}, {1000, 1000}, {1, 1000}, {60_000, 15_000}, {10_000, 2000},
	} {
		assert.Equal(t, tc.want, drawRetry(tc.refresh), "refresh %d ms", tc.refresh)
	}
}

func TestDrawOdds(t *testing.T) {
	const refresh = 20_000
	// 30 s into a minute: with New Users Per Minute at 60, 50 slots are
	// released an interval ahead.
	const now = 1_000*60_000 + 30_000
	for _, tc := range []struct {
		name             string
		perMinute, total int
		active, waiting  int64
		admitted         int64 // this minute, as of the view
		recent           float64
		want             float64
	}{
		{"a long queue: an interval's slots over the waiting", 60, 1000, 0, 300, 50, 0, 20.0 / 300},
		{"slots released and not taken, less than an interval's and a quarter: an interval's", 60, 1000, 0, 300, 27, 0, 20.0 / 300},
		{"slots released and not taken, more: their excess over a quarter interval's", 60, 1000, 0, 300, 0, 0, 45.0 / 300},
		{"the pace ahead of New Users Per Minute: none of it", 60, 1000, 0, 300, 60, 0, 20.0 / 300},
		{"fewer waiting than an interval brings: everyone", 60, 1000, 0, 10, 50, 0, 1},
		{"nobody counted waiting: everyone", 60, 1000, 0, 0, 50, 0, 1},
		{"Total Active Users binds: the slots come as fast as lately", 60, 100, 100, 300, 0, 30, 10.0 / 300},
		{"Total Active Users binds, some room left", 60, 100, 85, 300, 0, 30, 15.0 / 300},
		{"Total Active Users binds, nothing let in lately: one slot", 60, 100, 100, 300, 50, 0, 1.0 / 300},
		{"a slot a minute: at least one an interval", 1, 1000, 0, 300, 1, 0, 1.0 / 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &view{View: share.View{At: now - 500, Active: tc.active, Waiting: tc.waiting, AdmittedThisMinute: tc.admitted, PerMinute: tc.recent}}
			p := &policy{}
			p.NewUsersPerMinute, p.TotalActiveUsers = tc.perMinute, tc.total
			assert.InDelta(t, tc.want, drawOdds(&v.View, p, refresh, now), 1e-12)
			v.Scarce = true // every slot by pick: twice the odds, at most one
			assert.InDelta(t, min(1, drawScarceMargin*tc.want), drawOdds(&v.View, p, refresh, now), 1e-12)
		})
	}
	t.Run("a view of the minute before: nothing let in this minute yet", func(t *testing.T) {
		v := &view{View: share.View{At: now - 40_000, Waiting: 300, AdmittedThisMinute: 60}}
		p := &policy{}
		p.NewUsersPerMinute, p.TotalActiveUsers = 60, 1000
		assert.InDelta(t, 45.0/300, drawOdds(&v.View, p, refresh, now), 1e-12)
	})
}

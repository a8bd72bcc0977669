package share

import (
	"fmt"
	"testing"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/storetest"
)

// BenchmarkApplySync measures the shared-state algorithm alone (what runs
// inside the store's transaction) on a queue of 60 and of 1,440 minutes
// and 10,000 sessions, with a second of one instance's reports: 200
// requests of admitted visitors and 10 admissions.
func BenchmarkApplySync(b *testing.B) {
	for _, buckets := range []int{60, 1440} {
		b.Run(fmt.Sprintf("buckets=%d", buckets), func(b *testing.B) {
			base := storetest.LargeState(buckets)
			enc := store.MarshalState(base)
			now := base.Clock + 1000
			p := params{now: now, id: "instance-0", rules: limits(fifo, 10000, 2000),
				waitWindow: 44_000, dueWindow: 27_000, syncInterval: 1000, instanceTTL: 3000}
			d := newDelta()
			for i := range 200 { // a second of check-ins at one instance
				d.waiting[cellKey{now/60_000 - int64(i%buckets), now / 10_000}]++
				// and of requests of admitted visitors, and admissions
				x := base.Sessions[i*len(base.Sessions)/200]
				x.Seen = now / 1000
				d.session(x)
				if i%20 == 0 {
					d.session(store.Session{ID: uint64(i)<<32 | 7, Admitted: now / 1000, Seen: now / 1000})
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				st, _ := store.UnmarshalState(enc)
				applySync(st, p, d)
			}
		})
	}
}

// BenchmarkRound measures the fleet aggregator's round alone (what runs
// inside the store's transaction) on a state of 10,000 sessions and a
// queue of 60 minutes, with a second of news from every instance (5
// check-ins and 5 requests of admitted visitors each, an admission every
// tenth): "merged" is applyRound, every instance's news merged once and a
// grant carved for each; "per-instance" is the round as a sync of its own
// per instance (applySync for each), as it was (up to 1,000 instances: at
// 10,000 one such round takes over a minute); "decode" is the state's
// decoding alone, which both include.
func BenchmarkRound(b *testing.B) {
	for _, n := range []int{40, 400, 1000, 10000} {
		base := storetest.LargeState(60)
		now := base.Clock + 1000
		for i := range n {
			base.Instances = append(base.Instances, store.Instance{ID: fmt.Sprintf("i%05d+s4c3p1f1", i), Seen: now - 1000, Seq: 1, Grant: 1, Traffic: 5})
		}
		enc := store.MarshalState(base)
		p := params{now: now, rules: limits(fifo, 20000, 2000),
			waitWindow: 44_000, dueWindow: 27_000,
			syncInterval: 1000, instanceTTL: 3000, round: true}
		members := make([]member, n)
		ds := make([]*delta, n)
		for i := range n {
			d := newDelta()
			for j := range 5 {
				d.waiting[cellKey{now/60_000 - int64((i+j)%60), now / 10_000}]++
				x := base.Sessions[(i*5+j)%len(base.Sessions)]
				x.Seen = now / 1000
				d.session(x)
			}
			if i%10 == 0 {
				d.session(store.Session{ID: uint64(i)<<32 | 7, Admitted: now / 1000, Seen: now / 1000})
			}
			d.attempts = 6
			ds[i] = d
			members[i] = member{id: base.Instances[i].ID, seq: 2, held: 1, attempts: d.attempts}
		}
		b.Run(fmt.Sprintf("instances=%d/merged", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st, _ := store.UnmarshalState(enc)
				applyRound(st, p, members, ds)
			}
		})
		b.Run(fmt.Sprintf("instances=%d/per-instance", n), func(b *testing.B) {
			if n > 1000 {
				b.Skip("a round of a sync per instance takes over a minute at this size")
			}
			b.ReportAllocs()
			for b.Loop() {
				st, _ := store.UnmarshalState(enc)
				for i, m := range members {
					q := p
					q.id, q.seq, q.held = m.id, m.seq, m.held
					applySync(st, q, ds[i])
				}
			}
		})
		b.Run(fmt.Sprintf("instances=%d/decode", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = store.UnmarshalState(enc)
			}
		})
	}
}

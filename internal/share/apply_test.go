package share

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestApplyRoundMergesOnce checks the aggregator's round, which merges
// every instance's news into the state at once and then carves a grant
// for each (applyRound), against the same news applied by a sync of its
// own per instance (applySync, as the round did before): the shared part
// of the state (sessions, waiting cells, admissions) and the instances'
// records come out the same, and the grants keep the limits exact:
// admitted this minute plus every grant held within NewUsersPerMinute,
// visitors active plus every grant within TotalActiveUsers.
func TestApplyRoundMergesOnce(t *testing.T) {
	for _, tc := range []struct {
		name        string
		method      Rules
		instances   int
		perMinute   int64
		total       int64
		shared      int // sessions reported by two instances (one cookie, two tabs)
		withRecords bool
	}{
		{"fifo, per-minute bound", fifo, 40, 100, 1000, 0, true},
		{"fifo, total bound", fifo, 40, 100, 90, 0, true},
		{"random, per-minute bound", random, 40, 60, 1000, 0, true},
		{"fifo, shared cookies", fifo, 40, 100, 1000, 10, true},
		{"fifo, joining instances", fifo, 40, 100, 1000, 0, false},
		{"one instance", fifo, 1, 100, 1000, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.instances)))
			now := testclock.Start.UnixMilli() + 30_000
			nowMin := MinuteOf(now)
			base := &store.State{Version: 7, Epoch: 9, Clock: now - 1000}
			// A queue of five buckets, 40 sessions, 10 admissions this
			// minute, and records of a grant of 1 each: the limits are
			// exact before the round.
			for b := range int64(5) {
				for s := range int64(3) {
					base.Waiting = append(base.Waiting, store.Cell{Bucket: (nowMin-5+b)*60 + 59, Slot: SlotOf(now) - s, N: 1 + rng.Int64N(6)})
				}
			}
			slices.SortFunc(base.Waiting, func(a, b store.Cell) int {
				return cmp.Or(cmp.Compare(a.Bucket, b.Bucket), cmp.Compare(a.Slot, b.Slot))
			})
			for i := range 40 {
				base.Sessions = append(base.Sessions, store.Session{ID: uint64(i+1) << 20, Admitted: now/1000 - 50, Seen: now/1000 - 2})
			}
			base.Admitted = []store.Count{{Key: nowMin, N: 10}}
			ids := make([]string, tc.instances)
			for i := range ids {
				ids[i] = fmt.Sprintf("i%03d+s4c3p1f1", i)
				if tc.withRecords {
					base.Instances = append(base.Instances, store.Instance{ID: ids[i], Seen: now - 1000, Seq: 1, Grant: 1, Traffic: 2})
				}
			}
			p := params{now: now, rules: limits(fifo, tc.total, tc.perMinute),
				waitWindow: 44_000, dueWindow: 27_000,
				syncInterval: 1000, instanceTTL: 3000, round: true}
			p.rules = limits(tc.method, p.rules.TotalActiveUsers, p.rules.NewUsersPerMinute)
			members := make([]member, tc.instances)
			ds := make([]*delta, tc.instances)
			for i := range tc.instances {
				d := newDelta()
				// An admission from the grant it held (1), check-ins that
				// move a waiting visitor to this slot, requests of
				// admitted visitors, a revoke now and then.
				held := int64(1)
				if rng.IntN(2) == 0 {
					d.session(store.Session{ID: uint64(1000 + i), Admitted: now/1000 - 1, Seen: now / 1000})
					held = 0
				}
				for range 3 {
					c := base.Waiting[rng.IntN(len(base.Waiting))]
					d.waiting[cellKey{c.Bucket, c.Slot}]--
					d.waiting[cellKey{c.Bucket, SlotOf(now)}]++
				}
				x := base.Sessions[rng.IntN(len(base.Sessions))]
				x.Seen = now / 1000
				x.Revoked = rng.IntN(10) == 0
				d.session(x)
				if i < tc.shared { // the same new visitor, reported by two instances
					d.session(store.Session{ID: 5000, Admitted: now/1000 - 1, Seen: now / 1000})
				}
				d.attempts = 1 + rng.Int64N(5)
				ds[i] = d
				members[i] = member{id: ids[i], seq: 2, held: held, attempts: d.attempts}
			}

			merged := clone(t, base)
			out, v := applyRound(merged, p, members, ds)
			seq := clone(t, base)
			for i, m := range members {
				q := p
				q.id, q.seq, q.held = m.id, m.seq, m.held
				applySync(seq, q, ds[i])
			}

			assert.Equal(t, seq.Sessions, merged.Sessions, "sessions")
			assert.Equal(t, seq.Waiting, merged.Waiting, "waiting cells")
			assert.Equal(t, seq.Admitted, merged.Admitted, "admissions")
			require.Len(t, merged.Instances, len(seq.Instances))
			for i, in := range merged.Instances {
				assert.Equal(t, seq.Instances[i].ID, in.ID)
				assert.Equal(t, seq.Instances[i].Seq, in.Seq, "instance %s: sequence number", in.ID)
				assert.Equal(t, seq.Instances[i].Seen, in.Seen, "instance %s: seen", in.ID)
				assert.InDelta(t, seq.Instances[i].Traffic, in.Traffic, 1e-9, "instance %s: traffic", in.ID)
			}
			var grants int64
			for i, in := range merged.Instances {
				grants += max(in.Grant, 0)
				if g := out[i].g; g != nil {
					assert.Equal(t, g.Total(), in.Grant, "instance %s: its record holds its grant", in.ID)
				}
			}
			assert.LessOrEqual(t, v.AdmittedThisMinute+grants, tc.perMinute, "admitted this minute and every grant held")
			assert.LessOrEqual(t, v.Active+grants, tc.total, "active and every grant held")
			assert.Positive(t, grants, "the round carves")
			t.Logf("admitted this minute %d, active %d, grants %d", v.AdmittedThisMinute, v.Active, grants)
		})
	}
}

// TestLaterAdmissions checks what each instance of a round is told the
// instances after it admitted this minute (the admissions its pace leaves
// out): a visitor counts once, for the first instance that brings them,
// not when the state has them already, and not when admitted in another
// minute.
func TestLaterAdmissions(t *testing.T) {
	const nowMin = 1000
	in := func(id uint64, minute int64) store.Session {
		return store.Session{ID: id, Admitted: minute*60 + 5, Seen: minute*60 + 5}
	}
	deltas := func(ss ...[]store.Session) []*delta {
		var ds []*delta
		for _, s := range ss {
			d := newDelta()
			for _, x := range s {
				d.session(x)
			}
			ds = append(ds, d)
		}
		return ds
	}
	for _, tc := range []struct {
		name  string
		state []store.Session
		ds    []*delta
		want  []int64
	}{
		{"one instance", nil, deltas([]store.Session{in(1, nowMin)}), []int64{0}},
		{"one each", nil, deltas([]store.Session{in(1, nowMin)}, []store.Session{in(2, nowMin)}, []store.Session{in(3, nowMin)}), []int64{2, 1, 0}},
		{"none after", nil, deltas([]store.Session{in(1, nowMin), in(2, nowMin)}, nil, nil), []int64{0, 0, 0}},
		{"the same visitor twice (a shared cookie)", nil,
			deltas([]store.Session{in(1, nowMin)}, []store.Session{in(2, nowMin)}, []store.Session{in(2, nowMin), in(1, nowMin)}), []int64{1, 0, 0}},
		{"known to the state", []store.Session{in(2, nowMin)},
			deltas(nil, []store.Session{in(2, nowMin)}, []store.Session{in(3, nowMin)}), []int64{1, 1, 0}},
		{"another minute", nil,
			deltas(nil, []store.Session{in(2, nowMin-1)}, []store.Session{in(3, nowMin+1), in(4, nowMin)}), []int64{1, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, laterAdmissions(&store.State{Sessions: tc.state}, nowMin, tc.ds))
		})
	}
}

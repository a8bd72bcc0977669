package share

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReserveAndPick runs a fleet's round over a state with a queue of
// two buckets and checks what it picks and reserves, and that the limits
// count both.
func TestReserveAndPick(t *testing.T) {
	now := testclock.Start.UnixMilli() + 30_000 // 30 s into a minute
	nowMin := MinuteOf(now)
	// Arrival seconds a minute apart, each the last of its minute: the
	// key of any span of seconds a group of instances lays grants over.
	b0, b1 := (nowMin-3)*60+59, (nowMin-2)*60+59
	const (
		x, y1, y2, z = uint64(0x1001), uint64(0x2001), uint64(0x2002), uint64(0x3001)
		agg          = "agg+s4c3p1f1"
	)
	future := now + 20_000
	type want struct {
		picked   []uint64
		reserve  int64 // the reserve's slots
		reserved int64 // the newest bucket it covers
		memberB0 bool  // some instance's grant holds slots for b0
	}
	for _, tc := range []struct {
		name     string
		method   Rules
		due0     int64 // due visitors of b0 (b1 has 50)
		admitted int64 // this minute
		held     int64 // what each of the 40 instances holds
		asks     map[uint64]ask
		before   int64           // the reserve's slots before the round (covering b0)
		picks    []uint64        // picks the state holds (bucket b0)
		sessions []store.Session // admitted meanwhile (in a delta)
		edit     func(*params)   // changes to the parameters
		scarce   bool            // the fleet's instances below fleetScarceBelow slots each
		want     want
	}{
		{
			name: "a bucket's last due visitors: the one who asked picked, the rest reserved",
			due0: 2, admitted: 20,
			asks: map[uint64]ask{x: {b0, future}, y1: {b1, future}, y2: {b1, future}},
			want: want{picked: []uint64{x}, reserve: 1, reserved: b0},
		},
		{
			name: "no newer visitor picked while an older one is due and not picked",
			due0: 200, admitted: 20,
			asks: map[uint64]ask{y1: {b1, future}},
			want: want{memberB0: true},
		},
		{
			name: "many due: those who asked picked, nothing reserved, every instance reserves for them",
			due0: 200, admitted: 20,
			asks: map[uint64]ask{x: {b0, future}, y1: {b1, future}},
			want: want{picked: []uint64{x}, memberB0: true},
		},
		{
			name: "the instances hold every free slot: nothing picked or reserved",
			due0: 2, admitted: 20, held: 2,
			asks: map[uint64]ask{x: {b0, future}},
			want: want{memberB0: true},
		},
		{
			name: "asks of visitors let in, picked already or not back in time are not picked",
			due0: 4, admitted: 20,
			asks:     map[uint64]ask{x: {b0, future}, y1: {b0, now - 1000}, y2: {b0, future}, z: {b0, future}}, // y1's holds to now (askSlack)
			picks:    []uint64{y2},
			sessions: []store.Session{{ID: z, Admitted: now/1000 - 1, Seen: now / 1000}},
			want:     want{picked: []uint64{x, y2}, reserve: 2, reserved: b0},
		},
		{
			name: "a pick whose visitor was let in is dropped",
			due0: 2, admitted: 20,
			picks:    []uint64{z},
			sessions: []store.Session{{ID: z, Admitted: now/1000 - 1, Seen: now / 1000}},
			want:     want{reserve: 2, reserved: b0},
		},
		{
			name: "a bucket the reserve covered keeps what it can have of it",
			due0: 6, admitted: 50, held: 1, before: 3,
			edit: func(p *params) { p.rules.NewUsersPerMinute = 94 },
			want: want{reserve: 4, reserved: b0, memberB0: true},
		},
		{
			// A state that went back: the reserve read back was set
			// when more slots were free than now (the sessions of the
			// lost seconds are reported again), and 3 are. Kept whole,
			// it gave 4 picks and 2 reserved: 6 held for 3. The bucket
			// stays covered with no slot: its visitors who ask are told
			// to come back soon for the next picks, not in a refresh.
			name: "a reserve the free slots no longer cover shrinks to them",
			due0: 6, admitted: 20, before: 6,
			asks: map[uint64]ask{x: {b0, future}, y1: {b0, future}, y2: {b0, future}, z: {b0, future}},
			edit: func(p *params) { p.rules.TotalActiveUsers = 3 },
			want: want{picked: []uint64{x, y1, y2}, reserved: b0},
		},
		{
			// The state went back to before the aggregator's latest
			// round reserved b0 (no reserve record): b0 keeps what it
			// can have, 2 of its 5 due visitors not picked.
			name: "a state that went back to before the reserve: the bucket keeps what it can have",
			due0: 6, admitted: 20,
			asks: map[uint64]ask{x: {b0, future}},
			edit: func(p *params) {
				p.rules.TotalActiveUsers = 3
				p.reserved = b0
			},
			want: want{picked: []uint64{x}, reserve: 2, reserved: b0},
		},
		{
			name: "a bucket the reserve did not cover is not reserved in part",
			due0: 6, admitted: 50, held: 1,
			edit: func(p *params) { p.rules.NewUsersPerMinute = 94 },
			want: want{memberB0: true},
		},
		{
			// A winner of the draw an instance had no slot for: picked
			// from a grant (pickWinners), nothing reserved.
			name:   "random: the asked picked from the grants, nothing reserved",
			method: random, due0: 2, admitted: 20,
			asks: map[uint64]ask{x: {b0, future}},
			want: want{picked: []uint64{x}},
		},
		{
			// 100 a minute for 40 instances: every slot goes by pick.
			name: "few slots an instance: those who asked picked, the instances given nothing",
			due0: 200, admitted: 20, scarce: true,
			asks: map[uint64]ask{x: {b0, future}, y1: {b1, future}},
			want: want{picked: []uint64{x}},
		},
		{
			name: "few slots an instance: what the instances hold is laid out again, nothing added",
			due0: 200, admitted: 20, held: 1, scarce: true,
			asks: map[uint64]ask{x: {b0, future}},
			want: want{picked: []uint64{x}, memberB0: true},
		},
		{
			name:   "few slots an instance, random: the asked picked, whatever their bucket",
			method: random, due0: 200, admitted: 20, scarce: true,
			asks: map[uint64]ask{x: {b0, future}, y1: {b1, future}, y2: {b1, future}, z: {b0, future}},
			want: want{picked: []uint64{x, y1, y2, z}},
		},
		{
			// 30 s into the minute, three intervals ahead, the release
			// is at 56: 3 left, drawn among the 4 asked.
			name:   "few slots an instance, random: as many as the release allows",
			method: random, due0: 200, admitted: 53, scarce: true,
			asks: map[uint64]ask{x: {b0, future}, y1: {b1, future}, y2: {b1, future}, z: {b0, future}},
			want: want{picked: []uint64{y1, y2, z}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.method
			if m.Layout == nil {
				m = fifo
			}
			st := &store.State{Version: 7, Epoch: 9, Clock: now - 1000}
			st.Waiting = []store.Cell{{Bucket: b0, Slot: SlotOf(now), N: tc.due0}, {Bucket: b1, Slot: SlotOf(now), N: 50}}
			st.Admitted = []store.Count{{Key: nowMin, N: tc.admitted}}
			st.Lease = &store.Lease{Holder: agg, Term: 1, Renewed: now - 1000}
			if tc.before > 0 {
				st.Reserve = &store.Reserve{Slots: tc.before, Upto: b0, Set: now - 1000}
			}
			for _, id := range tc.picks {
				st.Picks = append(st.Picks, store.Pick{Visitor: id, Bucket: b0, Until: future})
			}
			p := params{now: now, rules: limits(fifo, 1000, 100),
				waitWindow: 44_000, dueWindow: 27_000,
				syncInterval: 1000, instanceTTL: 3000, round: true}
			p.rules = limits(m, p.rules.TotalActiveUsers, p.rules.NewUsersPerMinute)
			if tc.scarce {
				p.scarceBelow = fleetScarceBelow
			}
			if tc.edit != nil {
				tc.edit(&p)
			}
			members := make([]member, 40)
			ds := make([]*delta, 40)
			for i := range members {
				id := fmt.Sprintf("i%03d", i)
				st.Instances = append(st.Instances, store.Instance{ID: id, Seen: now - 1000, Seq: 1, Grant: tc.held, Traffic: 2})
				ds[i] = newDelta()
				ds[i].attempts = 2
				members[i] = member{id: id, seq: 2, held: tc.held, attempts: 2}
			}
			for id, a := range tc.asks {
				ds[int(id)%40].ask(id, a.bucket, a.at)
			}
			for _, x := range tc.sessions {
				ds[0].session(x)
			}

			out, v := applyRound(st, p, members, ds)

			var picked []uint64
			var reserve, reserved int64
			for _, pk := range st.Picks {
				picked = append(picked, pk.Visitor)
			}
			grants := int64(len(st.Picks))
			for _, in := range st.Instances {
				grants += max(in.Grant, 0)
			}
			if r := st.Reserve; r != nil {
				reserve, reserved = r.Slots, r.Upto
				grants += max(r.Slots, 0)
			}
			slices.Sort(picked)
			assert.Equal(t, tc.want.picked, picked, "picks")
			assert.Equal(t, tc.want.reserve, reserve, "the reserve's slots")
			assert.Equal(t, tc.want.reserved, reserved, "the newest bucket the reserve covers")
			memberB0 := false
			for _, c := range out {
				for _, e := range c.g {
					memberB0 = memberB0 || e.Bucket == b0
				}
			}
			assert.Equal(t, tc.want.memberB0, memberB0, "an instance reserves for b0")
			if tc.scarce {
				for i, c := range out {
					assert.LessOrEqual(t, c.g.Total(), tc.held, "instance %d: nothing added to what it held", i)
					assert.True(t, c.scarce, "instance %d: told to keep none of it", i)
				}
			}
			assert.LessOrEqual(t, v.AdmittedThisMinute+grants, p.rules.NewUsersPerMinute, "admitted this minute, picks, the reserve and every grant")
			assert.LessOrEqual(t, v.Active+grants, p.rules.TotalActiveUsers)
			// What the instances read of it: each let in from when they
			// said they would be back.
			wantPicks, gotPicks := map[uint64][2]int64{}, map[uint64][2]int64{}
			for _, id := range tc.want.picked {
				wantPicks[id] = [2]int64{future, future + askSlack(&p)}
				if slices.Contains(tc.picks, id) {
					wantPicks[id] = [2]int64{0, future + askSlack(&p)} // renewed, from as it was
				}
			}
			for id, pk := range v.Picks {
				gotPicks[id] = [2]int64{pk.From, pk.Until}
			}
			assert.Equal(t, wantPicks, gotPicks, "the view's picks, from and until")
			assert.Equal(t, tc.want.reserved, v.ReservedTo, "the view's reserve")
			assert.Equal(t, 40, v.Instances, "picks and the reserve are no instances")
		})
	}
}

// TestReserveAndPickRandom runs rounds over random queues, holdings,
// picks, a reserve and asks (new, and kept in the state), and checks
// what every round must keep: the asks left open kept in the state, the
// limits with the picks and the reserve counted, picks only of visitors
// asked for (or picked before) and not let in, no visitor of a bucket
// picked while an older one has a due visitor no pick covers, one reserve
// of the oldest bucket with due visitors left, for no more of them than
// are left.
func TestReserveAndPickRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 14))
	const agg = "agg"
	for trial := range 2000 {
		now := testclock.Start.UnixMilli() + rng.Int64N(60_000)
		nowMin := MinuteOf(now)
		perMinute := 10 + rng.Int64N(200)
		total := perMinute + rng.Int64N(500)
		st := &store.State{Version: 7, Epoch: 9, Clock: now - 1000}
		nb := 1 + rng.IntN(4)
		for b := range nb {
			if n := rng.Int64N(30); n > 0 {
				st.Waiting = append(st.Waiting, store.Cell{Bucket: (nowMin-10+int64(b))*60 + 59, Slot: SlotOf(now), N: n})
			}
		}
		admitted := rng.Int64N(perMinute + 1)
		st.Admitted = []store.Count{{Key: nowMin, N: admitted}}
		st.Lease = &store.Lease{Holder: agg, Term: 1, Renewed: now - 1000}
		// What is held before the round, within the limits: picks, a
		// reserve, the instances' grants.
		room := perMinute - admitted
		take := func(most int64) int64 {
			k := min(room, rng.Int64N(most+1))
			room -= k
			return k
		}
		before := map[uint64]bool{}
		let := map[uint64]bool{} // visitors let in this round
		var ds []*delta
		var members []member
		nPicks := int(take(5))
		for i := range nPicks {
			id := uint64(0x100 + i)
			before[id] = true
			st.Picks = append(st.Picks, store.Pick{Visitor: id, Bucket: (nowMin-10+int64(rng.IntN(nb)))*60 + 59, Until: now + 5000})
		}
		if r := take(5); r > 0 {
			st.Reserve = &store.Reserve{Slots: r, Upto: (nowMin-10+int64(rng.IntN(nb)))*60 + 59, Set: now - 1000}
		}
		for i := range 5 + rng.IntN(36) {
			id := fmt.Sprintf("i%03d", i)
			held := take(3)
			st.Instances = append(st.Instances, store.Instance{ID: id, Seen: now - 1000, Seq: 1, Grant: held, Traffic: rng.Float64() * 5})
			d := newDelta()
			d.attempts = rng.Int64N(5)
			ds = append(ds, d)
			members = append(members, member{id: id, seq: 2, held: held, attempts: d.attempts})
		}
		asked := map[uint64]bool{}
		ats := map[uint64]int64{} // when each said they would be back, the latest
		var carried map[uint64]ask
		for i := range rng.IntN(40) {
			id := uint64(0x1000 + i)
			if rng.IntN(5) == 0 {
				id = uint64(0x100 + rng.IntN(8)) // one picked before, or not
			}
			at := now + rng.Int64N(40_000) - 5000
			b := nowMin - 10 + int64(rng.IntN(nb))
			if rng.IntN(3) == 0 {
				// Kept in the state by an earlier sync.
				if carried == nil {
					carried = map[uint64]ask{}
				}
				if a, ok := carried[id]; ok {
					b, at = min(a.bucket, b), max(a.at, at)
				}
				carried[id] = ask{bucket: b, at: at}
			} else {
				ds[rng.IntN(len(ds))].ask(id, b, at)
			}
			asked[id] = true
			ats[id] = max(ats[id], at)
			if rng.IntN(6) == 0 && !let[id] { // let in meanwhile, by its pick or from an instance's grant
				j := rng.IntN(len(ds))
				if !before[id] {
					for k := range members {
						if members[(j+k)%len(members)].held > 0 {
							j = (j + k) % len(members)
							break
						}
					}
					if members[j].held == 0 {
						continue
					}
					members[j].held--
				}
				let[id] = true
				ds[j].session(store.Session{ID: id, Admitted: now/1000 - 1, Seen: now / 1000})
			}
		}
		p := params{now: now, rules: limits(fifo, total, perMinute),
			waitWindow: 44_000, dueWindow: 27_000,
			syncInterval: 1000, instanceTTL: 3000, round: true}
		for id, a := range carried {
			st.Asks = append(st.Asks, store.Ask{Visitor: id, Bucket: a.bucket, At: a.at})
		}
		m := fifo
		if rng.IntN(3) == 0 {
			m = random
		}
		p.rules = limits(m, p.rules.TotalActiveUsers, p.rules.NewUsersPerMinute)
		if rng.IntN(2) == 0 {
			p.scarceBelow = fleetScarceBelow // every slot by pick when the instances have few
		}

		out, v := applyRound(st, p, members, ds)

		grants := int64(len(st.Picks))
		for _, in := range st.Instances {
			grants += max(in.Grant, 0)
		}
		picks := map[int64]int64{}
		var newPicks []store.Pick
		for _, pk := range st.Picks {
			require.False(t, let[pk.Visitor], "trial %d: a pick of a visitor let in", trial)
			picks[pk.Bucket]++
			if !before[pk.Visitor] {
				require.True(t, asked[pk.Visitor], "trial %d: a pick of a visitor nobody asked for", trial)
				require.Greater(t, pk.Until, now, "trial %d: a pick that is over", trial)
				require.LessOrEqual(t, pk.Until, now+p.waitWindow, "trial %d: a pick for too long", trial)
				require.Equal(t, ats[pk.Visitor], pk.From, "trial %d: a pick from when its visitor said they would be back", trial)
				require.Less(t, pk.From, pk.Until, "trial %d: a pick nobody can use", trial)
				newPicks = append(newPicks, pk)
			}
		}
		// The asks left open for the next round: every visitor asked
		// for (in this round's news or left open by the latest) who is
		// still to come back, has no pick and was not let in.
		var open []uint64
		for id := range asked {
			if ats[id]+askSlack(&p) > now && !let[id] && !slices.ContainsFunc(st.Picks, func(pk store.Pick) bool { return pk.Visitor == id }) {
				open = append(open, id)
			}
		}
		require.ElementsMatch(t, open, slices.Collect(maps.Keys(v.Asked)), "trial %d: the asks left open", trial)
		require.True(t, slices.IsSortedFunc(st.Asks, func(x, y store.Ask) int { return cmp.Compare(x.Visitor, y.Visitor) }), "trial %d: the state's asks by visitor", trial)
		for _, a := range st.Asks {
			require.Equal(t, ats[a.Visitor], a.At, "trial %d: an ask kept with the latest moment its visitor gave", trial)
			require.Equal(t, a.At, v.Asked[a.Visitor], "trial %d: the view's asks are the state's", trial)
		}
		require.Len(t, st.Asks, len(open), "trial %d: the state keeps the asks left open", trial)
		var reserves int64
		var reserve *store.Reserve
		if r := st.Reserve; r != nil && r.Slots > 0 {
			reserves, reserve = 1, r
			grants += r.Slots
		}
		require.LessOrEqual(t, v.AdmittedThisMinute+grants, perMinute, "trial %d: admitted this minute and every slot held (random %v, scarce %v %v)", trial, m.Layout != nil && !m.Ordered, p.scarceBelow, v.Scarce)
		require.LessOrEqual(t, v.Active+grants, total, "trial %d: active and every slot held", trial)
		require.LessOrEqual(t, reserves, int64(1), "trial %d: one reserve", trial)
		if v.Scarce {
			for i, c := range out {
				require.LessOrEqual(t, c.g.Total(), members[i].held, "trial %d: few slots an instance, and one carved more than it held", trial)
			}
		}
		if m.Layout != nil && !m.Ordered {
			// With slots enough, the winners asked for are picked from
			// the grants (pickWinners): asked, not let in and within the
			// limits, as checked above.
			if v.Scarce {
				require.Zero(t, reserves, "trial %d: no reserve in random", trial)
			}
			continue // no order to keep
		}
		// The due visitors that no pick covers, by bucket, oldest first.
		var left []Bucket
		for _, b := range v.Buckets {
			left = append(left, Bucket{Arrival: b.Arrival, Due: max(0, b.Due-picks[b.Arrival])})
		}
		for _, pk := range newPicks {
			for _, b := range left {
				if b.Arrival < pk.Bucket {
					require.Zero(t, b.Due, "trial %d: a visitor of bucket %d picked while bucket %d has due visitors left", trial, pk.Bucket, b.Arrival)
				}
			}
		}
		if reserve != nil {
			var oldest *Bucket
			for i := range left {
				if left[i].Due > 0 {
					oldest = &left[i]
					break
				}
			}
			require.NotNil(t, oldest, "trial %d: a reserve with no due visitor left", trial)
			assert.Equal(t, oldest.Arrival, reserve.Upto, "trial %d: the reserve is the oldest bucket's", trial)
			assert.LessOrEqual(t, reserve.Slots, oldest.Due, "trial %d: no more than its due visitors left", trial)
			assert.Equal(t, oldest.Arrival, v.ReservedTo, "trial %d: the view says so", trial)
		}
	}
}

// TestReserveKeptThroughGap checks that the reserve outlives a gap (a
// state that went back, an outage): a round in a grace keeps it and
// carves nothing; a round in a grace over a state that went back to
// before the aggregator's latest reserve covers that reserve's buckets
// again, with no slot; a classic sync that must drop no record as silent
// keeps a reserve that looks stale, and one that may, drops it.
func TestReserveKeptThroughGap(t *testing.T) {
	now := testclock.Start.UnixMilli() + 30_000
	nowMin := MinuteOf(now)
	// Arrival seconds a minute apart, each the last of its minute: the
	// key of any span of seconds a group of instances lays grants over.
	b0, b1 := (nowMin-3)*60+59, (nowMin-2)*60+59
	const agg = "agg"
	for _, tc := range []struct {
		name       string
		round      bool
		grace      bool  // the state's grace runs
		keepSilent bool  // the sync may drop no record as silent
		record     int64 // the reserve record's slots (covering b0, set 5 s ago); -1: none
		reserved   int64 // the aggregator's latest round's reserve covered up to
		want       *store.Reserve
	}{
		{
			name:  "a round in a grace keeps the reserve, marked as set now",
			round: true, grace: true, record: 3,
			want: &store.Reserve{Slots: 3, Upto: b0, Set: now},
		},
		{
			name:  "a round in a grace over a state that went back to before the reserve covers its buckets again, with no slot",
			round: true, grace: true, record: -1, reserved: b0,
			want: &store.Reserve{Upto: b0, Set: now},
		},
		{
			name:  "a round in a grace over a state that went back to a reserve of an older bucket covers the newer one",
			round: true, grace: true, record: 3, reserved: b1,
			want: &store.Reserve{Slots: 3, Upto: b1, Set: now},
		},
		{
			name:  "a round in a grace with no reserve before makes none",
			round: true, grace: true, record: -1,
		},
		{
			name:       "a classic sync that must drop no record as silent keeps a reserve that looks stale",
			keepSilent: true, record: 3,
			want: &store.Reserve{Slots: 3, Upto: b0, Set: now - 5000},
		},
		{
			name:   "a classic sync that may drop silent records drops a stale reserve",
			record: 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &store.State{Version: 7, Epoch: 9, Clock: now - 1000}
			st.Waiting = []store.Cell{{Bucket: b0, Slot: SlotOf(now), N: 20}, {Bucket: b1, Slot: SlotOf(now), N: 50}}
			st.Admitted = []store.Count{{Key: nowMin, N: 20}}
			st.Lease = &store.Lease{Holder: agg, Term: 1, Renewed: now - 1000}
			if tc.record >= 0 {
				st.Reserve = &store.Reserve{Slots: tc.record, Upto: b0, Set: now - 5000}
			}
			if tc.grace {
				st.Grace = now + 2000
			}
			p := params{now: now, rules: limits(fifo, 1000, 100),
				waitWindow: 44_000, dueWindow: 27_000,
				syncInterval: 1000, instanceTTL: 3000, round: tc.round, keepSilent: tc.keepSilent, reserved: tc.reserved}
			const id = "i000"
			st.Instances = append(st.Instances, store.Instance{ID: id, Seen: now - 1000, Seq: 1, Traffic: 2})
			out, v := applyRound(st, p, []member{{id: id, seq: 2, attempts: 2}}, []*delta{newDelta()})

			assert.Equal(t, tc.want, st.Reserve, "the reserve's record")
			wantTo := int64(0)
			if tc.want != nil {
				wantTo = tc.want.Upto
			}
			assert.Equal(t, wantTo, v.ReservedTo, "the view's reserve")
			if tc.grace {
				assert.Nil(t, out[0].g, "nothing carved in a grace")
			}
		})
	}
}

// picksOf returns the picks still good, nil for none, and the newest
// bucket the reserve covers.
func TestPicksOf(t *testing.T) {
	const now = int64(1_000_000)
	st := &store.State{Picks: []store.Pick{
		{Visitor: 1, Bucket: 100, Until: now + 1},
		{Visitor: 2, Bucket: 100, Until: now},
		{Visitor: 3, Bucket: 101, Until: now + 5000},
	}, Reserve: &store.Reserve{Slots: 2, Upto: 101}}
	picks, upto := picksOf(st, now)
	assert.Equal(t, map[uint64]store.Pick{1: st.Picks[0], 3: st.Picks[2]}, picks)
	assert.Equal(t, int64(101), upto)

	picks, upto = picksOf(&store.State{Picks: []store.Pick{{Visitor: 1, Until: now}}}, now)
	assert.Nil(t, picks, "none good")
	assert.Zero(t, upto, "no reserve")
}

// pickWinners turns a random instance's grant into picks of the winners
// asked for, lowest ranks first: those still to come back (before a pick
// of them would end), without a session or a pick already; the rest of the grant stays the instance's.
func TestPickWinners(t *testing.T) {
	const now, longest = int64(1_000_000), int64(30_000)
	p := &params{now: now, waitWindow: longest, rules: limits(random, 1000, 100)}
	asks := func() map[uint64]ask {
		return map[uint64]ask{
			1: {bucket: 100, at: now + 4000},
			2: {bucket: 101, at: now + 29_500}, // a pick lasts longest at most
			3: {bucket: 100, at: now + 4000},   // let in already
			4: {bucket: 100, at: now - 1000},   // not coming back
			5: {bucket: 102, at: now + 4000},   // picked already
			6: {bucket: 100, at: now + 40_000}, // back only after a pick would end
		}
	}
	state := func() *store.State {
		return &store.State{Sessions: []store.Session{{ID: 3}}, Picks: []store.Pick{{Visitor: 5, Bucket: 102, Until: now + 5000}}}
	}
	g := Grant{{Bucket: 100, N: 1}, {Bucket: AnyBucket, N: 5}}

	st := state()
	assert.Equal(t, Grant{{Bucket: AnyBucket, N: 4}}, pickWinners(st, p, asks(), g), "two picked, from the grant's first entries")
	assert.ElementsMatch(t, []store.Pick{
		{Visitor: 5, Bucket: 102, Until: now + 5000},
		{Visitor: 1, Bucket: 100, From: now + 4000, Until: now + 5000},
		{Visitor: 2, Bucket: 101, From: now + 29_500, Until: now + longest},
	}, st.Picks)

	// A grant of one: the lower rank of the two.
	st = state()
	assert.Equal(t, Grant{}, pickWinners(st, p, asks(), Grant{{Bucket: AnyBucket, N: 1}}))
	require.Len(t, st.Picks, 2)
	rank := pickRanks(st, p)
	other := uint64(3) - st.Picks[1].Visitor
	r1, _ := rank(st.Picks[1].Visitor, 0)
	r2, _ := rank(other, 0)
	assert.Less(t, r1, r2, "the lowest rank first")

	// Nothing to pick, or no grant: nothing changes.
	st = state()
	assert.Equal(t, g, pickWinners(st, p, nil, g))
	assert.Nil(t, pickWinners(st, p, asks(), nil), "a holding left as it is")
	assert.Equal(t, state(), st)
}

// settlePicks drops the picks of visitors let in and counts the others
// by bucket.
func TestSettlePicks(t *testing.T) {
	st := &store.State{
		Sessions: []store.Session{{ID: 2}, {ID: 4}},
		Picks: []store.Pick{
			{Visitor: 1, Bucket: 100}, {Visitor: 2, Bucket: 100}, {Visitor: 3, Bucket: 100}, {Visitor: 4, Bucket: 101}, {Visitor: 5, Bucket: 102},
		},
	}
	assert.Equal(t, map[int64]int64{100: 2, 102: 1}, settlePicks(st))
	assert.Equal(t, []store.Pick{{Visitor: 1, Bucket: 100}, {Visitor: 3, Bucket: 100}, {Visitor: 5, Bucket: 102}}, st.Picks)

	st = &store.State{Sessions: []store.Session{{ID: 1}}, Picks: []store.Pick{{Visitor: 1, Bucket: 100}}}
	assert.Nil(t, settlePicks(st), "every pick let in")
	assert.Empty(t, st.Picks)
}

func TestHasSession(t *testing.T) {
	ss := []store.Session{{ID: 2}, {ID: 5}, {ID: 9}}
	for id, want := range map[uint64]bool{0: false, 2: true, 3: false, 5: true, 9: true, 10: false} {
		assert.Equal(t, want, hasSession(ss, id), "visitor %d", id)
	}
	assert.False(t, hasSession(nil, 1))
}

// A fleet is scarce while its slots fall below scarceBelow an instance
// and more wait than may be let in now.
func TestFleetScarce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		layout    bool
		perMinute int64
		instances int
		waiting   int64
		want      bool
	}{
		{"few slots an instance, a queue", true, 100, 40, 500, true},
		{"slots enough an instance", true, 160, 40, 500, false},
		{"no queue", true, 100, 40, 5, false},
		{"no instances counted", true, 100, 0, 500, false},
		{"a method that grants no slots", false, 100, 40, 500, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &params{scarceBelow: fleetScarceBelow, rules: limits(fifo, 1000, tc.perMinute)}
			if !tc.layout {
				p.rules.Layout = nil
			}
			v := &View{Instances: tc.instances, Waiting: tc.waiting}
			assert.Equal(t, tc.want, fleetScarce(p, v))
			p.scarceBelow = 0
			assert.False(t, fleetScarce(p, v), "never with scarceBelow 0")
		})
	}
}

// In random, a fleet's round ranks a visitor by the lowest of their winning draws
// in the intervals a win holds (lottery.Hold, within the seed's period),
// as View.Drawn: a win waits for its visitor, whichever interval they ask
// in. It says until when the draw holds them (a win under its own
// interval's odds, Hold intervals from it; under the odds in force only,
// to the interval's end), and ranks 2, not to be picked, those it does
// not hold, or not for three syncs more (a pick could not reach them).
func TestPickRanksHoldWins(t *testing.T) {
	const refresh = int64(5000)
	start := testclock.Start.Unix() - testclock.Start.Unix()%3600
	w := start*1000/refresh + 10 // the interval of now, the period's eleventh
	seed := store.Seed{Start: start, End: start + 3600, Secret: [32]byte{7}, Interval: refresh,
		Odds: []store.Odds{{Interval: w - 2, Odds: 0.3}, {Interval: w - 1, Odds: 0.2}, {Interval: w, Odds: 0.4}}}
	st := &store.State{Seeds: []store.Seed{seed}}
	draw := func(id uint64, i int64) float64 { return lottery.Draw(seed.Secret, id, i) }
	find := func(f func(id uint64) bool) uint64 {
		for id := uint64(1); ; id++ {
			if f(id) {
				return id
			}
		}
	}
	// Won at w-2 under its own odds (0.3), not since.
	early := find(func(id uint64) bool { return draw(id, w-2) < 0.3 && draw(id, w-1) >= 0.4 && draw(id, w) >= 0.4 })
	// Won at w-1 under its own odds (0.2), not at w.
	last := find(func(id uint64) bool { return draw(id, w-1) < 0.2 && draw(id, w) >= 0.4 && draw(id, w-2) >= 0.4 })
	// At w-2 under the odds in force (0.4) only.
	risen := find(func(id uint64) bool {
		d := draw(id, w-2)
		return d >= 0.3 && d < 0.4 && draw(id, w-1) >= 0.4 && draw(id, w) >= 0.4
	})
	// Twice: the lower draw ranks, the later win holds longest.
	twice := find(func(id uint64) bool { return draw(id, w) < 0.4 && draw(id, w-2) < draw(id, w) && draw(id, w-1) >= 0.4 })
	lost := find(func(id uint64) bool { return draw(id, w-2) >= 0.4 && draw(id, w-1) >= 0.4 && draw(id, w) >= 0.4 })

	for _, tc := range []struct {
		name string
		now  int64
		id   uint64
		rank float64
		end  int64
	}{
		{"won two intervals before", w*refresh + 1200, early, draw(early, w-2), (w + 1) * refresh},
		{"won two intervals before, too late for a pick", w*refresh + 2500, early, 2, (w + 1) * refresh},
		{"won the interval before", w*refresh + 2500, last, draw(last, w-1), (w + 2) * refresh},
		{"under the odds in force only", w*refresh + 1200, risen, draw(risen, w-2), (w + 1) * refresh},
		{"won twice", w*refresh + 1200, twice, draw(twice, w-2), (w + 3) * refresh},
		{"not held", w*refresh + 1200, lost, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &params{now: tc.now, syncInterval: 1000, round: true, rules: Rules{Layout: randomLayout, Refresh: refresh}}
			rank, end := pickRanks(st, p)(tc.id, 0)
			assert.Equal(t, tc.rank, rank)
			assert.Equal(t, tc.end, end)
			// A classic sync picks its own instance's winners, back
			// within a second and let in while Drawn: by their draw of
			// the interval.
			p.round = false
			rank, end = pickRanks(st, p)(tc.id, 0)
			assert.Equal(t, draw(tc.id, w), rank)
			assert.Equal(t, int64(math.MaxInt64), end)
			v := &View{seeds: st.Seeds}
			assert.Equal(t, tc.end > tc.now, v.Holds(tc.id, tc.now, refresh), "as the room holds wins")
		})
	}

	// The period's first interval: no draw of the period before it; its
	// odds not fixed yet, nobody held.
	p := &params{now: start * 1000, syncInterval: 1000, round: true, rules: Rules{Layout: randomLayout, Refresh: refresh}}
	rank, _ := pickRanks(st, p)(early, 0)
	assert.Equal(t, 2.0, rank)
}

// A visitor asked for again while their pick holds tells when they will
// be back: the pick waits for them that long (their instance may not have
// had it in its view), never past the longest a waiting visitor counts
// and never shorter; the others' picks are left as they were, and so
// they are when no slot is left to pick from.
func TestPickWaitsForItsVisitor(t *testing.T) {
	const now, longest = int64(1_000_000), int64(30_000)
	for _, n := range []int64{0, 1} {
		st := &store.State{Picks: []store.Pick{
			{Visitor: 1, Bucket: 100, Until: now + 2000},
			{Visitor: 2, Bucket: 100, Until: now + 2000},
			{Visitor: 3, Bucket: 100, Until: now + 9000},
			{Visitor: 4, Bucket: 100, Until: now + 2000},
		}}
		asks := map[uint64]ask{ // each holds a second more (askSlack)
			1: {bucket: 100, at: now + 5000},
			3: {bucket: 100, at: now + 3000},   // sooner: no shorter
			4: {bucket: 100, at: now + 99_000}, // no longer than longest
			5: {bucket: 101, at: now + 4000},   // no pick yet
		}
		p := &params{now: now, waitWindow: longest, rules: limits(random, 1000, 100)}
		made := pick(st, p, asks, nil, grouping{}, n)
		want := []store.Pick{
			{Visitor: 1, Bucket: 100, Until: now + 6000},
			{Visitor: 2, Bucket: 100, Until: now + 2000},
			{Visitor: 3, Bucket: 100, Until: now + 9000},
			{Visitor: 4, Bucket: 100, Until: now + longest},
		}
		if n > 0 {
			assert.Equal(t, map[int64]int64{101: 1}, made, "the slot left picks the visitor with none")
			want = append(want, store.Pick{Visitor: 5, Bucket: 101, From: now + 4000, Until: now + 5000})
		} else {
			assert.Nil(t, made, "no slot: nobody picked")
		}
		assert.Equal(t, want, st.Picks, "%d slots", n)
	}
}

// keepAsks keeps in the state the asks that still hold, the latest
// moment each visitor gave, but not those of visitors picked or let in;
// a classic sync keeps them as a round does, and the next instance's
// view shows them.
func TestKeepAsks(t *testing.T) {
	const now = int64(1_000_000)
	p := &params{now: now, syncInterval: 1000, rules: limits(fifo, 1000, 100)} // askSlack: a second
	st := &store.State{
		Asks: []store.Ask{
			{Visitor: 1, Bucket: 100, At: now + 1000},
			{Visitor: 2, Bucket: 100, At: now - 1000}, // lapsed: held to now
			{Visitor: 4, Bucket: 101, At: now + 2000}, // let in since
			{Visitor: 5, Bucket: 101, At: now + 2000}, // picked since
		},
		Sessions: []store.Session{{ID: 4}},
		Picks:    []store.Pick{{Visitor: 5, Bucket: 101, Until: now + 4000}},
	}
	got := keepAsks(st, map[uint64]ask{
		1: {bucket: 100, at: now + 3000}, // back later, asked again
		3: {bucket: 102, at: now + 500},
		6: {bucket: 102, at: now - 2000}, // not coming back
	}, p)
	assert.Equal(t, map[uint64]int64{1: now + 3000, 3: now + 500}, got)
	assert.Equal(t, []store.Ask{{Visitor: 1, Bucket: 100, At: now + 3000}, {Visitor: 3, Bucket: 102, At: now + 500}}, st.Asks)
	assert.Nil(t, keepAsks(&store.State{}, nil, p), "none")

	// Classic syncs: the ask of one instance is in the view of the next.
	st = &store.State{Version: 1, Epoch: 2, Clock: now - 1000}
	a, b := newDelta(), newDelta()
	a.ask(9, 100, now+4000)
	pa := *p
	pa.id, pa.seq = "a", 1
	_, v := applySync(st, pa, a)
	assert.Equal(t, map[uint64]int64{9: now + 4000}, v.Asked)
	pb := *p
	pb.id, pb.seq, pb.now = "b", 1, now+500
	_, v = applySync(st, pb, b)
	assert.Equal(t, map[uint64]int64{9: now + 4000}, v.Asked, "kept in the state")
	assert.Equal(t, []store.Ask{{Visitor: 9, Bucket: 100, At: now + 4000}}, st.Asks)
}

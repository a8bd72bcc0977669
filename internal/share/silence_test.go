package share

import (
	"testing"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSilentFleetRecordsDropped checks who drops the record of a fleet
// instance silent for longer than the instance TTL: while a live lease
// says an aggregator keeps the fleet's records (from their mailboxes,
// which they write whether or not its rounds commit), only its round; a
// classic sync drops the others' records as ever, and the fleet's once
// the lease has expired.
func TestSilentFleetRecordsDropped(t *testing.T) {
	const now, ttl = int64(1_000_000), int64(3000)
	fleet, classic := "a", "b"
	for _, tc := range []struct {
		name  string
		lease int64 // ms since the lease was renewed; -1 for none
		round bool
		kept  []string
	}{
		{"classic sync, live lease", 0, false, []string{fleet, classic}},
		{"round, live lease", 0, true, nil},
		{"classic sync, no lease", -1, false, nil},
		{"classic sync, expired lease", fleetLeaseTTLs*ttl + 1, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &store.State{Epoch: 1, Instances: []store.Instance{
				{ID: fleet, Seen: now - ttl - 1, Grant: 1},
				{ID: classic, Seen: now - ttl - 1, Grant: 1},
			}}
			if tc.lease >= 0 {
				st.Lease = &store.Lease{Holder: "c", Renewed: now - tc.lease}
			}
			p := params{now: now, id: "c", instanceTTL: ttl, round: tc.round, waitWindow: 44_000, dueWindow: 27_000,
				rules: limits(fifo, 10, 10)}
			applySync(st, p, newDelta())
			var kept []string
			for _, in := range st.Instances {
				if in.ID == fleet || in.ID == classic {
					kept = append(kept, in.ID)
				}
			}
			assert.Equal(t, tc.kept, kept)
		})
	}
}

// lostToSilence counts a session for each slot a silent instance held,
// and each pick once more when it drops one: the same records when the
// sync is tried again, none for an instance that synced lately, none
// while the sync must drop no record as silent.
func TestLostToSilence(t *testing.T) {
	const now, ttl = int64(1_000_000), int64(3000)
	st := &store.State{Epoch: 1, Instances: []store.Instance{
		{ID: "gone", Seen: now - ttl - 1, Grant: 2, Seq: 4},
		{ID: "live", Seen: now - 1000, Grant: 5},
		{ID: "gone-empty", Seen: now - ttl - 1, Grant: 0},
	}, Picks: []store.Pick{{Visitor: 7, Until: now + 1000}, {Visitor: 8, Until: now + 1000}},
		Sessions: []store.Session{{ID: 8}}}
	p := &params{now: now, id: "me", instanceTTL: ttl, rules: limits(fifo, 10, 10)}
	lost := lostToSilence(st, p, nil)
	require.Len(t, lost, 3, "two slots and a pick whose visitor is not in yet")
	ids := map[uint64]bool{}
	for _, x := range lost {
		assert.NotZero(t, x.ID)
		ids[x.ID] = true
		assert.Equal(t, now/1000, x.Admitted)
		assert.Equal(t, now/1000, x.Seen)
	}
	assert.Len(t, ids, 3, "one record a slot")
	assert.Equal(t, lost, lostToSilence(st, p, nil), "tried again: the same records")

	assert.Empty(t, lostToSilence(st, p, []member{{id: "gone"}, {id: "gone-empty"}}), "syncing: not silent")
	keep := *p
	keep.keepSilent = true
	assert.Empty(t, lostToSilence(st, &keep, nil), "no record dropped as silent")
	live := &store.State{Instances: []store.Instance{{ID: "live", Seen: now - 1000, Grant: 5}}, Picks: st.Picks}
	assert.Empty(t, lostToSilence(live, p, nil), "nobody dropped: the picks count as they are")
}

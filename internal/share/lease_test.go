package share

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/go-waitingroom/waitingroom/store"
)

func TestFleetPeers(t *testing.T) {
	st := &store.State{Instances: []store.Instance{{ID: "a"}, {ID: "b"}}, Lease: &store.Lease{Holder: "b", Term: 7}}
	peers, term := fleetPeers(st, "b")
	assert.Equal(t, []string{"a", "b"}, peers)
	assert.Equal(t, uint64(7), term, "the holder's term")
	_, term = fleetPeers(st, "a")
	assert.Zero(t, term, "not the holder")
	peers, term = fleetPeers(&store.State{}, "a")
	assert.Empty(t, peers)
	assert.Zero(t, term, "no lease")
}

// The view is the state without its instance records, its lease telling
// the fleet's size, and shares no memory with the state.
func TestViewOf(t *testing.T) {
	st := &store.State{
		Version: 5, Epoch: 2,
		Instances: []store.Instance{{ID: "a"}, {ID: "b"}},
		Lease:     &store.Lease{Holder: "a", Term: 3},
		Reserve:   &store.Reserve{Slots: 2, Upto: 100},
		Picks:     []store.Pick{{Visitor: 1}},
		Sessions:  []store.Session{{ID: 1}},
		Waiting:   []store.Cell{{Bucket: 100, Slot: 1, N: 1}},
		Admitted:  []store.Count{{Key: 1, N: 1}},
		Tallies:   []store.Tally{{Minute: 1, Waits: []store.Count{{Key: 10, N: 1}}}},
	}
	pub := viewOf(st, 40)
	assert.Nil(t, pub.Instances)
	assert.Equal(t, int64(40), pub.Lease.Fleet)
	assert.Equal(t, uint64(5), pub.Version)
	assert.Equal(t, st.Sessions, pub.Sessions)
	assert.Equal(t, st.Tallies, pub.Tallies)

	pub.Lease.Term = 9
	pub.Reserve.Slots = 9
	pub.Picks[0].Visitor = 9
	pub.Sessions[0].ID = 9
	pub.Waiting[0].N = 9
	pub.Admitted[0].N = 9
	pub.Tallies[0].Waits[0].N = 9
	assert.Len(t, st.Instances, 2)
	assert.Equal(t, uint64(3), st.Lease.Term)
	assert.Zero(t, st.Lease.Fleet)
	assert.Equal(t, int64(2), st.Reserve.Slots)
	assert.Equal(t, uint64(1), st.Picks[0].Visitor)
	assert.Equal(t, uint64(1), st.Sessions[0].ID)
	assert.Equal(t, int64(1), st.Waiting[0].N)
	assert.Equal(t, int64(1), st.Admitted[0].N)
	assert.Equal(t, int64(1), st.Tallies[0].Waits[0].N)

	none := viewOf(&store.State{Version: 1}, 3)
	assert.Nil(t, none.Lease, "no lease, none made up")
	assert.Nil(t, none.Reserve)
}

package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeFleet decodes the fleet's records of b into a State.
func decodeFleet(b []byte) (*State, []byte, error) {
	d := &decoder{b: b}
	s := &State{}
	d.fleet(s)
	return s, d.b, d.err
}

// The fleet's records come back as they went, each alone or all of them,
// none made up when absent.
func TestFleetRoundTrip(t *testing.T) {
	mailbox := &Mailbox{
		Term: 1, Seq: 2, Acked: 3, Version: 4, Base: 5, Epoch: 6, Adopted: 7, In: 8, Had: 9, Upto: 10,
		Seen: -11, Prev: 12, Held: 13, Fair: 14, Scarce: true, Back: false, Left: true,
		Grant: []Count{{Key: 100, N: 2}, {Key: 1<<63 - 1, N: 1}},
		Batches: []Batch{
			{Seq: 2, Attempts: 5, Sessions: []Session{{ID: 1, Admitted: 10, Seen: 11, End: 12, Revoked: true}},
				Waiting: []Cell{{Bucket: 100, Slot: 3, N: -1}}, Waits: []Count{{Key: 1, N: 4200}},
				Asks: []Ask{{Visitor: 7, Bucket: 100, At: 9000}}},
			{Seq: 3},
		},
	}
	for name, s := range map[string]*State{
		"none":          {},
		"lease":         {Lease: &Lease{Holder: "agg", Term: 7, Renewed: 123456, Fleet: 40}},
		"asks":          {Asks: []Ask{{Visitor: 3, Bucket: 100, At: 7}, {Visitor: 1 << 63, Bucket: -1, At: -2}}},
		"picks":         {Picks: []Pick{{Visitor: 1, Bucket: 100, From: 3, Until: 5}, {Visitor: 2, Bucket: -1, From: -7, Until: -5}}},
		"reserve":       {Reserve: &Reserve{Slots: 3, Upto: 100, Set: 99}},
		"empty reserve": {Reserve: &Reserve{}},
		"mailbox":       {Mailbox: mailbox},
		"empty mailbox": {Mailbox: &Mailbox{}},
		"all":           {Lease: &Lease{Holder: "agg"}, Picks: []Pick{{Visitor: 1}}, Reserve: &Reserve{Slots: 1}, Mailbox: mailbox},
	} {
		t.Run(name, func(t *testing.T) {
			b := appendFleet(nil, s)
			got, rest, err := decodeFleet(b)
			require.NoError(t, err)
			assert.Empty(t, rest, "all read")
			assert.Equal(t, s, got)

			whole, err := UnmarshalState(MarshalState(s))
			require.NoError(t, err)
			assert.Equal(t, s, whole, "within a state")
		})
	}
}

// A flag is 0 or 1; anything else, or a record cut short, is corrupt.
func TestFleetCorrupt(t *testing.T) {
	good := appendFleet(nil, &State{Lease: &Lease{Holder: "agg", Term: 7}, Picks: []Pick{{Visitor: 1}},
		Reserve: &Reserve{Slots: 1}, Mailbox: &Mailbox{Seq: 2, Batches: []Batch{{Seq: 2, Asks: []Ask{{Visitor: 3}}}}}})
	bad := append([]byte{2}, good[1:]...)
	_, _, err := decodeFleet(bad)
	assert.ErrorIs(t, err, ErrCorrupt, "a flag of 2")
	for i := range len(good) {
		_, _, err := decodeFleet(good[:i])
		assert.ErrorIs(t, err, ErrCorrupt, "cut at %d of %d", i, len(good))
	}
}

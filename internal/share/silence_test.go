package share

import (
	"testing"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/stretchr/testify/assert"
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

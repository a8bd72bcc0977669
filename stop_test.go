package waitingroom_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// errRead ends a store's Update that only reads.
var errRead = errors.New("read only")

// readRoom returns a copy of the room's shared state in st.
func readRoom(t testing.TB, st store.Store, name string) store.State {
	t.Helper()
	var out store.State
	err := st.Update(context.Background(), name, func(s *store.State) error {
		out = *s
		out.Sessions = append([]store.Session(nil), s.Sessions...)
		out.Instances = append([]store.Instance(nil), s.Instances...)
		return errRead
	})
	require.ErrorIs(t, err, errRead)
	return out
}

// twoSharing returns two instances of a room in st, synced until they
// share its slots, and what the second holds.
func twoSharing(t *testing.T, clk *clock, st store.Store, mutate func(*waitingroom.Config)) (a, b *testRoom, held int) {
	a = newTestRoomOn(t, clk, st, mutate)
	b = newTestRoomOn(t, clk, st, mutate)
	a.sync()
	b.sync()
	a.sync()
	b.local.Lock()
	defer b.local.Unlock()
	return a, b, int(b.local.Grant().Total())
}

// An instance that stops without a last sync (a crash) may have let
// visitors in from its grant that it never reported. Once it is dropped as
// silent, the slots it held count as taken, so the others never give a
// second visitor a slot the first may have had: admissions in the minute
// stay within New Users Per Minute, and active visitors within Total
// Active Users, however many the stopped instance let in.
func TestStoppedInstanceGrantCountsAsTaken(t *testing.T) {
	onOneGoroutine(t)
	for _, tc := range []struct {
		name          string
		total, perMin int
		used          int // of the stopped instance's grant (-1: all)
		secs          int // that the crowd comes for (30 if 0)
		// browse: those the stopped instance let in go on through the
		// other, each resending their cookie twice a second (a browser's
		// parallel requests): their sessions reach the state as well.
		browse bool
	}{
		{name: "per minute, grant used", total: 1000, perMin: 10, used: -1},
		{name: "per minute, grant unused", total: 1000, perMin: 10, used: 0},
		{name: "per minute, grant used in part", total: 1000, perMin: 10, used: 2},
		{name: "per minute, grant used, its visitors browse on", total: 1000, perMin: 10, used: -1, browse: true},
		// Into the next minute: Total Active Users binds.
		{name: "active, grant used", total: 10, perMin: 10, used: -1, secs: 90},
		{name: "active, grant unused", total: 10, perMin: 10, used: 0, secs: 90},
		{name: "active, grant used in part, its visitors browse on", total: 10, perMin: 10, used: 2, secs: 90, browse: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk, st := newClock(), memstore.New()
			mutate := func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = tc.total, tc.perMin
				c.SessionDuration = 5 * time.Minute
			}
			a, b, held := twoSharing(t, clk, st, mutate)
			require.Positive(t, held, "the instance that stops holds slots")
			used := tc.used
			if used < 0 {
				used = held
			}
			var in []*visitor
			for range used {
				v := &visitor{}
				require.True(t, admitted(b.get(v, "")))
				in = append(in, v)
			}
			// b stops: no sync, no Close. a goes on, and a crowd comes.
			limit := min(tc.total, tc.perMin)
			let := 0
			var crowd []*visitor
			for range max(tc.secs, 30) {
				clk.Add(time.Second)
				a.sync()
				if tc.browse {
					for _, v := range in {
						require.True(t, admitted(a.get(v, "")), "a session goes on through any instance")
						require.True(t, admitted(a.get(v, "")))
					}
				}
				crowd = append(crowd, &visitor{}, &visitor{}, &visitor{})
				for i := 0; i < len(crowd); i++ {
					if admitted(a.get(crowd[i], "")) {
						let++
						crowd = append(crowd[:i], crowd[i+1:]...)
						i--
					}
				}
			}
			assert.LessOrEqual(t, let+used, limit, "admissions, the stopped instance's included")
			s := readRoom(t, st, "launch")
			require.Len(t, s.Instances, 1, "the stopped instance was dropped")
			// What it held counts as taken whether or not it was used:
			// the slots it did not use are lost for the minute (the
			// session), not given twice.
			if !tc.browse {
				assert.Equal(t, limit-held, let, "the others had the rest")
				return
			}
			// The sessions the other instance reports count once more
			// (the limits' safe side): at most those are lost.
			assert.GreaterOrEqual(t, let, limit-held-used, "the others had the rest, but for the sessions counted twice")
		})
	}
}

// Close makes a last sync: the admissions since the latest are counted,
// and the instance's record leaves the state with it, its grant back to
// the pool at once, nothing counted as lost.
func TestCloseLeavesTheState(t *testing.T) {
	clk, st := newClock(), memstore.New()
	a, b, held := twoSharing(t, clk, st, nil) // 10 a minute
	require.GreaterOrEqual(t, held, 2)
	used := held - 1
	for range used {
		require.True(t, admitted(b.get(&visitor{}, "")))
	}
	require.NoError(t, b.Close())
	assert.ErrorIs(t, b.Sync(context.Background()), waitingroom.ErrClosed)
	s := readRoom(t, st, "launch")
	require.Len(t, s.Instances, 1, "the closed instance's record is gone")
	assert.Equal(t, a.id, s.Instances[0].ID)
	assert.Len(t, s.Sessions, used, "its admissions were brought in")
	// The rest of the minute's slots are a's at its next sync, without
	// waiting an instance TTL, and none is lost.
	let := 0
	a.sync()
	for range 20 {
		if admitted(a.get(&visitor{}, "")) {
			let++
		}
	}
	assert.Equal(t, 10-used, let)
	// Closed again: nothing more.
	require.NoError(t, b.Close())
}

// A room that never synced, or whose latest sync failed, makes no last
// sync on Close.
func TestCloseWithoutTheStore(t *testing.T) {
	clk := newClock()
	fs := &flaky{Store: memstore.New()}
	a := newTestRoomOn(t, clk, fs, nil)
	require.True(t, admitted(a.get(&visitor{}, "")))
	fs.down.Store(true)
	clk.Add(time.Second)
	require.Error(t, a.Sync(context.Background()))
	fs.down.Store(false)
	require.NoError(t, a.Close())
	s := readRoom(t, fs, "launch")
	require.Len(t, s.Instances, 1, "no last sync: the record stays, to be dropped as silent")
	assert.Empty(t, s.Sessions)
}

// In a fleet that syncs through an aggregator, Close writes the
// instance's last batch to its mailbox, marked as leaving: the next round
// applies it and removes the instance's record, counting nothing as lost.
// The aggregator closing runs that round itself; the fleet then takes its
// lease over as after a crash.
func TestFleetCloseLeaves(t *testing.T) {
	ordered := orderedIDs()
	clk := newClock()
	st := memstore.New()
	rooms := instances(t, clk, st, fleetSize, ordered(func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1000, 100
		c.SessionDuration = 5 * time.Minute
		c.SyncInterval = -1
	}))
	syncAll := func(rs []*testRoom) {
		for _, rm := range rs {
			require.NoError(t, rm.Sync(context.Background()))
		}
	}
	for range 3 {
		clk.Add(time.Second)
		syncAll(rooms)
	}
	on, leader := fleetOn(rooms)
	require.Equal(t, fleetSize, on)
	require.GreaterOrEqual(t, leader, 0)
	// Every instance but the aggregator lets a visitor in, unreported.
	let := 0
	for i, rm := range rooms {
		if i == leader {
			continue
		}
		tr := rm
		if admitted(tr.get(&visitor{}, "")) {
			let++
		}
	}
	require.Positive(t, let)
	// Half of them close, the aggregator among them.
	var closed, alive []*testRoom
	for i, rm := range rooms {
		if i%2 == 0 || i == leader {
			require.NoError(t, rm.Close())
			closed = append(closed, rm)
		} else {
			alive = append(alive, rm)
		}
	}
	// The aggregator's own last round removed its record and those of
	// the instances that closed before it; the next rounds remove the
	// others', once the lease is taken over.
	for range 10 {
		clk.Add(time.Second)
		syncAll(alive)
	}
	on, leader = fleetOn(alive)
	assert.Equal(t, len(alive), on, "the fleet syncs through a new aggregator")
	assert.GreaterOrEqual(t, leader, 0)
	s := readRoom(t, st, "launch")
	ids := map[string]bool{}
	for _, in := range s.Instances {
		ids[in.ID] = true
	}
	for _, rm := range closed {
		assert.False(t, ids[rm.id], "%s closed: its record is gone", rm.id)
	}
	for _, rm := range alive {
		assert.True(t, ids[rm.id], "%s", rm.id)
	}
	assert.Len(t, s.Sessions, let, "every admission counted once, and nothing counted as lost")
}

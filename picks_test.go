package waitingroom_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// TestScarceRandomAsks checks the instance's side of a fleet with few
// slots an instance in random (fleetScarce): a waiting visitor is asked
// for at a chance with the odds that four times a refresh interval's
// slots give every waiting visitor, and comes back soon when asked for
// (when the draw holds them from the next interval, asked for ahead and
// back two syncs into it);
// the draw is the visitor's for the refresh interval, so a copy of the
// cookie sent to another instance (one cookie on many machines) draws
// the same and gains nothing.
func TestScarceRandomAsks(t *testing.T) {
	const waiting = 300
	// The odds: 2 × 60 a minute × 20 s / 300 waiting = 2/15 an interval
	// (drawScarceMargin).
	clk, rooms, cookies, _ := randomPairQueued(t, 60, waiting, 2.0/15)
	for _, rm := range rooms {
		rm.syncer.Amend(func(v *view) { v.Fleet, v.Scarce, v.Waiting = true, true, waiting })
		rm.local.Lock()
		rm.local.SetGrant(grant{}) // every slot goes by pick
		rm.local.Unlock()
	}
	asked := 0
	for i, cookie := range cookies {
		var got [2]bool
		for j, d := range copiesWaiting(t, clk, rooms, cookie) {
			rm := rooms[j]
			c, ok := rm.readState((&visitor{cookie: cookie}).request(http.MethodGet, ""), clk.Now().UnixMilli())
			require.True(t, ok)
			rm.local.Lock()
			_, got[j] = rm.local.Asked(c.ID)
			rm.local.Unlock()
			now, refresh := clk.Now().UnixMilli(), rm.cfg.RefreshInterval.Milliseconds()
			at, ahead := rm.syncer.Snapshot().NextDrawn(c.ID, now, refresh)
			switch {
			case got[j] && rm.syncer.Snapshot().Drawn(c.ID, now, refresh):
				assert.Equal(t, time.Duration(share.PickWait(rm.cfg.SyncInterval))*time.Millisecond, d.RefreshAfter, "visitor %d asked for: back soon", i)
			case got[j]:
				// Drawn from the next interval: asked for ahead, back
				// two syncs into it, when the pick can be out.
				require.True(t, ahead, "visitor %d asked for, the draw holding them neither now nor next", i)
				// (now is the latest copy's; each came 5 ms apart.)
				assert.LessOrEqual(t, d.RefreshAfter, time.Duration(max(at+2*share.SyncEvery(rm.cfg.SyncInterval), now+1000)-now+10)*time.Millisecond, "visitor %d asked for ahead", i)
			default:
				assert.Greater(t, d.RefreshAfter, rm.cfg.RefreshInterval/2, "visitor %d not asked for: back in about a refresh interval", i)
			}
		}
		assert.Equal(t, got[0], got[1], "visitor %d: the same draw at either instance", i)
		if got[0] {
			asked++
		}
	}
	// At odds of 2/15 an interval, held for three, and asked for an
	// interval ahead: 1 − (13/15)⁴ of 300, 131.
	t.Logf("%d of %d asked for", asked, waiting)
	assert.InDelta(t, 131, asked, 25, "visitors asked for")
}

// TestPickLetsInAnywhere checks the instance's side: a picked visitor is
// let in by an instance without a slot, as one session whichever copies
// of the cookie come; not once the pick has expired, nor before its
// visitor said they would be back, nor while the instance's syncs fail. A visitor of a bucket the reserve covers who
// finds no slot is asked for and told to come back soon.
func TestPickLetsInAnywhere(t *testing.T) {
	clk := newClock()
	ms := memstore.New()
	// a's store can fail (flaky), to find whether a lets a pick in while
	// its syncs fail.
	fa := &flaky{Store: ms}
	rooms, cookie, c := queuedPair(t, clk, fa, ms)
	a, b := rooms[0], rooms[1]
	id, bucket := c.ID, c.Bucket

	setView := func(rm *testRoom, edit func(v *view)) {
		rm.syncer.Amend(edit)
	}
	check := func(rm *testRoom) waitingroom.Verdict {
		d, err := rm.checkRequest((&visitor{cookie: cookie}).request(http.MethodGet, ""))
		require.NoError(t, err)
		return d
	}

	// backSoon checks that rm, whose view edit makes, tells the visitor
	// to come back once a pick can be out, and returns what it asked
	// for them.
	backSoon := func(t *testing.T, rm *testRoom, edit func(v *view)) (int64, bool) {
		setView(rm, edit)
		got := check(rm)
		require.Equal(t, waitingroom.OutcomeWaiting, got.Outcome)
		assert.Equal(t, time.Duration(share.PickWait(rm.cfg.SyncInterval))*time.Millisecond, got.RefreshAfter, "back soon")
		rm.local.Lock()
		asked, ok := rm.local.Asked(id)
		rm.local.Unlock()
		clk.Add(got.RefreshAfter)
		return asked, ok
	}
	t.Run("a visitor of a reserved bucket without a slot asks and comes back soon", func(t *testing.T) {
		asked, ok := backSoon(t, b, func(v *view) { v.Fleet, v.ReservedTo = true, bucket })
		require.True(t, ok, "asked for")
		assert.Equal(t, bucket, asked)
	})
	t.Run("few slots an instance: a visitor whose turn is near asks and comes back soon", func(t *testing.T) {
		_, ok := backSoon(t, b, func(v *view) { v.Fleet, v.Scarce, v.ReservedTo = true, true, 0 })
		assert.True(t, ok, "asked for")
		setView(b, func(v *view) { v.Scarce = false })
	})
	t.Run("a view of a classic sync that shows the reserve: back soon", func(t *testing.T) {
		// The fleet forms again after an outage: the aggregator's
		// reserve is in the state, its rounds are not back yet. Asked
		// for all the same: no other instance gives a chance sooner.
		_, ok := backSoon(t, a, func(v *view) { v.Fleet, v.ReservedTo = false, bucket })
		assert.True(t, ok, "asked for")
	})
	until := clk.Now().UnixMilli() + 5000
	t.Run("not while the instance's syncs fail", func(t *testing.T) {
		fa.down.Store(true)
		require.Error(t, a.Sync(t.Context()))
		fa.down.Store(false)
		defer func() { require.NoError(t, a.Sync(t.Context())) }()
		setView(a, func(v *view) { v.Picks = map[uint64]store.Pick{id: {Visitor: id, Until: until}} })
		got := check(a)
		assert.Equal(t, waitingroom.OutcomeWaiting, got.Outcome)
		clk.Add(got.RefreshAfter)
	})
	t.Run("not once the pick expired", func(t *testing.T) {
		setView(b, func(v *view) { v.Picks = map[uint64]store.Pick{id: {Visitor: id, Until: clk.Now().UnixMilli()}} })
		got := check(b)
		assert.Equal(t, waitingroom.OutcomeWaiting, got.Outcome)
		clk.Add(got.RefreshAfter)
	})
	t.Run("not before the visitor said they would be back", func(t *testing.T) {
		// A copy of the cookie at another instance, sooner than its
		// visitor said they would be back, gains nothing.
		now := clk.Now().UnixMilli()
		setView(b, func(v *view) { v.Picks = map[uint64]store.Pick{id: {Visitor: id, From: now + 1, Until: now + 5000}} })
		got := check(b)
		assert.Equal(t, waitingroom.OutcomeWaiting, got.Outcome)
		clk.Add(got.RefreshAfter)
	})
	t.Run("let in by either instance, one session", func(t *testing.T) {
		from := clk.Now().UnixMilli() // back when they said
		for _, rm := range rooms {
			setView(rm, func(v *view) { v.Picks = map[uint64]store.Pick{id: {Visitor: id, From: from, Until: from + 5000}} })
			rm.local.Lock()
			rm.local.SetGrant(grant{}) // no slot of its own
			rm.local.Unlock()
		}
		got := check(a)
		require.Equal(t, waitingroom.OutcomeAdmitted, got.Outcome)
		assert.Equal(t, id, got.State.ID)
		again := check(b) // the same cookie, sent again to the other instance
		require.Equal(t, waitingroom.OutcomeAdmitted, again.Outcome)
		assert.Equal(t, id, again.State.ID)
		// A browser's parallel requests with the old waiting cookie, six
		// to each instance at once.
		var wg sync.WaitGroup
		got6 := make([]waitingroom.Verdict, 12)
		errs := make([]error, 12)
		for i := range got6 {
			wg.Go(func() {
				got6[i], errs[i] = rooms[i%2].checkRequest((&visitor{cookie: cookie}).request(http.MethodGet, ""))
			})
		}
		wg.Wait()
		for i, d := range got6 {
			require.NoError(t, errs[i])
			assert.Equal(t, waitingroom.OutcomeAdmitted, d.Outcome, "request %d", i)
			assert.Equal(t, id, d.State.ID, "request %d", i)
		}
		syncAll(t, rooms)
		st, err := ms.Read(t.Context(), a.cfg.Name)
		require.NoError(t, err)
		n := 0
		for _, x := range st.Sessions {
			if x.ID == id {
				n++
			}
		}
		assert.Equal(t, 1, n, "one session")
		var admitted int64
		for _, c := range st.Admitted {
			admitted += c.N
		}
		assert.Equal(t, int64(2), admitted, "the first visitor and the picked one, counted once")
	})
}

// queuedPair makes two FIFO instances at one admission a minute, on
// stores sa and sb (one store, or a failing view of it), fills the
// minute and queues a visitor at the first; it returns the instances, the
// visitor's cookie and what it holds, once their next chance is due and
// both instances synced.
func queuedPair(t *testing.T, clk *clock, sa, sb store.Store) ([]*testRoom, string, waitingroom.CookieState) {
	t.Helper()
	mutate := func(c *waitingroom.Config) {
		c.QueueingMethod = waitingroom.FIFO
		c.TotalActiveUsers, c.NewUsersPerMinute = 10, 1
	}
	rooms := []*testRoom{newTestRoomOn(t, clk, sa, mutate), newTestRoomOn(t, clk, sb, mutate)}
	syncAll(t, rooms)
	a := rooms[0]
	first, err := a.checkRequest((&visitor{cookie: ""}).request(http.MethodGet, ""))
	require.NoError(t, err)
	require.Equal(t, waitingroom.OutcomeAdmitted, first.Outcome)
	syncAll(t, rooms)
	d, err := a.checkRequest((&visitor{cookie: ""}).request(http.MethodGet, ""))
	require.NoError(t, err)
	require.Equal(t, waitingroom.OutcomeWaiting, d.Outcome)
	cookie := a.cookieName + "=" + d.CookieValue
	c, ok := a.readState((&visitor{cookie: cookie}).request(http.MethodGet, ""), clk.Now().UnixMilli())
	require.True(t, ok)
	clk.Add(d.RefreshAfter)
	syncAll(t, rooms)
	return rooms, cookie, c
}

// syncAll syncs every room once.
func syncAll(t *testing.T, rooms []*testRoom) {
	t.Helper()
	for _, rm := range rooms {
		require.NoError(t, rm.Sync(t.Context()))
	}
}

// TestAskedWaitsEverywhere checks that a visitor asked for at one
// instance gets no chance at another before the moment they said they
// would be back (State.Asks): a copy of their cookie sent sooner elsewhere
// gets the page, even where a slot is free, and takes nothing; at that
// moment, the chance is theirs.
func TestAskedWaitsEverywhere(t *testing.T) {
	clk := newClock()
	ms := memstore.New()
	rooms, cookie, c := queuedPair(t, clk, ms, ms)
	b := rooms[1]
	at := clk.Now().UnixMilli() + 3000
	b.syncer.Amend(func(v *view) { v.Asked = map[uint64]int64{c.ID: at} })
	b.local.Lock()
	b.local.SetGrant(grant{{Bucket: anyBucket, N: 1}}) // a slot free
	b.local.Unlock()
	send := func() waitingroom.Verdict {
		d, err := b.checkRequest((&visitor{cookie: cookie}).request(http.MethodGet, ""))
		require.NoError(t, err)
		return d
	}
	for _, ahead := range []time.Duration{3 * time.Second, time.Second} {
		got := send()
		require.Equal(t, waitingroom.OutcomeWaiting, got.Outcome, "%v before: a copy sooner waits", ahead)
		assert.Equal(t, ahead, got.RefreshAfter, "back when they said")
		assert.Empty(t, got.CookieValue, "no chance taken: the cookie left alone")
		clk.Add(2 * time.Second)
	}
	b.local.Lock()
	assert.Equal(t, int64(1), b.local.Grant().Total(), "the slot still free")
	b.local.Unlock()
	clk.Add(time.Second)
	assert.Equal(t, waitingroom.OutcomeAdmitted, send().Outcome, "the chance theirs at that moment")
}

package waitingroom_test

import (
	"context"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// TestDrawAcrossInstances checks the draw of a random room on several
// instances (slots.go): copies of a waiting cookie at either instance draw
// the same; a visitor the draw holds is let in at whichever instance has a
// slot, and one it does not hold is not, however often and wherever its
// copies ask; a visitor the draw holds who finds no slot comes back soon,
// and not sooner.
func TestDrawAcrossInstances(t *testing.T) {
	const waiting = 300
	// The odds: 60 a minute × 20 s / 300 waiting = 1/15 an interval.
	clk, rooms, cookies, st := randomPairQueued(t, 1000, waiting, 1.0/15)
	a := rooms[0]
	refresh := a.cfg.RefreshInterval.Milliseconds()
	setGrant := func(n int64) {
		for _, rm := range rooms {
			rm.syncer.Amend(func(v *view) { v.Instances = 2 })
			rm.local.Lock()
			rm.local.SetGrant(grant{})
			if n > 0 {
				rm.local.SetGrant(grant{{Bucket: anyBucket, N: n}})
			}
			rm.local.Unlock()
		}
	}

	// No slot anywhere: who the draw holds comes back soon (a quarter of
	// the interval), at either instance alike; who it will hold from the
	// next interval (their draw in it under the odds in force) at its
	// start; the others in about a refresh interval.
	setGrant(0)
	state, err := st.(store.Reader).Read(context.Background(), a.cfg.Name)
	require.NoError(t, err)
	held := make([]bool, waiting)
	chanceAt := make([]time.Time, waiting)
	retry := time.Duration(waitingroom.DrawRetry(refresh)) * time.Millisecond
	n, next := 0, 0
	for i, cookie := range cookies {
		var got [2]bool
		chanceAt[i] = clk.Now()
		t0 := clk.Now().UnixMilli()
		for j, d := range copiesWaiting(t, clk, rooms, cookie) {
			got[j] = d.RefreshAfter == time.Duration(waitingroom.DrawRetry(refresh))*time.Millisecond
			now := t0 + 5*int64(j+1) // copiesWaiting's
			w := now / refresh
			// The seeds of this interval and the next (their last ms).
			seed, ok := seedAt(state, (w+1)*refresh-1)
			require.True(t, ok)
			after, _ := seedAt(state, (w+2)*refresh-1)
			assert.Equal(t, got[j], d.Estimate.ChancePerMinute == 0, "visitor %d, instance %d: a winner's chance is not the draw's", i, j)
			switch {
			case got[j]:
			case seed == after && lottery.Draw(seed, d.State.ID, w+1) < 1.0/15:
				next++
				assert.Equal(t, time.Duration((w+1)*refresh-now)*time.Millisecond, d.RefreshAfter, "visitor %d, instance %d: held from the next interval", i, j)
			default:
				assert.Greater(t, d.RefreshAfter, a.cfg.RefreshInterval/2, "visitor %d, instance %d: not held, back in about a refresh interval", i, j)
			}
		}
		assert.Equal(t, got[0], got[1], "visitor %d: the same draw at either instance", i)
		held[i] = got[0]
		if got[0] {
			n++
		}
	}
	// At odds of 1/15 an interval, held for three: 1 − (14/15)³ of 300,
	// 56.
	t.Logf("%d of %d held by the draw, %d copies told to come back for the next interval's", n, waiting, next)
	assert.InDelta(t, 56, n, 20, "visitors the draw holds")
	assert.Greater(t, next, 10, "visitors the next interval's draw holds")

	// Slots at both instances: whoever the draw holds is let in at the
	// first, once, back soon as told; the others are not, however often
	// their copies ask at either. Nobody sooner: asking more often,
	// copies would take the slots first.
	setGrant(int64(waiting))
	before := a.Stats().Counters.Admitted
	early := 0
	for i, cookie := range cookies {
		if clk.Now().Before(chanceAt[i].Add(retry)) {
			d, err := a.checkRequest((&visitor{cookie: cookie}).request(http.MethodGet, ""))
			require.NoError(t, err)
			assert.Equal(t, waitingroom.OutcomeWaiting, d.Outcome, "visitor %d: early", i)
			early++
		}
	}
	assert.Greater(t, early, waiting/2)
	clk.Add(retry)
	for range 3 {
		clk.Add(time.Second)
		for i, cookie := range cookies {
			for j, rm := range rooms {
				if held[i] && j > 0 {
					continue // the session is instance 0's until it syncs
				}
				d, err := rm.checkRequest((&visitor{cookie: cookie}).request(http.MethodGet, ""))
				require.NoError(t, err)
				want := waitingroom.OutcomeWaiting
				if held[i] {
					want = waitingroom.OutcomeAdmitted
				}
				assert.Equal(t, want, d.Outcome, "visitor %d, instance %d (held by the draw: %v)", i, j, held[i])
			}
		}
	}
	assert.Equal(t, uint64(n), a.Stats().Counters.Admitted-before, "admissions: one for each visitor the draw holds")
}

// seedAt returns the secret of the lottery's seed in st whose period
// holds ms (Unix ms).
func seedAt(st *store.State, ms int64) (lottery.Seed, bool) {
	for _, x := range st.Seeds {
		if x.Start*1000 <= ms && ms < x.End*1000 {
			return x.Secret, true
		}
	}
	return lottery.Seed{}, false
}

// randomPairQueued is two instances of a random room on a memstore, 60
// a minute and total active at most, no jitter, seeded identities, and
// the cookies of n visitors queued at the first (waitingCookies), with
// the odds of the lottery's draw fixed at odds in the state (fixOdds).
func randomPairQueued(t *testing.T, total, n int, odds float64) (*clock, []*testRoom, []string, store.Store) {
	t.Helper()
	clk := newClock()
	seq := uint64(0)
	st := memstore.New()
	rooms := instances(t, clk, st, 2, func(c *waitingroom.Config) {
		c.QueueingMethod = waitingroom.Random
		c.TotalActiveUsers, c.NewUsersPerMinute = total, 60
		c.RefreshJitter = -1
		// Identities of a seeded source: the counts below are the draw's
		// of those, not of a run's chance.
		seq++
		c.Identities = mrand.New(mrand.NewPCG(7, seq)).Uint64
	})
	// An interval on, so that the three intervals a win holds for lie in
	// the period of the seed the first sync made (from its next second).
	clk.Add(rooms[0].cfg.RefreshInterval)
	cookies := waitingCookies(t, clk, rooms[0], n)
	fixOdds(t, st, rooms, odds)
	return clk, rooms, cookies, st
}

// fixOdds sets the odds of the draw of every interval of the lottery's
// periods in the shared state of rooms (on st) to odds, as their syncs
// fix them an interval ahead (internal/share: keepOdds), and syncs the
// rooms, which never change them then.
func fixOdds(t *testing.T, st store.Store, rooms []*testRoom, odds float64) {
	t.Helper()
	refresh := rooms[0].cfg.RefreshInterval.Milliseconds()
	require.NoError(t, st.Update(context.Background(), rooms[0].cfg.Name, func(s *store.State) error {
		for i := range s.Seeds {
			x := &s.Seeds[i]
			x.Interval, x.Odds = refresh, nil
			for w := share.FloorDiv(x.Start*1000, refresh); (w+1)*refresh <= x.End*1000; w++ { // its last ms in the period
				x.Odds = append(x.Odds, store.Odds{Interval: w, Odds: odds})
			}
		}
		return nil
	}))
	for _, rm := range rooms {
		rm.sync()
	}
}

// waitingCookies queues n new visitors at rm (letting in whoever a slot
// is free for), then moves clk past their first refresh to just after the
// start of a refresh interval of the shared clock, so that requests of a
// few seconds stay within it. It returns their cookies ("name=value").
func waitingCookies(t *testing.T, clk *clock, rm *testRoom, n int) []string {
	t.Helper()
	var cookies []string
	for len(cookies) < n {
		d, err := rm.checkRequest((&visitor{}).request(http.MethodGet, ""))
		require.NoError(t, err)
		if d.Outcome == waitingroom.OutcomeWaiting {
			cookies = append(cookies, rm.cookieName+"="+d.CookieValue)
		}
	}
	clk.Add(rm.cfg.RefreshInterval + time.Second)
	refresh := rm.cfg.RefreshInterval.Milliseconds()
	clk.Add(time.Duration(refresh-clk.Now().UnixMilli()%refresh+100) * time.Millisecond)
	return cookies
}

// copiesWaiting sends a copy of cookie to each of rooms, 5 ms apart, and
// returns their decisions, which must be Waiting.
func copiesWaiting(t *testing.T, clk *clock, rooms []*testRoom, cookie string) []waitingroom.Verdict {
	t.Helper()
	out := make([]waitingroom.Verdict, len(rooms))
	for j, rm := range rooms {
		clk.Add(5 * time.Millisecond) // the copy comes a little later
		d, err := rm.checkRequest((&visitor{cookie: cookie}).request(http.MethodGet, ""))
		require.NoError(t, err)
		require.Equal(t, waitingroom.OutcomeWaiting, d.Outcome)
		out[j] = d
	}
	return out
}

// TestDrawWhereTheStateIsNew checks that a random room on two instances
// draws in the refresh interval in which its state is made: the period of
// the state's first seed begins in it (from the next second), and the
// interval that straddles a period's start draws under its seed. Waiting
// visitors the draw holds are let in during that very interval, and
// nobody else, whether the state was lost and made again or the room
// started on a new store, its visitors coming back with the cookies of
// before.
func TestDrawWhereTheStateIsNew(t *testing.T) {
	configure := func(c *waitingroom.Config) {
		c.QueueingMethod = waitingroom.Random
		c.TotalActiveUsers, c.NewUsersPerMinute = 1000, 60
		c.RefreshJitter = -1
	}
	for _, tc := range []struct {
		name string
		// renew makes the state new at the shared clock's time, and
		// returns the instances that hold it.
		renew func(t *testing.T, clk *clock, st *wipeable, rooms []*testRoom) []*testRoom
	}{
		{"the state lost and made again", func(t *testing.T, clk *clock, st *wipeable, rooms []*testRoom) []*testRoom {
			st.wipe()
			for _, rm := range rooms {
				rm.sync()
			}
			// Nobody is let in until every instance could bring its
			// counts in (internal/share: GraceAfterGap).
			clk.Add(share.GraceAfterGap(rooms[0].cfg.SyncInterval) + time.Second)
			return rooms
		}},
		{"a room started on a new store", func(t *testing.T, clk *clock, _ *wipeable, _ []*testRoom) []*testRoom {
			return instances(t, clk, memstore.New(), 2, configure)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			st := &wipeable{Store: memstore.New()}
			rooms := instances(t, clk, st, 2, configure)
			refresh := rooms[0].cfg.RefreshInterval.Milliseconds()
			cookies := waitingCookies(t, clk, rooms[0], 300)
			made := rooms[0].now()
			w := share.FloorDiv(made, refresh) // the interval in which the state is made
			rooms = tc.renew(t, clk, st, rooms)
			for range 2 {
				for _, rm := range rooms {
					rm.sync()
				}
			}
			now := rooms[0].now()
			require.Equal(t, w, share.FloorDiv(now, refresh), "still the interval in which the state was made")
			v := rooms[0].syncer.Snapshot()
			r, ok := v.RecordAt(now, refresh)
			require.True(t, ok, "the interval's period has a seed")
			assert.Greater(t, r.Start*1000, w*refresh, "a period that began in the interval")
			iw, odds, ok := v.OddsAt(now, refresh)
			require.True(t, ok, "the odds of the interval's draw are fixed")
			require.Equal(t, w, iw)
			t.Logf("odds %.3f", odds)

			var held, let int
			before := rooms[0].Stats().Counters.Admitted + rooms[1].Stats().Counters.Admitted
			for i, cookie := range cookies {
				rm := rooms[i%2]
				s, err := waitingroom.OpenRoomCookie(rm.Room, strings.TrimPrefix(cookie, rm.cookieName+"="))
				require.NoError(t, err)
				drawn := rm.syncer.Snapshot().Drawn(s.ID, rm.now(), refresh)
				d, err := rm.checkRequest((&visitor{cookie: cookie}).request(http.MethodGet, ""))
				require.NoError(t, err)
				if drawn {
					held++
				}
				if d.Outcome == waitingroom.OutcomeAdmitted {
					let++
					assert.True(t, drawn, "visitor %d: let in only if the draw holds them", i)
				} else {
					assert.Equal(t, waitingroom.OutcomeWaiting, d.Outcome, "visitor %d", i)
				}
				clk.Add(10 * time.Millisecond)
			}
			require.Equal(t, w, share.FloorDiv(rooms[0].now(), refresh), "all in the interval in which the state was made")
			t.Logf("%d of %d held by the draw, %d let in", held, len(cookies), let)
			assert.Positive(t, let, "visitors the draw holds let in during the interval in which the state was made")
			assert.Equal(t, uint64(let), rooms[0].Stats().Counters.Admitted+rooms[1].Stats().Counters.Admitted-before)
		})
	}
}

// TestDrawWinnerPicked checks that a winner of the draw on several
// instances whom the instance they reach has no slot for is asked for,
// while New Users Per Minute binds, and let in by the next instance they
// reach once the syncs picked them, from the pick's slot (the instance
// holds none); that a visitor the draw does not hold is neither asked for
// nor let in; and that no winner is asked for while Total Active Users
// binds.
func TestDrawWinnerPicked(t *testing.T) {
	const waiting = 300
	clk, rooms, cookies, st := randomPairQueued(t, 1000, waiting, 1.0/15)
	a, b := rooms[0], rooms[1]
	refresh := a.cfg.RefreshInterval.Milliseconds()
	noSlot := func(rm *testRoom) {
		rm.syncer.Amend(func(v *view) { v.Instances = 2 })
		rm.local.Lock()
		rm.local.SetGrant(grant{})
		rm.local.Unlock()
	}
	asked := func(rm *testRoom, cookie string) bool {
		c, ok := rm.readState((&visitor{cookie: cookie}).request(http.MethodGet, ""), clk.Now().UnixMilli())
		require.True(t, ok)
		rm.local.Lock()
		defer rm.local.Unlock()
		_, ok = rm.local.Asked(c.ID)
		return ok
	}

	// While Total Active Users binds, a winner is not asked for.
	noSlot(a)
	active := a.Stats().Active
	a.syncer.Amend(func(v *view) { v.Active = 1000 })
	for _, cookie := range cookies[:waiting/2] {
		d, err := a.checkRequest((&visitor{cookie: cookie}).request(http.MethodGet, ""))
		require.NoError(t, err)
		require.Equal(t, waitingroom.OutcomeWaiting, d.Outcome)
		require.False(t, asked(a, cookie), "asked for while Total Active Users binds")
	}

	// Otherwise, every winner a has no slot for is asked for, and only
	// they. (With slots to pick them from: the minute's first 60 are
	// taken.)
	require.NoError(t, a.Update(context.Background(), func(s *waitingroom.Settings) { s.NewUsersPerMinute = 600 }))
	noSlot(a)
	a.syncer.Amend(func(v *view) { v.Active = int64(active) })
	won := map[string]bool{}
	for _, cookie := range cookies[waiting/2:] {
		d, err := a.checkRequest((&visitor{cookie: cookie}).request(http.MethodGet, ""))
		require.NoError(t, err)
		require.Equal(t, waitingroom.OutcomeWaiting, d.Outcome)
		won[cookie] = d.RefreshAfter == time.Duration(waitingroom.DrawRetry(refresh))*time.Millisecond
		assert.Equal(t, won[cookie], asked(a, cookie), "asked for if and only if the draw holds them")
	}
	n := 0
	for _, w := range won {
		if w {
			n++
		}
	}
	t.Logf("%d of %d asked for", n, waiting/2)
	require.Greater(t, n, 10)

	// a's sync picks them from its grant, b's brings the picks; b, with
	// no slot of its own, lets in those picked, once each, and nobody
	// else.
	a.sync()
	b.sync()
	noSlot(b)
	state, err := st.(store.Reader).Read(context.Background(), a.cfg.Name)
	require.NoError(t, err)
	require.NotEmpty(t, state.Picks, "winners picked")
	picked := map[uint64]bool{}
	for _, pk := range state.Picks {
		picked[pk.Visitor] = true
	}
	clk.Add(time.Duration(waitingroom.DrawRetry(refresh)) * time.Millisecond)
	a.sync() // neither silent long enough to be dropped
	b.sync()
	noSlot(a)
	noSlot(b)
	state, err = st.(store.Reader).Read(context.Background(), a.cfg.Name)
	require.NoError(t, err)
	before := len(state.Sessions)
	in := 0
	for _, cookie := range cookies[waiting/2:] {
		c, ok := b.readState((&visitor{cookie: cookie}).request(http.MethodGet, ""), clk.Now().UnixMilli())
		require.True(t, ok)
		require.False(t, picked[c.ID] && !won[cookie], "a visitor the draw does not hold was picked")
		d, err := b.checkRequest((&visitor{cookie: cookie}).request(http.MethodGet, ""))
		require.NoError(t, err)
		if picked[c.ID] {
			assert.Equal(t, waitingroom.OutcomeAdmitted, d.Outcome, "a picked winner at an instance without a slot")
			in++
			// A copy of the cookie at the other instance, which has no
			// slot either: the same visitor (one session, counted below).
			d, err = a.checkRequest((&visitor{cookie: cookie}).request(http.MethodGet, ""))
			require.NoError(t, err)
			assert.Equal(t, waitingroom.OutcomeAdmitted, d.Outcome, "a copy of a picked winner's cookie")
			assert.Equal(t, c.ID, d.State.ID, "a copy of a picked winner's cookie: the same visitor")
		} else {
			assert.Equal(t, waitingroom.OutcomeWaiting, d.Outcome, "a visitor not picked, no slot")
		}
	}
	assert.Equal(t, len(picked), in)
	a.sync()
	b.sync()
	state, err = st.(store.Reader).Read(context.Background(), a.cfg.Name)
	require.NoError(t, err)
	assert.Empty(t, state.Picks, "the picks used: their sessions count instead")
	assert.Equal(t, before+in, len(state.Sessions), "one session for each picked winner")
}

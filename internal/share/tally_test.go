package share

import (
	"testing"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundSeconds(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{
		{-5, 0}, {0, 0}, {4, 0}, {5, 10}, {594, 590}, {599, 600},
		{600, 600}, {614, 600}, {615, 630}, {3599, 3600},
		{3600, 3600}, {3749, 3600}, {3750, 3900},
		{6 * 3600, 6 * 3600}, {6*3600 + 899, 6 * 3600}, {6*3600 + 900, 6*3600 + 1800},
		{1 << 40, 48 * 3600},
	} {
		assert.Equal(t, tc.want, roundSeconds(tc.in), "%d s", tc.in)
	}
	// Every duration up to 48 hours lands in one of at most 305 buckets,
	// within half a bucket.
	seen := map[int64]bool{}
	for s := int64(0); s <= 48*3600; s++ {
		r := roundSeconds(s)
		seen[r] = true
		step := map[bool]int64{true: 10, false: 1800}[s < 600]
		switch {
		case s >= 600 && s < 3600:
			step = 30
		case s >= 3600 && s < 6*3600:
			step = 300
		}
		assert.LessOrEqual(t, abs64(r-s), step/2, "%d s", s)
	}
	assert.LessOrEqual(t, len(seen), 305)
}

func abs64(x int64) int64 { return max(x, -x) }

func TestAddCount(t *testing.T) {
	var cs []store.Count
	cs = addCount(cs, 30, 1)
	cs = addCount(cs, 10, 2)
	cs = addCount(cs, 20, 1)
	cs = addCount(cs, 30, 4)
	cs = addCount(cs, 40, 1)
	assert.Equal(t, []store.Count{{Key: 10, N: 2}, {Key: 20, N: 1}, {Key: 30, N: 5}, {Key: 40, N: 1}}, cs)
}

// tallyAt finds a minute's tally, adds it in order when missing, and
// gives none for a minute written already.
func TestTallyAt(t *testing.T) {
	st := &store.State{Recorded: 100, Tallies: []store.Tally{{Minute: 101}, {Minute: 104}}}
	assert.Nil(t, tallyAt(st, 100), "written")
	assert.Nil(t, tallyAt(st, 50), "written")
	tl := tallyAt(st, 104)
	require.NotNil(t, tl)
	tl.Abandoned = 3
	require.NotNil(t, tallyAt(st, 102))
	require.NotNil(t, tallyAt(st, 105))
	var minutes []int64
	for _, x := range st.Tallies {
		minutes = append(minutes, x.Minute)
	}
	assert.Equal(t, []int64{101, 102, 104, 105}, minutes)
	assert.Equal(t, int64(3), tallyAt(st, 104).Abandoned, "the same tally")
}

// cloneTallies shares no memory with what it copies.
func TestCloneTallies(t *testing.T) {
	ts := []store.Tally{{Minute: 1, Waits: []store.Count{{Key: 10, N: 1}}, Sessions: []store.Count{{Key: 60, N: 2}}}}
	c := cloneTallies(ts)
	assert.Equal(t, ts, c)
	c[0].Minute = 2
	c[0].Waits[0].N = 9
	c[0].Sessions[0].N = 9
	assert.Equal(t, []store.Tally{{Minute: 1, Waits: []store.Count{{Key: 10, N: 1}}, Sessions: []store.Count{{Key: 60, N: 2}}}}, ts)
	assert.Nil(t, cloneTallies(nil))
}

// tallySync adds a sync's observations to the tallies of their minutes,
// takes out the minutes over for longer than the delay with their
// admissions, and keeps none without a history store.
func TestTallySync(t *testing.T) {
	const m = int64(29_000_000)
	p := &params{now: m*60_000 + 30_000, instanceTTL: 3000, history: true,
		rules: Rules{TotalActiveUsers: 50, NewUsersPerMinute: 10, Event: "launch"}}
	st := &store.State{Recorded: m - 3, Tallies: []store.Tally{{Minute: m - 2, Abandoned: -1}, {Minute: m - 1}}}
	v := &View{Active: 7, Waiting: 9}
	o := &observations{
		waits:     []minuteValue{{m - 1, 42}, {m, 5}, {m - 9, 5}},
		sessions:  []int64{61},
		abandoned: 2,
	}
	admitted := map[int64]int64{m - 2: 4, m - 1: 6, m: 1}
	due := tallySync(st, p, v, o, admitted)

	require.Len(t, due, 2, "the minutes over for longer than the delay")
	assert.Equal(t, m-2, due[0].Minute)
	assert.Equal(t, int64(4), due[0].Admitted)
	assert.Zero(t, due[0].Abandoned, "never below 0")
	assert.Equal(t, m-1, due[1].Minute)
	assert.Equal(t, int64(6), due[1].Admitted)
	assert.Equal(t, []store.Count{{Key: roundSeconds(42), N: 1}}, due[1].Waits)
	assert.Equal(t, int64(42), due[1].MaxWait)
	assert.Equal(t, m-1, st.Recorded)

	require.Len(t, st.Tallies, 1, "this minute's, not yet over")
	now := st.Tallies[0]
	assert.Equal(t, m, now.Minute)
	assert.Equal(t, []store.Count{{Key: roundSeconds(5), N: 1}}, now.Waits, "a wait of a minute written is not kept")
	assert.Equal(t, []store.Count{{Key: roundSeconds(61), N: 1}}, now.Sessions)
	assert.Equal(t, int64(2), now.Abandoned)
	assert.Equal(t, int64(7), now.Active)
	assert.Equal(t, int64(9), now.Waiting)
	assert.Equal(t, int64(50), now.TotalActiveUsers)
	assert.Equal(t, int64(10), now.NewUsersPerMinute)
	assert.Equal(t, "launch", now.Event)
	require.Len(t, v.Tallies, 1)
	assert.Equal(t, int64(1), v.Tallies[0].Admitted, "the view's tallies count their admissions")
	assert.Zero(t, st.Tallies[0].Admitted, "the state's do not")

	p.history = false
	assert.Nil(t, tallySync(st, p, v, o, admitted))
	assert.Nil(t, st.Tallies, "no history store: no tallies")
	assert.Zero(t, st.Recorded)
}

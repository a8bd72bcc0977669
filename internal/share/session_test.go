package share

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/go-waitingroom/waitingroom/store"
)

func TestSessionTimesAlive(t *testing.T) {
	times := SessionTimes{Window: 60_000, Margin: 2000, Hold: 300_000}
	const seen = int64(1_000_000) // s
	last := (seen+1)*1000 + 62_000 - 1
	for _, tc := range []struct {
		name string
		x    store.Session
		now  int64
		want bool
	}{
		{"seen now", store.Session{Seen: seen}, seen * 1000, true},
		{"the window and margin's last ms", store.Session{Seen: seen}, last, true},
		{"past them", store.Session{Seen: seen}, last + 1, false},
		{"revoked", store.Session{Seen: seen, Revoked: true}, seen * 1000, false},
		{"before its end", store.Session{Seen: seen, End: seen + 10}, (seen+10)*1000 - 1, true},
		{"at its end", store.Session{Seen: seen, End: seen + 10}, (seen + 10) * 1000, false},
		{"seen within the clock lead ahead", store.Session{Seen: seen + MaxClockLead/1000}, seen * 1000, true},
		{"seen further ahead than the clock lead", store.Session{Seen: seen + MaxClockLead/1000 + 1}, seen * 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, times.Alive(&tc.x, tc.now))
		})
	}
	floored := times
	floored.Floors.Seen = (seen + 1) * 1000
	assert.False(t, floored.Alive(&store.Session{Seen: seen}, seen*1000), "seen before the floor")
	floored.Floors.Seen--
	assert.True(t, floored.Alive(&store.Session{Seen: seen}, seen*1000), "seen in the floor's second")
	floored.Floors.Admitted = (seen + 1) * 1000
	assert.False(t, floored.Alive(&store.Session{Admitted: seen, Seen: seen}, seen*1000), "admitted before the floor")
	assert.True(t, floored.Alive(&store.Session{Admitted: seen + 1, Seen: seen + 1}, seen*1000), "admitted after it")
}

func TestSessionTimesKept(t *testing.T) {
	times := SessionTimes{Window: 60_000, Margin: 2000, Hold: 300_000}
	const at = int64(1_000_000) // s
	for _, tc := range []struct {
		name string
		x    store.Session
		now  int64
		want bool
	}{
		{"while its waiting cookies are held", store.Session{Admitted: at, Seen: at}, at*1000 + 302_000 - 1, true},
		{"once they no longer are", store.Session{Admitted: at, Seen: at}, at*1000 + 302_000, false},
		{"while its session lives", store.Session{Admitted: at, Seen: at + 600}, (at+601)*1000 + 62_000 - 1, true},
		{"once it no longer does", store.Session{Admitted: at, Seen: at + 600}, (at+601)*1000 + 62_000, false},
		{"revoked: kept all the same", store.Session{Admitted: at, Seen: at, Revoked: true}, at * 1000, true},
		{"seen further ahead than the clock lead", store.Session{Admitted: at, Seen: at + 3600}, at * 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, times.kept(&tc.x, tc.now))
		})
	}
	// An instance remembers a session it knows of for as long as the state
	// keeps a record admitted and seen at once.
	x := store.Session{Admitted: at, Seen: at}
	assert.False(t, times.kept(&x, at*1000+times.remembered()))
}

// mergeSession keeps the latest sign of life, the earliest admission and
// end, a revoke from either; it is commutative and idempotent, so reports
// merged in any order, any number of times, make one record.
func TestMergeSession(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b store.Session
		want store.Session
	}{
		{"latest seen, earliest admitted", store.Session{ID: 1, Admitted: 10, Seen: 20}, store.Session{ID: 1, Admitted: 5, Seen: 15},
			store.Session{ID: 1, Admitted: 5, Seen: 20}},
		{"an admission not known yet", store.Session{ID: 1, Seen: 20}, store.Session{ID: 1, Admitted: 5, Seen: 6},
			store.Session{ID: 1, Admitted: 5, Seen: 20}},
		{"earliest end, none unknown", store.Session{ID: 1, Seen: 1, End: 90}, store.Session{ID: 1, Seen: 1},
			store.Session{ID: 1, Seen: 1, End: 90}},
		{"earliest end", store.Session{ID: 1, Seen: 1, End: 90}, store.Session{ID: 1, Seen: 1, End: 80},
			store.Session{ID: 1, Seen: 1, End: 80}},
		{"revoked by either", store.Session{ID: 1, Seen: 1}, store.Session{ID: 1, Seen: 1, Revoked: true},
			store.Session{ID: 1, Seen: 1, Revoked: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ab, ba := tc.a, tc.b
			mergeSession(&ab, tc.b)
			mergeSession(&ba, tc.a)
			assert.Equal(t, tc.want, ab)
			assert.Equal(t, tc.want, ba, "in the other order")
			mergeSession(&ab, tc.b)
			mergeSession(&ab, tc.a)
			assert.Equal(t, tc.want, ab, "merged again")
		})
	}
}

func TestRevokedFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		x    store.Session
		from int64
		ok   bool
	}{
		{"revoked: at once", store.Session{Seen: 50, End: 100, Revoked: true}, 0, true},
		{"ends, seen through its last second", store.Session{Seen: 99, End: 100}, 100_000, true},
		{"ends, seen after it", store.Session{Seen: 120, End: 100}, 100_000, true},
		{"ends, last seen before its last second", store.Session{Seen: 98, End: 100}, 0, false},
		{"no end", store.Session{Seen: 98}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, ok := revokedFrom(&tc.x)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.from, from)
		})
	}
}

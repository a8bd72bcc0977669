package share

import (
	"cmp"
	"testing"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/stretchr/testify/assert"
)

func TestMergeCells(t *testing.T) {
	c := func(b, s, n int64) store.Cell { return store.Cell{Bucket: b, Slot: s, N: n} }
	for _, tc := range []struct {
		name string
		cs   []store.Cell
		d    map[cellKey]int64
		want []store.Cell
	}{
		{"empty", nil, nil, nil},
		{"only changes", nil, map[cellKey]int64{{2, 1}: 1, {1, 5}: -1}, []store.Cell{c(1, 5, -1), c(2, 1, 1)}},
		{"no changes", []store.Cell{c(1, 1, 3)}, nil, []store.Cell{c(1, 1, 3)}},
		{"merge", []store.Cell{c(1, 1, 3), c(1, 4, 2), c(3, 1, 1)}, map[cellKey]int64{{1, 4}: -2, {2, 9}: 5, {4, 0}: 1, {0, 0}: 7},
			[]store.Cell{c(0, 0, 7), c(1, 1, 3), c(1, 4, 0), c(2, 9, 5), c(3, 1, 1), c(4, 0, 1)}},
		{"unsorted state", []store.Cell{c(3, 1, 1), c(1, 1, 3)}, map[cellKey]int64{{2, 2}: 1}, []store.Cell{c(1, 1, 3), c(2, 2, 1), c(3, 1, 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, mergeCells(tc.cs, tc.d))
		})
	}
}

// TestOutflowNeverAboveLimit holds that the admission rate the estimates
// and Stats use never reads above the limit it measures against, however
// early in a minute it is read: two admitted in the first 15 seconds of a
// room's life are not 8 a minute against a limit of 2.
func TestOutflowNeverAboveLimit(t *testing.T) {
	const m = 29_000_000 // a minute, Unix minutes
	for _, tc := range []struct {
		name     string
		admitted map[int64]int64
		into     int64 // ms into minute m
		limit    int64
		want     float64
		since    int64 // Unix ms: an event's start (Rules.Since); 0 for none
	}{
		{"two in the first 15 s", map[int64]int64{m: 2}, 15_000, 2, 2, 0},
		{"one in the first 15 s", map[int64]int64{m: 1}, 15_000, 2, 2, 0},
		{"one in the first 45 s", map[int64]int64{m: 1}, 45_000, 10, 1 / 0.75, 0},
		{"full minutes then two early", map[int64]int64{m - 2: 2, m - 1: 2, m: 2}, 5_000, 2, 2, 0},
		{"steady half the limit", map[int64]int64{m - 3: 5, m - 2: 5, m - 1: 5, m: 2}, 30_000, 10, 17 / 3.5, 0},
		{"limit lowered live", map[int64]int64{m - 1: 10, m: 10}, 59_000, 2, 2, 0},
		{"nothing", map[int64]int64{}, 30_000, 5, 0, 0},
		{"since an event's start: before it, not", map[int64]int64{m - 4: 1, m - 1: 10, m: 5}, 30_000, 10, 15 / 1.5, (m - 1) * 60_000},
		{"an event's start this minute", map[int64]int64{m - 4: 1, m: 3}, 30_000, 10, 3 / 0.5, m * 60_000},
		{"nothing since an event's start", map[int64]int64{m - 3: 1}, 30_000, 10, 0, (m - 2) * 60_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := outflow(tc.admitted, m*60_000+tc.into, tc.since, tc.limit)
			assert.InDelta(t, tc.want, got, 1e-9)
			assert.LessOrEqual(t, got, float64(tc.limit))
		})
	}
	// Every moment of a room admitting at its limit from its first second.
	for limit := int64(1); limit <= 7; limit++ {
		adm := map[int64]int64{}
		for ms := int64(0); ms < 6*60_000; ms += 1_000 {
			mm := m + ms/60_000
			// admissions spread over the minute, never above the limit
			adm[mm] = min(limit, (ms%60_000)/(60_000/limit)+1)
			assert.LessOrEqual(t, outflow(adm, m*60_000+ms, 0, limit), float64(limit), "limit %d at %d ms", limit, ms)
		}
	}
}

// mergeSessions merges reports into the records by ID, sorted, and calls
// admitted once for each ID the records lacked.
func TestMergeSessions(t *testing.T) {
	s := func(id uint64, adm, seen int64) store.Session {
		return store.Session{ID: id, Admitted: adm, Seen: seen}
	}
	for _, tc := range []struct {
		name     string
		ss       []store.Session
		d        map[uint64]store.Session
		want     []store.Session
		admitted []uint64
	}{
		{"empty", nil, nil, nil, nil},
		{"signs of life", []store.Session{s(1, 10, 10), s(3, 30, 30)}, map[uint64]store.Session{3: s(3, 0, 40)},
			[]store.Session{s(1, 10, 10), s(3, 30, 40)}, nil},
		{"new visitors", []store.Session{s(2, 10, 10), s(5, 10, 10)}, map[uint64]store.Session{1: s(1, 20, 20), 3: s(3, 20, 20), 9: s(9, 20, 20)},
			[]store.Session{s(1, 20, 20), s(2, 10, 10), s(3, 20, 20), s(5, 10, 10), s(9, 20, 20)}, []uint64{1, 3, 9}},
		{"unsorted records", []store.Session{s(5, 10, 10), s(2, 10, 10)}, map[uint64]store.Session{2: s(2, 0, 15)},
			[]store.Session{s(2, 10, 15), s(5, 10, 10)}, nil},
		{"unsorted records, no report", []store.Session{s(5, 10, 10), s(2, 10, 10)}, nil,
			[]store.Session{s(2, 10, 10), s(5, 10, 10)}, nil},
		// A state written elsewhere may hold an ID twice: one record, both
		// merged, however they are ordered.
		{"an ID twice, unsorted", []store.Session{s(5, 10, 10), {ID: 2, Admitted: 10, Seen: 20}, {ID: 2, Admitted: 8, Seen: 12, Revoked: true}}, nil,
			[]store.Session{{ID: 2, Admitted: 8, Seen: 20, Revoked: true}, s(5, 10, 10)}, nil},
		{"an ID twice, sorted", []store.Session{{ID: 2, Admitted: 10, Seen: 20}, {ID: 2, Admitted: 8, Seen: 12, Revoked: true}, s(5, 10, 10)},
			map[uint64]store.Session{2: s(2, 0, 25)},
			[]store.Session{{ID: 2, Admitted: 8, Seen: 25, Revoked: true}, s(5, 10, 10)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var admitted []uint64
			got := mergeSessions(tc.ss, tc.d, func(x *store.Session) { admitted = append(admitted, x.ID) })
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.admitted, admitted)
		})
	}
}

// mergeSorted merges two lists into one sorted list, summing equal
// entries, whatever the order of either.
func TestMergeSorted(t *testing.T) {
	type kv struct{ k, v int }
	cmpKV := func(a, b kv) int { return cmp.Compare(a.k, b.k) }
	sum := func(a *kv, b kv) { a.v += b.v }
	for _, tc := range []struct {
		name    string
		cs, add []kv
		want    []kv
	}{
		{"both empty", nil, nil, nil},
		{"nothing to add", []kv{{1, 1}, {2, 2}}, nil, []kv{{1, 1}, {2, 2}}},
		{"into nothing", nil, []kv{{2, 2}, {1, 1}}, []kv{{1, 1}, {2, 2}}},
		{"interleaved, equal ones summed", []kv{{1, 1}, {3, 3}, {5, 5}}, []kv{{5, 50}, {0, 7}, {3, 30}, {4, 4}},
			[]kv{{0, 7}, {1, 1}, {3, 33}, {4, 4}, {5, 55}}},
		{"unsorted", []kv{{5, 5}, {1, 1}}, []kv{{3, 3}}, []kv{{1, 1}, {3, 3}, {5, 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, mergeSorted(tc.cs, tc.add, cmpKV, sum))
		})
	}
}

package waitingroom

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/go-waitingroom/waitingroom/store"
)

func TestRandomMinutesWriteUpExample(t *testing.T) {
	// 100 waiting, 10 let in per minute: P = 0.1; a 50 % chance takes
	// log(0.5)/log(0.9) ≈ 6.58 minutes (6 minutes 35 seconds).
	n := randomMinutes(10.0/100, 0.5)
	assert.InDelta(t, 6.58, n, 0.005)
	assert.Equal(t, 6*time.Minute+35*time.Second, time.Duration(n*float64(time.Minute)).Round(time.Second))
}

func TestRandomMinutes(t *testing.T) {
	for _, tc := range []struct {
		P, p, want float64
	}{
		{0.1, 0.25, 2.7304},
		{0.1, 0.75, 13.1576},
		{0.5, 0.5, 1},
		{1, 0.5, 0},
		{2, 0.75, 0},
	} {
		assert.InDelta(t, tc.want, randomMinutes(tc.P, tc.p), 1e-3, "P=%v p=%v", tc.P, tc.p)
	}
	assert.True(t, math.IsInf(randomMinutes(0, 0.5), 1))
}

func TestFIFOEstimate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ahead, per float64
		want       Estimate
	}{
		{"nothing flows", 100, 0, Estimate{}},
		{"nan", math.NaN(), 3, Estimate{}},
		{"nobody ahead", 0, 10, Estimate{Known: true}},
		{"exact", 100, 10, Estimate{Known: true, Wait: 10 * time.Minute}},
		{"rounds up", 101, 10, Estimate{Known: true, Wait: 11 * time.Minute}},
		{"over a day", 2000, 1, Estimate{Known: true, Wait: 2000 * time.Minute, Full: true}},
		{"absurd", 1e18, 1e-9, Estimate{Known: true, Wait: 1e6 * time.Minute, Full: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, fifoEstimate(tc.ahead, tc.per))
		})
	}
}

func TestRandomEstimate(t *testing.T) {
	e := randomEstimate(10, 100)
	assert.Equal(t, Estimate{Known: true, Wait: 7 * time.Minute, P25: 3 * time.Minute, P50: 7 * time.Minute, P75: 14 * time.Minute}, e)
	assert.Equal(t, "3 minutes to 14 minutes", e.Formatted())
	assert.Equal(t, Estimate{}, randomEstimate(0, 100), "nothing flows: unknown")
	assert.Equal(t, Estimate{Known: true}, randomEstimate(5, 0))
	assert.True(t, randomEstimate(1, 1e6).Full)
}

func TestFormatWait(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                 "less than a minute",
		time.Minute:       "1 minute",
		10 * time.Minute:  "10 minutes",
		60 * time.Minute:  "1 hour",
		61 * time.Minute:  "1 hour 1 minute",
		125 * time.Minute: "2 hours 5 minutes",
	} {
		assert.Equal(t, want, Estimate{Known: true, Wait: d}.Formatted())
	}
	assert.Equal(t, "", Estimate{}.Formatted())
	assert.Equal(t, "10 minutes", Estimate{Known: true, Wait: 10 * time.Minute}.Formatted())
}

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
	}{
		{"two in the first 15 s", map[int64]int64{m: 2}, 15_000, 2, 2},
		{"one in the first 15 s", map[int64]int64{m: 1}, 15_000, 2, 2},
		{"one in the first 45 s", map[int64]int64{m: 1}, 45_000, 10, 1 / 0.75},
		{"full minutes then two early", map[int64]int64{m - 2: 2, m - 1: 2, m: 2}, 5_000, 2, 2},
		{"steady half the limit", map[int64]int64{m - 3: 5, m - 2: 5, m - 1: 5, m: 2}, 30_000, 10, 17 / 3.5},
		{"limit lowered live", map[int64]int64{m - 1: 10, m: 10}, 59_000, 2, 2},
		{"nothing", map[int64]int64{}, 30_000, 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := outflow(tc.admitted, m*60_000+tc.into, tc.limit)
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
			assert.LessOrEqual(t, outflow(adm, m*60_000+ms, limit), float64(limit), "limit %d at %d ms", limit, ms)
		}
	}
}

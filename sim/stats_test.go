package sim

import (
	"bytes"
	"encoding/json"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/template"
)

// bruteKendall is tau-b by its definition, over every pair.
func bruteKendall(x, y []int64) float64 {
	var conc, disc, tx, ty float64
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			dx, dy := x[i]-x[j], y[i]-y[j]
			switch {
			case dx == 0 && dy == 0:
			case dx == 0:
				tx++
			case dy == 0:
				ty++
			case (dx > 0) == (dy > 0):
				conc++
			default:
				disc++
			}
		}
	}
	return (conc - disc) / math.Sqrt((conc+disc+tx)*(conc+disc+ty))
}

func TestKendallTau(t *testing.T) {
	for _, tc := range []struct {
		name string
		x, y []int64
		want float64
	}{
		{"same order", []int64{1, 2, 3, 4}, []int64{10, 20, 30, 40}, 1},
		{"reversed", []int64{1, 2, 3, 4}, []int64{4, 3, 2, 1}, -1},
		{"one swap", []int64{1, 2, 3}, []int64{1, 3, 2}, 1.0 / 3},
		// Ties in x only: 5 of 6 pairs untied in x, all in order.
		{"ties in x", []int64{1, 1, 2, 2}, []int64{1, 2, 3, 4}, 4 / math.Sqrt(4*6)},
		{"ties in both", []int64{1, 1, 2, 2}, []int64{5, 5, 7, 7}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, KendallTau(tc.x, tc.y), 1e-12)
			assert.InDelta(t, tc.want, bruteKendall(tc.x, tc.y), 1e-12)
		})
	}
	t.Run("degenerate", func(t *testing.T) {
		assert.True(t, math.IsNaN(KendallTau(nil, nil)))
		assert.True(t, math.IsNaN(KendallTau([]int64{1, 1, 1}, []int64{1, 2, 3})))
		assert.Panics(t, func() { KendallTau([]int64{1}, []int64{1, 2}) })
	})
	t.Run("random against brute force", func(t *testing.T) {
		rng := mrand.New(mrand.NewPCG(1, 2))
		for _, n := range []int{2, 3, 15, 16, 17, 33, 100, 1000} {
			for _, levels := range []int64{3, 50, 1 << 40} {
				x, y := make([]int64, n), make([]int64, n)
				for i := range x {
					x[i] = rng.Int64N(levels)
					y[i] = rng.Int64N(levels) + x[i]/2 // correlated
				}
				want := bruteKendall(x, y)
				got, ceiling := kendall(x, y)
				if math.IsNaN(want) {
					assert.True(t, math.IsNaN(got), "n=%d levels=%d", n, levels)
					continue
				}
				assert.InDelta(t, want, got, 1e-9, "n=%d levels=%d", n, levels)
				assert.GreaterOrEqual(t, ceiling+1e-12, got)
			}
		}
	})
	t.Run("ceiling", func(t *testing.T) {
		// Thirty minutes of ten arrivals each, let in in order: tau-b is
		// its ceiling, √(1 − ties/pairs).
		var x, y []int64
		for i := range int64(300) {
			x, y = append(x, i/10), append(y, i)
		}
		tau, ceiling := kendall(x, y)
		assert.InDelta(t, ceiling, tau, 1e-12)
		pairs, ties := 300.0*299/2, 30*10.0*9/2
		assert.InDelta(t, math.Sqrt(1-ties/pairs), ceiling, 1e-12)
	})
}

func TestChiSquareSurvival(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		dof  int
		want float64
	}{
		// Critical values from standard tables.
		{3.841459, 1, 0.05},
		{6.634897, 1, 0.01},
		{18.307038, 10, 0.05},
		{23.209251, 10, 0.01},
		{103.009508, 81, 0.05},
		{113.512237, 81, 0.01},
		{81, 81, 0.4791014}, // near the mean (series evaluated independently)
		{2, 2, math.Exp(-1)},
		{0, 5, 1},
		{1e4, 81, 0},
	} {
		assert.InDelta(t, tc.want, ChiSquareSurvival(tc.x, tc.dof), 2e-4, "x=%v dof=%d", tc.x, tc.dof)
	}
	assert.True(t, math.IsNaN(ChiSquareSurvival(1, 0)))
	assert.True(t, math.IsNaN(ChiSquareSurvival(math.NaN(), 3)))
}

func TestChiSquareDeciles(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(3, 4))
	n := 5000
	x, indep, same := make([]int64, n), make([]int64, n), make([]int64, n)
	for i := range x {
		x[i] = int64(i)
		indep[i] = rng.Int64()
		same[i] = int64(i) + rng.Int64N(100)
	}
	cs := chiSquareDeciles(x, indep, 10)
	assert.Equal(t, 81, cs.DoF)
	assert.Equal(t, n, cs.N)
	assert.Greater(t, cs.PValue, 0.01, "independent ranks: %+v", cs)
	cs = chiSquareDeciles(x, same, 10)
	assert.Less(t, cs.PValue, 1e-6, "dependent ranks: %+v", cs)
}

func TestQuantile(t *testing.T) {
	assert.True(t, math.IsNaN(quantile(nil, 0.5)))
	assert.Equal(t, 3.0, quantile([]float64{3}, 0.9))
	assert.Equal(t, 2.5, quantile([]float64{1, 2, 3, 4}, 0.5))
	assert.InDelta(t, 3.7, quantile([]float64{1, 2, 3, 4}, 0.9), 1e-12)
}

// pageBody renders d as the room does.
func pageBody(t testing.TB, key string, d *template.Data) []byte {
	var b bytes.Buffer
	require.NoError(t, template.WriteJSON(&b, key, d))
	return b.Bytes()
}

func TestDecodePage(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(5, 6))
	for i := range 200 {
		d := template.Data{
			InWaitingRoom:          rng.IntN(2) == 0,
			WaitTimeKnown:          rng.IntN(2) == 0,
			WaitTime:               rng.IntN(2000),
			WaitTime25Percentile:   rng.IntN(100),
			WaitTime50Percentile:   rng.IntN(200),
			WaitTime75Percentile:   rng.IntN(300),
			WaitTimeFormatted:      []string{"", "10 minutes", `odd "quoted" \ text`, "é ⏳ \u2028"}[i%4],
			QueueIsFull:            rng.IntN(2) == 0,
			LastUpdated:            "2026-01-01T00:00:00.000Z",
			RefreshIntervalSeconds: rng.IntN(400),
			QueueingMethod:         "random",
			IsRandomQueue:          true,
			PositionInLine:         rng.IntN(5000),
		}
		body := pageBody(t, []string{"waitingRoom", "cfWaitingRoom"}[i%2], &d)
		var got template.Data
		require.True(t, decodePage(body, &got), "%s", body)
		// What encoding/json reads, limited to what the client acts on.
		var doc map[string]template.Data
		require.NoError(t, json.Unmarshal(body, &doc))
		for _, want := range doc {
			assert.Equal(t, want.WaitTimeKnown, got.WaitTimeKnown)
			assert.Equal(t, want.QueueIsFull, got.QueueIsFull)
			assert.Equal(t, want.WaitTime, got.WaitTime)
			assert.Equal(t, want.WaitTime25Percentile, got.WaitTime25Percentile)
			assert.Equal(t, want.WaitTime50Percentile, got.WaitTime50Percentile)
			assert.Equal(t, want.WaitTime75Percentile, got.WaitTime75Percentile)
			assert.Equal(t, want.PositionInLine, got.PositionInLine)
			assert.Equal(t, want.RefreshIntervalSeconds, got.RefreshIntervalSeconds)
		}
	}
	for _, bad := range []string{
		``, `{}`, `[]`, `{"k":{}`, `{"k":{}}x`, `{"k":[]}`, `{"k":{"waitTime":"10"}}`,
		`{"k":{"waitTime":1.5}}`, `{"k":{"waitTime":01}}`, `{"k":{"waitTimeKnown":1}}`,
		`{"k":{"a":tru}}`, `{"k":{"a":"\x"}}`, `{"k":{"a":"\u12"}}`, `{"k":{"a":1,}}`,
		`{"k":{"a":{"b":1}}}`, `{"k":{"a\"b":1}}`, `{"k":{"a":"` + "\n" + `"}}`, `{k:{}}`,
	} {
		var d template.Data
		assert.False(t, decodePage([]byte(bad), &d), "%q", bad)
	}
	var d template.Data
	assert.True(t, decodePage([]byte(` {"k" : { "a" : null , "b":-1e3,"refreshIntervalSeconds": 7 } } `), &d))
	assert.Equal(t, 7, d.RefreshIntervalSeconds)
}

func FuzzDecodePage(f *testing.F) {
	f.Add(pageBody(f, "waitingRoom", &template.Data{WaitTimeKnown: true, WaitTime: 3, RefreshIntervalSeconds: 20}))
	f.Add([]byte(`{"k":{"a":"\u00e9"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d template.Data
		ok := decodePage(b, &d)
		var doc map[string]map[string]json.RawMessage
		if ok {
			// Whatever decodePage accepts is JSON of that shape.
			require.NoError(t, json.Unmarshal(b, &doc), "%q", b)
		}
	})
}

func TestReadPage(t *testing.T) {
	w := newResponse()
	w.body = pageBody(t, "waitingRoom", &template.Data{
		WaitTimeKnown: true, WaitTime: 7, WaitTime25Percentile: 2, WaitTime50Percentile: 7,
		WaitTime75Percentile: 14, QueueIsFull: true, RefreshIntervalSeconds: 19,
	})
	pg, ok := readPage(w)
	require.True(t, ok)
	assert.Equal(t, 19e9, float64(pg.refresh))
	assert.Equal(t, Shown{Known: true, Full: true, Wait: 7 * 6e10, P25: 2 * 6e10, P50: 7 * 6e10, P75: 14 * 6e10}, pg.estimate)
	// A browser obeys the Refresh header.
	w.header.Set("Refresh", "21")
	pg, ok = readPage(w)
	require.True(t, ok)
	assert.Equal(t, 21e9, float64(pg.refresh))

	w.body = []byte("<!DOCTYPE html>")
	_, ok = readPage(w)
	assert.False(t, ok)
}

func TestTakeCookie(t *testing.T) {
	var p requests
	r := p.get()
	w := newResponse()
	assert.False(t, takeCookie(w, r))
	http.SetCookie(w, &http.Cookie{Name: "__waitingroom_sim", Value: "abc", Path: "/", HttpOnly: true})
	require.True(t, takeCookie(w, r))
	assert.Equal(t, []string{"__waitingroom_sim=abc"}, r.Header["Cookie"])
	w.reset()
	http.SetCookie(w, &http.Cookie{Name: "__waitingroom_sim", Value: "def"})
	require.True(t, takeCookie(w, r))
	assert.Equal(t, []string{"__waitingroom_sim=def"}, r.Header["Cookie"])
	p.put(r)
	assert.Empty(t, p.get().Header["Cookie"], "a reused request starts without a cookie")
}

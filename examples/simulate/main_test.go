package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	out, data := t.TempDir(), t.TempDir()
	var stdout bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"-out", out, "-data", data, "-visitors", "300", "-seed", "3"}, &stdout))
	t.Log(stdout.String())
	assert.Contains(t, stdout.String(), "fifo: 300 visitors let in")
	assert.Contains(t, stdout.String(), "random: 300 visitors let in")

	for _, tc := range []struct {
		name string
		w, h int
	}{
		{"heatmap-fifo.png", 800, 600},
		{"heatmap-random.png", 800, 600},
		{"wait-by-arrival.png", 1300, 550},
	} {
		f, err := os.Open(filepath.Join(out, tc.name))
		require.NoError(t, err)
		cfg, err := png.DecodeConfig(f)
		f.Close()
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.w, cfg.Width, tc.name)
		assert.Equal(t, tc.h, cfg.Height, tc.name)
	}
	for _, name := range []string{"fifo.json", "random.json"} {
		b, err := os.ReadFile(filepath.Join(data, name))
		require.NoError(t, err)
		var doc struct {
			ArrivalMinutes  []int
			WaitTimeSeconds []float64
		}
		require.NoError(t, json.Unmarshal(b, &doc))
		assert.Len(t, doc.ArrivalMinutes, 300, name)
		assert.Len(t, doc.WaitTimeSeconds, 300, name)
	}

	assert.Error(t, run(t.Context(), []string{"-bogus"}, &stdout))
	assert.Error(t, run(t.Context(), []string{"extra"}, &stdout))
}

func TestHistogram2d(t *testing.T) {
	// numpy.histogram2d([0, 1, 2, 3], [0, 0, 5, 10], bins=(3, 2)) has x
	// edges 0, 1, 2, 3 (the last bin closed) and y edges 0, 5, 10.
	h := histogram2d([]float64{0, 1, 2, 3}, []float64{0, 0, 5, 10}, 3, 2)
	assert.Equal(t, [][]float64{{1, 0}, {1, 0}, {0, 2}}, h.counts)
	assert.Equal(t, 2.0, h.max())
	c, r := h.Dims()
	assert.Equal(t, 3, c)
	assert.Equal(t, 2, r)
	assert.Equal(t, 0.5, h.X(0))
	assert.Equal(t, 7.5, h.Y(1))

	// A single value spans a unit, as in numpy.
	h = histogram2d([]float64{4, 4}, []float64{1, 1}, 2, 2)
	assert.Equal(t, 3.5, h.xmin)
	assert.Equal(t, 4.5, h.xmax)
	assert.Equal(t, [][]float64{{0, 0}, {0, 2}}, h.counts)
}

func TestTicks(t *testing.T) {
	assert.Equal(t, 1.0, niceStep(5))
	assert.Equal(t, 5.0, niceStep(21))
	assert.Equal(t, 100.0, niceStep(600))
	ticks := stepTicks{step: 5}.Ticks(0, 10)
	require.Len(t, ticks, 11)
	assert.Equal(t, "0", ticks[0].Label)
	assert.Empty(t, ticks[1].Label)
	assert.Equal(t, "10", ticks[10].Label)
	for _, tk := range (sqrtTicks{}).Ticks(0, 10) {
		assert.LessOrEqual(t, tk.Value, 10.0)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 10000: "10,000", 1234567: "1,234,567", -1000: "-1,000"} {
		assert.Equal(t, want, thousands(n))
	}
}

func TestDefaultOut(t *testing.T) {
	// Tests run in examples/simulate, inside the library's repository.
	out := defaultOut()
	assert.Equal(t, "img", filepath.Base(out))
	root := filepath.Dir(filepath.Dir(out))
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	assert.Equal(t, libraryModule, modulePath(b))
	assert.Equal(t, "example.com/x", modulePath([]byte("// c\nmodule \"example.com/x\"\n\ngo 1.26\n")))
	assert.Empty(t, modulePath([]byte("go 1.26\n")))
}

func TestRunBots(t *testing.T) {
	out := t.TempDir()
	var stdout bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"-out", out, "-visitors", "300", "-bots", "20"}, &stdout))
	t.Log(stdout.String())
	assert.Contains(t, stdout.String(), "| fifo | pow 16 |")
	assert.Contains(t, stdout.String(), "| random | infinite |")
	f, err := os.Open(filepath.Join(out, "bots.png"))
	require.NoError(t, err)
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	require.NoError(t, err)
	assert.Equal(t, 1200, cfg.Width)
	assert.Equal(t, 500, cfg.Height)
}

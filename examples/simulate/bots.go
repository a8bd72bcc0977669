package main

import (
	"context"
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	vgdraw "gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/go-waitingroom/waitingroom/sim"
)

// runBots runs the bot farm experiment (the write-up's crowd and
// botsPerMinute fresh bot identities a minute, with no challenge, the proof
// of work at two difficulties and the infinite queue), prints its table and
// writes bots.png into out. Visitors arrive at the experiment's rate (a
// smaller crowd over less time).
func runBots(ctx context.Context, out string, visitors, botsPerMinute int, seed uint64, stdout io.Writer) error {
	costs, err := sim.MeasureBotCosts(ctx, 500*time.Millisecond)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "costs: a request %v, %.3g hashes a second: a proof of work of difficulty 16 %v, of 20 %v\n",
		costs.Request, costs.HashesPerSecond, costs.Solve(16).Round(10*time.Microsecond), costs.Solve(20).Round(10*time.Microsecond))
	for _, d := range []struct{ difficulty, n int }{{16, 64}, {20, 8}} {
		mean, err := sim.MeasureSolve(ctx, d.difficulty, d.n)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "real solves of difficulty %d: %v on average over %d\n", d.difficulty, mean.Round(10*time.Microsecond), d.n)
	}
	o := sim.Experiment("")
	o.Visitors, o.BotsPerMinute, o.Seed = visitors, botsPerMinute, seed
	// Fewer visitors arrive over less time, at the experiment's rate.
	o.Arrivals = max(time.Minute, sim.DefaultArrivals*time.Duration(visitors)/sim.DefaultVisitors)
	rows, err := sim.BotFarm(ctx, o, costs)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, sim.FormatBotTable(rows))
	name := filepath.Join(out, "bots.png")
	if err := writeBots(name, rows); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintln(stdout, "wrote", name)
	return nil
}

// writeBots draws, by scenario, what a CPU-second buys the bot farm (log
// scale) and the humans' mean wait, FIFO and random side by side.
func writeBots(name string, rows []sim.BotRow) error {
	var names []string
	perCPU := map[string]plotter.Values{}
	wait := map[string]plotter.Values{}
	for _, r := range rows {
		m := string(r.Method)
		if m == "fifo" {
			names = append(names, r.Scenario.Name)
		}
		perCPU[m] = append(perCPU[m], max(r.SharePerCPU*100, 1e-6))
		wait[m] = append(wait[m], r.HumanMeanWaitSeconds)
	}
	colors := map[string]color.Color{"fifo": color.RGBA{31, 111, 235, 255}, "random": color.RGBA{209, 36, 47, 255}}
	titles := map[string]string{"fifo": "FIFO", "random": "Random"}

	// Left: points joined by lines, on a log scale.
	left := plot.New()
	left.Title.Text = "What a bot CPU-second buys"
	left.Y.Label.Text = "bots' share of admissions (%) per CPU-second"
	left.NominalX(names...)
	left.Y.Scale = plot.LogScale{}
	left.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	for _, m := range []string{"fifo", "random"} {
		xys := make(plotter.XYs, len(perCPU[m]))
		for i, y := range perCPU[m] {
			xys[i] = plotter.XY{X: float64(i), Y: y}
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		l.Color, pts.Color = colors[m], colors[m]
		left.Add(l, pts)
		left.Legend.Add(titles[m], l, pts)
	}
	left.Legend.Top = true

	// Right: bars.
	right := plot.New()
	right.Title.Text = "Humans' mean wait"
	right.Y.Label.Text = "seconds"
	right.NominalX(names...)
	w := vg.Points(18)
	for i, m := range []string{"fifo", "random"} {
		b, err := plotter.NewBarChart(wait[m], w)
		if err != nil {
			return err
		}
		b.Color, b.LineStyle.Width = colors[m], 0
		b.Offset = vg.Length(2*i-1) * w / 2
		right.Add(b)
		right.Legend.Add(titles[m], b)
	}
	right.Legend.Top = true
	right.X.Min, right.X.Max = -0.6, float64(len(names))-0.4
	left.X.Min, left.X.Max = -0.3, float64(len(names))-0.7

	const width, height = 12 * vg.Inch, 5 * vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(dpi))
	dc := vgdraw.New(img)
	white(dc)
	tiles := vgdraw.Tiles{Rows: 1, Cols: 2, PadX: 0.4 * vg.Inch, PadTop: 0.1 * vg.Inch, PadBottom: 0.1 * vg.Inch, PadLeft: 0.1 * vg.Inch, PadRight: 0.2 * vg.Inch}
	plots := [][]*plot.Plot{{left, right}}
	canvases := plot.Align(plots, tiles, dc)
	left.Draw(canvases[0][0])
	right.Draw(canvases[0][1])
	return savePNG(name, img)
}

package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"
	"os"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	vgdraw "gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// bins is the number of bins on each axis of the heat maps, as in the
// write-up (numpy.histogram2d with bins=(30, 30)).
const bins = 30

// dpi is the resolution of the images.
const dpi = 100

// hist2d is a two-dimensional histogram with numpy.histogram2d's
// semantics: on each axis, equal bins from the smallest value to the
// largest, the last bin closed on the right.
type hist2d struct {
	counts     [][]float64 // [x bin][y bin]
	xmin, xmax float64
	ymin, ymax float64
	yScale     float64 // Y reports bin centers times yScale
}

func histogram2d(x, y []float64, nx, ny int) *hist2d {
	h := &hist2d{counts: make([][]float64, nx), yScale: 1}
	for i := range h.counts {
		h.counts[i] = make([]float64, ny)
	}
	h.xmin, h.xmax = span(x)
	h.ymin, h.ymax = span(y)
	for i := range x {
		h.counts[bin(x[i], h.xmin, h.xmax, nx)][bin(y[i], h.ymin, h.ymax, ny)]++
	}
	return h
}

// span is the range of v, widened to a unit around a single value.
func span(v []float64) (lo, hi float64) {
	lo, hi = slices.Min(v), slices.Max(v)
	if lo == hi {
		lo, hi = lo-0.5, hi+0.5
	}
	return lo, hi
}

func bin(v, lo, hi float64, n int) int {
	return min(int((v-lo)/(hi-lo)*float64(n)), n-1)
}

func (h *hist2d) Dims() (c, r int)   { return len(h.counts), len(h.counts[0]) }
func (h *hist2d) Z(c, r int) float64 { return h.counts[c][r] }
func (h *hist2d) X(c int) float64 {
	w := (h.xmax - h.xmin) / float64(len(h.counts))
	return h.xmin + (float64(c)+0.5)*w
}
func (h *hist2d) Y(r int) float64 {
	w := (h.ymax - h.ymin) / float64(len(h.counts[0]))
	return (h.ymin + (float64(r)+0.5)*w) * h.yScale
}

func (h *hist2d) max() float64 {
	m := 0.0
	for _, col := range h.counts {
		m = max(m, slices.Max(col))
	}
	return m
}

// writeHeatmap renders r's 30 × 30 heat map of arrival minute against wait,
// with a color scale of visitors per bin. Colors follow the square root of
// the count, so that the sparse bins of long waits stay visible next to the
// crowded ones.
func writeHeatmap(name string, r methodRun) error {
	res := r.res
	if len(res.WaitTimeSeconds) == 0 {
		return errNoData
	}
	x := make([]float64, len(res.ArrivalMinutes))
	for i, m := range res.ArrivalMinutes {
		x[i] = float64(m)
	}
	h := histogram2d(x, res.WaitTimeSeconds, bins, bins)
	h.yScale = 1.0 / 60 // seconds, shown in minutes
	peak := max(h.max(), 1)

	cmap := moreland.ExtendedBlackBody()
	cmap.SetMin(0)
	cmap.SetMax(math.Sqrt(peak))
	hm, err := cells(h, cmap)
	if err != nil {
		return err
	}

	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s queueing: wait by arrival minute, %s visitors in %d × %d bins", r.title(), thousands(len(x)), bins, bins)
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = "Arrival minute"
	p.Y.Label.Text = "Wait (minutes)"
	p.Add(hm)
	p.X.Min, p.X.Max = h.xmin, h.xmax
	p.Y.Min, p.Y.Max = h.ymin*h.yScale, h.ymax*h.yScale
	p.X.Padding, p.Y.Padding = 0, 0
	p.X.Tick.Marker = stepTicks{step: 5}
	p.Y.Tick.Marker = stepTicks{step: niceStep(p.Y.Max - p.Y.Min)}

	bar := plot.New()
	bar.Add(&plotter.ColorBar{ColorMap: cmap, Vertical: true})
	bar.HideX()
	bar.Y.Label.Text = "Visitors per bin (square-root scale)"
	bar.Y.Padding = 0
	bar.Y.Tick.Marker = sqrtTicks{}
	bar.Title.Text = " " // aligns the bar with the heat map under its title
	bar.Title.TextStyle.Font.Size = p.Title.TextStyle.Font.Size
	bar.Title.Padding = p.Title.Padding

	const width, height = 8 * vg.Inch, 6 * vg.Inch
	const barWidth = 1.2 * vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(dpi))
	dc := vgdraw.New(img)
	white(dc)
	p.Draw(vgdraw.Crop(dc, 0, -barWidth, 0, 0))
	bar.Draw(vgdraw.Crop(dc, width-barWidth+0.2*vg.Inch, -0.1*vg.Inch, 0.42*vg.Inch, 0))
	return savePNG(name, img)
}

// cellPixels is the side, in pixels, of a histogram cell in the image
// behind a heat map: large enough that scaling the image to the plot
// blurs only the cells' edges.
const cellPixels = 24

// cells draws h as an image, one solid square per bin colored by the square
// root of its count, placed over the histogram's data range.
func cells(h *hist2d, cmap palette.ColorMap) (*plotter.Image, error) {
	nx, ny := h.Dims()
	img := image.NewRGBA(image.Rect(0, 0, nx*cellPixels, ny*cellPixels))
	for c := range nx {
		for r := range ny {
			col, err := cmap.At(math.Min(math.Sqrt(h.Z(c, r)), cmap.Max()))
			if err != nil {
				return nil, err
			}
			cell := image.Rect(c*cellPixels, (ny-1-r)*cellPixels, (c+1)*cellPixels, (ny-r)*cellPixels)
			draw.Draw(img, cell, image.NewUniform(col), image.Point{}, draw.Src)
		}
	}
	return plotter.NewImage(img, h.xmin, h.ymin*h.yScale, h.xmax, h.ymax*h.yScale), nil
}

// sqrtTicks labels an axis in square-root units with the counts it stands
// for.
type sqrtTicks struct{}

func (sqrtTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, n := range []float64{0, 1, 5, 10, 25, 50, 100, 200, 300, 500, 1000, 2000, 5000, 10000} {
		if v := math.Sqrt(n); v >= lo && v <= hi {
			ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprint(n)})
		}
	}
	return ticks
}

// stepTicks puts a labelled tick every step and four unlabelled ones in
// between.
type stepTicks struct{ step float64 }

func (t stepTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	minor := t.step / 5
	for i := math.Ceil(lo / minor); i*minor <= hi+1e-9; i++ {
		v := i * minor
		tick := plot.Tick{Value: v}
		if math.Mod(i, 5) == 0 {
			tick.Label = fmt.Sprint(v)
		}
		ticks = append(ticks, tick)
	}
	return ticks
}

// niceStep is a step of 1, 2 or 5 times a power of ten that cuts span in
// four to ten parts.
func niceStep(span float64) float64 {
	if span <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(span/4)))
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(m*p) <= 10 {
			return m * p
		}
	}
	return 10 * p
}

// writeScatter renders every visitor's wait against their arrival time,
// one panel per method on a shared scale, with the mean and the 10th and
// 90th percentiles of each arrival minute.
func writeScatter(name string, runs []methodRun) error {
	ymax := 0.0
	for _, r := range runs {
		if len(r.res.WaitTimeSeconds) == 0 {
			return errNoData
		}
		ymax = max(ymax, slices.Max(r.res.WaitTimeSeconds)/60)
	}
	ymax = math.Ceil(ymax)
	var plots []*plot.Plot
	for _, r := range runs {
		p, err := scatterPlot(r, ymax)
		if err != nil {
			return err
		}
		plots = append(plots, p)
	}

	const width, height = 13 * vg.Inch, 5.5 * vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(dpi))
	dc := vgdraw.New(img)
	white(dc)
	tiles := vgdraw.Tiles{Rows: 1, Cols: len(plots), PadX: 0.3 * vg.Inch, PadTop: 0.1 * vg.Inch, PadBottom: 0.1 * vg.Inch, PadLeft: 0.1 * vg.Inch, PadRight: 0.2 * vg.Inch}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	return savePNG(name, img)
}

func scatterPlot(r methodRun, ymax float64) (*plot.Plot, error) {
	res := r.res
	pts := make(plotter.XYs, 0, len(res.WaitTimeSeconds))
	perMinute := map[int][]float64{}
	for i := range res.VisitorRecords {
		v := &res.VisitorRecords[i]
		if !v.WasAdmitted {
			continue
		}
		w := v.Wait().Minutes()
		pts = append(pts, plotter.XY{X: v.Arrival.Minutes(), Y: w})
		m := int(v.Arrival.Minutes())
		perMinute[m] = append(perMinute[m], w)
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle.Radius = vg.Points(1.1)
	sc.GlyphStyle.Shape = vgdraw.CircleGlyph{}
	sc.GlyphStyle.Color = color.NRGBA{R: 70, G: 110, B: 180, A: 70}

	minutes := make([]int, 0, len(perMinute))
	for m := range perMinute {
		minutes = append(minutes, m)
	}
	slices.Sort(minutes)
	mean := make(plotter.XYs, len(minutes))
	p10 := make(plotter.XYs, len(minutes))
	p90 := make(plotter.XYs, len(minutes))
	for i, m := range minutes {
		ws := perMinute[m]
		slices.Sort(ws)
		sum := 0.0
		for _, w := range ws {
			sum += w
		}
		x := float64(m) + 0.5
		mean[i] = plotter.XY{X: x, Y: sum / float64(len(ws))}
		p10[i] = plotter.XY{X: x, Y: ws[len(ws)/10]}
		p90[i] = plotter.XY{X: x, Y: ws[len(ws)*9/10]}
	}
	meanLine, err := plotter.NewLine(mean)
	if err != nil {
		return nil, err
	}
	meanLine.Color = color.NRGBA{R: 215, G: 48, B: 39, A: 255}
	meanLine.Width = vg.Points(2.5)
	lo, err := plotter.NewLine(p10)
	if err != nil {
		return nil, err
	}
	hi, err := plotter.NewLine(p90)
	if err != nil {
		return nil, err
	}
	for _, l := range []*plotter.Line{lo, hi} {
		l.Color = color.NRGBA{R: 230, G: 140, B: 20, A: 255}
		l.Width = vg.Points(1.5)
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}

	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s queueing: wait of each of %s visitors", r.title(), thousands(len(pts)))
	p.X.Label.Text = "Arrival (minutes)"
	p.Y.Label.Text = "Wait (minutes)"
	p.X.Min, p.Y.Min, p.Y.Max = 0, 0, ymax
	p.X.Tick.Marker = stepTicks{step: 5}
	p.Y.Tick.Marker = stepTicks{step: niceStep(ymax)}
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(8)
	p.Add(plotter.NewGrid(), sc, lo, hi, meanLine)
	p.Legend.Add("visitor", sc)
	p.Legend.Add("mean of the minute", meanLine)
	p.Legend.Add("10th / 90th percentile", lo)
	p.Legend.Top = true
	p.Legend.Left = true
	return p, nil
}

// thousands formats n with comma separators: 10,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// white paints the canvas white: PNGs are otherwise transparent.
func white(dc vgdraw.Canvas) {
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
}

func savePNG(name string, img *vgimg.Canvas) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

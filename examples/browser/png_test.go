package browser

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// smallPNG re-encodes a screenshot to keep the copies in docs small: in at
// most 256 colors, the most frequent ones (a page has few; the others, the
// edges of antialiased text and lines, take the nearest), compressed at
// the best level. An image of 256 colors or fewer keeps every pixel.
func smallPNG(in []byte) ([]byte, error) {
	src, err := png.Decode(bytes.NewReader(in))
	if err != nil {
		return nil, err
	}
	b := src.Bounds()
	counts := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.RGBAModel.Convert(src.At(x, y)).(color.RGBA)]++
		}
	}
	colors := make([]color.RGBA, 0, len(counts))
	for c := range counts {
		colors = append(colors, c)
	}
	slices.SortFunc(colors, func(a, b color.RGBA) int {
		if d := counts[b] - counts[a]; d != 0 {
			return d
		}
		return int(a.R)<<24 | int(a.G)<<16 | int(a.B)<<8 | int(a.A) - (int(b.R)<<24 | int(b.G)<<16 | int(b.B)<<8 | int(b.A))
	})
	pal := make(color.Palette, 0, 256)
	for _, c := range colors[:min(256, len(colors))] {
		pal = append(pal, c)
	}
	dst := image.NewPaletted(b, pal)
	index := map[color.RGBA]uint8{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(src.At(x, y)).(color.RGBA)
			i, ok := index[c]
			if !ok {
				i = uint8(pal.Index(c))
				index[c] = i
			}
			dst.SetColorIndex(x, y, i)
		}
	}
	var out bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&out, dst); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func TestSmallPNG(t *testing.T) {
	encode := func(img image.Image) []byte {
		var buf bytes.Buffer
		require.NoError(t, png.Encode(&buf, img))
		return buf.Bytes()
	}
	// A page of a few colors keeps every pixel.
	few := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for y := range 30 {
		for x := range 40 {
			few.Set(x, y, color.RGBA{uint8(x%16) * 16, uint8(y%8) * 32, 200, 255}) // 128 colors
		}
	}
	out, err := smallPNG(encode(few))
	require.NoError(t, err)
	got, err := png.Decode(bytes.NewReader(out))
	require.NoError(t, err)
	require.Equal(t, few.Bounds(), got.Bounds())
	for y := range 30 {
		for x := range 40 {
			require.Equal(t, few.At(x, y), color.RGBAModel.Convert(got.At(x, y)), "(%d, %d)", x, y)
		}
	}

	// More colors than a palette holds: each pixel takes a near one.
	many := image.NewRGBA(image.Rect(0, 0, 256, 4))
	for y := range 4 {
		for x := range 256 {
			many.Set(x, y, color.RGBA{uint8(x), uint8(255 - x), uint8(y * 60), 255})
		}
	}
	out, err = smallPNG(encode(many))
	require.NoError(t, err)
	got, err = png.Decode(bytes.NewReader(out))
	require.NoError(t, err)
	for y := range 4 {
		for x := range 256 {
			w, g := many.RGBAAt(x, y), color.RGBAModel.Convert(got.At(x, y)).(color.RGBA)
			assert.InDelta(t, int(w.R)+int(w.G)+int(w.B), int(g.R)+int(g.G)+int(g.B), 200, "(%d, %d)", x, y)
		}
	}

	_, err = smallPNG([]byte("not a png"))
	assert.Error(t, err)
}

// writeShot writes a screenshot into dir as name, made small (smallPNG).
func writeShot(t *testing.T, dir, name string, shot []byte) {
	t.Helper()
	small, err := smallPNG(shot)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), small, 0o644))
	t.Logf("%s: %d bytes", name, len(small))
}

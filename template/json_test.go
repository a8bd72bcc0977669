package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
)

func TestWriteJSON(t *testing.T) {
	d := randomData()
	d.QueueIsFull = true
	d.WaitTimeHours = 1
	d.WaitTimeFormatted = `5 minutes to 15 minutes <b>&</b> "quoted"`
	d.IsEventActive = true
	d.TimeUntilEventEnd, d.TimeUntilEventEndFormatted = 125, "2 hours 5 minutes"

	for _, key := range []string{"waitingRoom", "cfWaitingRoom"} {
		t.Run(key, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, WriteJSON(&b, key, d))
			out := b.String()
			assert.True(t, strings.HasSuffix(out, "}\n"), "ends with a newline")
			assert.True(t, strings.HasPrefix(out, `{"`+key+`":{`), out)
			assert.NotContains(t, out, "<b>", "HTML-safe JSON")

			var outer map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(b.Bytes(), &outer))
			require.Len(t, outer, 1)
			raw, ok := outer[key]
			require.True(t, ok)

			var fields map[string]any
			require.NoError(t, json.Unmarshal(raw, &fields))
			assert.Len(t, fields, 28)
			want := map[string]any{
				"inWaitingRoom":          true,
				"waitTimeKnown":          true,
				"waitTime":               float64(10),
				"waitTimeHours":          float64(1),
				"waitTimeHourMinutes":    float64(10),
				"waitTime25Percentile":   float64(5),
				"waitTime50Percentile":   float64(10),
				"waitTime75Percentile":   float64(15),
				"waitTimeFormatted":      `5 minutes to 15 minutes <b>&</b> "quoted"`,
				"queueIsFull":            true,
				"queueAll":               false,
				"lastUpdated":            lastUpdated,
				"refreshIntervalSeconds": float64(30),
				"queueingMethod":         "random",
				"isFIFOQueue":            false,
				"isRandomQueue":          true,
				"isPassthroughQueue":     false,
				"isRejectQueue":          false,

				"isEventActive":                true,
				"isEventPrequeueing":           false,
				"timeUntilEventStart":          float64(0),
				"timeUntilEventStartFormatted": "",
				"timeUntilEventEnd":            float64(125),
				"timeUntilEventEndFormatted":   "2 hours 5 minutes",
				"shuffleAtEventStart":          false,
			}
			for name, v := range want {
				assert.Equal(t, v, fields[name], "field %s", name)
			}

			var back Data
			require.NoError(t, json.Unmarshal(raw, &back))
			assert.Equal(t, *d, back)
		})
	}

	t.Run("nil data and odd key", func(t *testing.T) {
		var b bytes.Buffer
		require.NoError(t, WriteJSON(&b, `a"b`, nil))
		var outer map[string]Data
		require.NoError(t, json.Unmarshal(b.Bytes(), &outer))
		assert.Equal(t, map[string]Data{`a"b`: {}}, outer)
	})

	t.Run("write error", func(t *testing.T) {
		boom := errors.New("boom")
		assert.ErrorIs(t, WriteJSON(failingWriter{boom}, "waitingRoom", d), boom)
	})
}

func TestIsExactJSON(t *testing.T) {
	for accept, want := range map[string]bool{
		"application/json":                true,
		"APPLICATION/JSON":                true,
		" \tapplication/json ":            true,
		"application/json, text/plain":    false,
		"application/json;q=1":            false,
		"application/json; charset=utf-8": false,
		"application/jsonx":               false,
		"text/html":                       false,
		"*/*":                             false,
		"":                                false,
	} {
		assert.Equal(t, want, IsExactJSON(accept), "%q", accept)
	}
}

func TestWantsJSON(t *testing.T) {
	tests := []struct {
		accept string
		want   bool
	}{
		{"application/json", true},
		{"application/json, text/plain", true},
		{"application/json, text/plain, */*", true},
		{"text/plain;q=0.5, application/json;q=0.9", true},
		{"APPLICATION/JSON", true},
		{"Application/Json; Charset=UTF-8", true},
		{"  application/json  ;  q=0.1  ", true},
		{"\tapplication/json\t", true},
		{"application/json;q=1.0", true},
		{"application/json;q=0.001", true},
		{"application/json;q=abc", true}, // malformed q: still listed
		{"application/json, text/html;q=0", true},
		{"application/json,,,", true},
		{",application/json", true},

		{"", false},
		{"*/*", false},
		{"application/*", false},
		{"text/html", false},
		{"text/plain", false},
		{acceptChrome, false},
		{acceptFirefox, false},
		{acceptSafari, false},
		{"application/json, text/html", false},
		{"text/html;q=0.1, application/json", false},
		{"application/json, TEXT/HTML", false},
		{"application/json;q=0", false},
		{"application/json; q=0.0", false},
		{"application/json;Q=0.000", false},
		{"application/json;q=0.", false},
		{"application/json;q=0, text/plain", false},
		{"application/jsonx", false},
		{"application/json+ld", false},
		{"application/problem+json", false},
		{"application/j\u017fon", false}, // long s folds to s in Unicode, not in ASCII
		{"xapplication/json", false},
		{"application /json", false},
		{";;;,,,===", false},
		{"\x00\xff\xfe garbage \x7f", false},
		{"application/json" + strings.Repeat(" ", 5000), false}, // entry cut off at the limit
		{"application/json, " + strings.Repeat("x", 1<<20), true},
		{strings.Repeat("text/plain, ", 1<<20/12) + "application/json", false},
		{"application/json, " + strings.Repeat("a/b, ", 100) + "text/html", true}, // past 64 entries
		{strings.Repeat("a/b, ", 70) + "application/json", false},
		{"application/json, " + strings.Repeat("a/b, ", 1<<20/5), true},
	}
	for _, tt := range tests {
		name := tt.accept
		if len(name) > 60 {
			name = fmt.Sprintf("%s...(%d bytes)", name[:40], len(tt.accept))
		}
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tt.want, WantsJSON(tt.accept))
		})
	}
}

func TestWantsJSONBoundedWork(t *testing.T) {
	huge := strings.Repeat("application/xml;q=0.1;a=b, ", 1<<25/27) // 32 MiB
	start := time.Now()
	for i := 0; i < 1000; i++ {
		WantsJSON(huge)
	}
	// 1000 calls on 32 MiB would take seconds if the whole value were read.
	assert.Less(t, time.Since(start), 2*time.Second)
}

func TestQIsZero(t *testing.T) {
	for params, want := range map[string]bool{
		"":                 false,
		"q=0":              true,
		" Q = 0 ":          true,
		"q=0.":             true,
		"q=0.000":          true,
		"q=0.001":          false,
		"q=1":              false,
		"q=00":             false,
		"q=":               false,
		"q=abc":            false,
		"level=1;q=0":      true,
		"q=0.5;q=0":        false, // the first q decides
		"charset=utf-8":    false,
		"\tq\t=\t0\t":      true,
		"qq=0":             false,
		"level=0;charset=": false,
	} {
		assert.Equal(t, want, qIsZero(params), "%q", params)
	}
}

func TestTrimOWS(t *testing.T) {
	for in, want := range map[string]string{"": "", " \t": "", " a b\t": "a b", "a": "a", "\ta\n": "a\n"} {
		assert.Equal(t, want, trimOWS(in), "%q", in)
	}
}

// asciiEqualFold folds ASCII letters only.
func TestASCIIEqualFold(t *testing.T) {
	for _, tc := range []struct {
		s, lower string
		want     bool
	}{
		{"q", "q", true},
		{"Q", "q", true},
		{"APPLICATION/JSON", "application/json", true},
		{"application/jsom", "application/json", false},
		{"qq", "q", false},
		{"", "", true},
		{"\u212a", "k", false}, // the Kelvin sign
		{"[", "{", false},      // 'Z'+1 is no letter
	} {
		assert.Equal(t, tc.want, asciiEqualFold(tc.s, tc.lower), "%q", tc.s)
	}
}

// A template shows lotteryOdds as the JSON writes it, which is what
// JavaScript's String writes of the number parsed: the live page shows
// the same text as the page it replaces.
func TestJSONFloat(t *testing.T) {
	values := []float64{0, 1, 0.25, 0.1, 1.0 / 3, 0.1 + 0.2, 1e-5, 0.000123, 1e-6, 9.99e-7, 1.5e-7, 1e-7, 5e-324,
		math.SmallestNonzeroFloat64, 12345678, 1e20, 1e21, 1.5e300, -0.5, -2e-9, math.Nextafter(1, 0)}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		values = append(values, r.Float64(), r.Float64()*math.Pow(10, -float64(r.IntN(12))))
	}
	var want []string
	for _, v := range values {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		assert.Equal(t, string(b), jsonFloat(v).String(), "%v", v)
		want = append(want, string(b))
	}
	assert.Equal(t, "NaN", jsonFloat(math.NaN()).String(), "no JSON number, no panic")
	assert.Equal(t, "0.25", render(t, mustParse(t, "{{lotteryOdds}}"), with(randomData(), func(d *Data) { d.LotteryOdds = 0.25 }), ""))
	assert.Equal(t, "", render(t, mustParse(t, "{{#lotteryOdds}}odds{{/lotteryOdds}}"), &Data{}, ""), "0 is false")

	node, err := exec.LookPath("node")
	if err != nil {
		servicetest.Unavailable(t, servicetest.Program("node", "to compare with JavaScript's numbers"), err)
	}
	dir := t.TempDir()
	list, err := json.Marshal(want)
	require.NoError(t, err)
	f := filepath.Join(dir, "n.js")
	require.NoError(t, os.WriteFile(f, []byte("console.log(JSON.stringify("+string(list)+".map(s => String(JSON.parse(s)))))"), 0o600))
	out, err := exec.Command(node, f).CombinedOutput()
	require.NoError(t, err, string(out))
	var js []string
	require.NoError(t, json.Unmarshal(out, &js))
	for i := range want {
		if values[i] < 1e21 { // JavaScript writes 1e21 and more with an exponent; odds are at most 1
			assert.Equal(t, want[i], js[i], "%v", values[i])
		}
	}
}

func mustParse(t *testing.T, src string) *Template {
	t.Helper()
	tmpl, err := Parse(src)
	require.NoError(t, err)
	return tmpl
}

// TestAppendData holds WriteJSON's encoder to encoding/json's output, byte
// for byte, for Data whose every field is set at random (strings of HTML,
// quotes, control characters, invalid UTF-8 and line separators; numbers
// of every sign and size), so that a field added to Data and not to the
// encoder fails here.
func TestAppendData(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"", "a", "5 minutes", "<b>", "&amp;", `"`, `\`, "\n", "\x00", "\x1f", "\x7f", "é", "\xff", "\u2028", "\u2029", "🎟", "</script>"}
	floats := []float64{0, 1, 0.25, 1.0 / 3, 1e-6, 9.99e-7, 1e-300, 1e21, 123456789, -0.5, math.NaN(), math.Inf(1)}
	for i := range 2000 {
		var d Data
		v := reflect.ValueOf(&d).Elem()
		for j := range v.NumField() {
			if rng.IntN(4) == 0 {
				continue // zero: the omitempty fields left out
			}
			switch f := v.Field(j); f.Kind() {
			case reflect.Bool:
				f.SetBool(true)
			case reflect.Int, reflect.Int64:
				f.SetInt([]int64{1, -1, 255, 256, math.MaxInt64, math.MinInt64, rng.Int64()}[rng.IntN(7)])
			case reflect.Float64:
				f.SetFloat(floats[rng.IntN(len(floats))])
			case reflect.String:
				var s strings.Builder
				for range rng.IntN(4) {
					s.WriteString(pieces[rng.IntN(len(pieces))])
				}
				f.SetString(s.String())
			default:
				t.Fatalf("field %s: a kind appendData does not write", v.Type().Field(j).Name)
			}
		}
		want, wantErr := json.Marshal(&d)
		got, err := appendData(nil, &d)
		if wantErr != nil {
			require.Error(t, err, "run %d: %+v", i, d)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "run %d", i)
	}
}

// BenchmarkWriteJSON is a waiting visitor's JSON answer, against
// encoding/json's.
func BenchmarkWriteJSON(b *testing.B) {
	d := randomData()
	d.LotteryIdentity, d.LotteryCommitment, d.LotteryInterval, d.LotteryOdds = "0123456789abcdef", strings.Repeat("ab", 32), 354_012_345, 0.0125
	b.Run("WriteJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = WriteJSON(io.Discard, "waitingRoom", d)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, _ := json.Marshal(d)
			_, _ = io.Discard.Write(v)
		}
	})
}

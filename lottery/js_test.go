package lottery_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/lottery"
)

// jsCase is one input to the verifier page's script, and what it gives.
type jsCase struct {
	Record   json.RawMessage `json:"record"`
	Identity string          `json:"identity"`
	Claim    jsClaim         `json:"claim"`
}

type jsClaim struct {
	Commitment lottery.Hash   `json:"commitment"`
	Waited     []int64        `json:"waited"`
	Shown      []lottery.Odds `json:"shown"`
	Admitted   int64          `json:"admitted"`
	Shuffled   bool           `json:"shuffled"`
	Rank       int            `json:"rank"`
}

type jsReport struct {
	Draws []struct {
		Interval int64   `json:"interval"`
		Draw     float64 `json:"draw"`
		Odds     float64 `json:"odds"`
		Won      bool    `json:"won"`
	} `json:"draws"`
	Place  float64 `json:"place"`
	Cut    float64 `json:"cut"`
	Rank   int     `json:"rank"`
	Listed int     `json:"listed"`
	Error  *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

// jsRunner feeds the cases to docs/verify.js in node and prints the
// reports, one JSON array.
const jsRunner = `
const lottery = require(process.argv[1]);
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", async () => {
  const out = [];
  for (const c of JSON.parse(input)) {
    out.push(await lottery.verify(c.record, c.identity, c.claim));
  }
  process.stdout.write(JSON.stringify(out));
});
`

// kinds maps Verify's errors to the script's kinds.
var kinds = map[error]string{
	lottery.ErrRecord:      "record",
	lottery.ErrNotRevealed: "notRevealed",
	lottery.ErrSeed:        "seed",
	lottery.ErrMissingOdds: "missingOdds",
	lottery.ErrOddsChanged: "oddsChanged",
	lottery.ErrNotDrawn:    "notDrawn",
	lottery.ErrOutOfTurn:   "outOfTurn",
	lottery.ErrUnlisted:    "unlisted",
	lottery.ErrRankMoved:   "rankMoved",

	lottery.ErrCommitmentChanged: "commitmentChanged",
}

func kindOf(t *testing.T, err error) string {
	if err == nil {
		return ""
	}
	for e, k := range kinds {
		if errors.Is(err, e) {
			return k
		}
	}
	t.Fatalf("unknown error %v", err)
	return ""
}

// The verifier page's script computes what the Go package computes: the
// same draws and places, to the last bit, the same cuts and ranks and
// the same verdict, for honest and tampered records alike.
func TestScriptAgrees(t *testing.T) {
	node, script, ok := nodeAndScript(t)
	if !ok {
		return
	}

	seed := testSeed(9)
	ids := []uint64{1, 2, 3, 0xfedcba9876543210, 1 << 63}
	var cases []jsCase
	add := func(r any, id uint64, c jsClaim) {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		cases = append(cases, jsCase{Record: b, Identity: lottery.FormatIdentity(id), Claim: c})
	}
	addRaw := func(r string, c jsClaim) {
		cases = append(cases, jsCase{Record: json.RawMessage(r), Identity: "1", Claim: c})
	}
	const p, n = 1.0 / 3, 12
	// A shuffle let in from interval firstW+n, in random cuts rising over
	// the intervals, some without a cut: the places of ids fall on either
	// side of them.
	rng := rand.New(rand.NewPCG(9, 9))
	var cs []float64
	for k, c := 0, 0.0; k < 3*n; k++ {
		c += rng.Float64() / n
		if k == 3*n-1 {
			c = 1
		}
		if rng.IntN(4) == 0 {
			cs = append(cs, -1) // no cut
			continue
		}
		cs = append(cs, min(c, 1))
	}
	// The shuffle's list of places: those of identities 1 to 30 and of
	// ids, but for the last of ids, left out.
	listed := placesOf(seed, 30, ids[:len(ids)-1]...)
	const ulp = 1.0 / (1 << 53)
	for _, id := range ids {
		r := honest(seed, p, n)
		won := firstWin(seed, id, p, n)
		var ws []int64
		for w := int64(firstW); w < firstW+n; w++ {
			ws = append(ws, w)
		}
		add(r, id, jsClaim{Waited: ws, Admitted: won})
		add(r, id, jsClaim{Waited: ws[:3], Shown: []lottery.Odds{{Interval: firstW, Odds: p}}, Shuffled: true}) // no list
		withList := *r
		withList.Places = listed
		add(&withList, id, jsClaim{Waited: ws[:3], Shown: []lottery.Odds{{Interval: firstW, Odds: p}}, Shuffled: true})
		add(r, id, jsClaim{Admitted: firstW + 6})
		add(r, id, jsClaim{Shown: []lottery.Odds{{Interval: firstW + 1, Odds: 0.25}}})
		add(r, id, jsClaim{Shown: []lottery.Odds{{Interval: firstW + 1, Odds: 1.5}}})
		add(r, id, jsClaim{Shown: []lottery.Odds{{Interval: firstW + 1, Odds: -0.25}}})
		add(r, id, jsClaim{Waited: []int64{firstW + n}})
		tampered := *r
		tampered.Seed[5] ^= 0x80
		add(&tampered, id, jsClaim{Admitted: won})
		other := *r
		other.Commitment = lottery.Commit(seed, lottery.Period{Start: hourStart + 3600, End: hourStart + 7200})
		add(&other, id, jsClaim{Admitted: won})
		hidden := *r
		hidden.Seed = lottery.Seed{}
		add(&hidden, id, jsClaim{})
		outside := *r
		outside.Odds = append([]lottery.Odds{{Interval: firstW - 1, Odds: p}}, r.Odds...)
		add(&outside, id, jsClaim{})
		// Odds that change from interval to interval: an admission is
		// judged by its own interval's odds.
		varying := *r
		varying.Odds = slices.Clone(r.Odds)
		for i := range varying.Odds {
			varying.Odds[i].Odds = float64(i%4) / 4
		}
		for w := int64(firstW); w < firstW+n; w++ {
			add(&varying, id, jsClaim{Admitted: w})
		}
		// Some intervals without odds: the one before stands in.
		gaps := varying
		gaps.Odds = slices.DeleteFunc(slices.Clone(varying.Odds), func(o lottery.Odds) bool { return o.Interval%3 == 0 || o.Interval%5 == 0 })
		for w := int64(firstW); w < firstW+n; w++ {
			add(&gaps, id, jsClaim{Admitted: w})
		}
		// The shuffle: admissions at every interval, in turn and out of
		// it, some after waiting in intervals without odds; some claimed
		// as draws, some on a record without cuts.
		shuffle := *r
		shuffle.Cuts = cuts(n, cs...)
		shuffle.Places = listed
		for w := int64(firstW + n - 1); w < firstW+4*n+1; w++ {
			add(&shuffle, id, jsClaim{Admitted: w, Shuffled: true})
		}
		add(&shuffle, id, jsClaim{Waited: []int64{firstW + n, firstW + n + 1}, Admitted: firstW + n + 2, Shuffled: true})
		add(&shuffle, id, jsClaim{Waited: []int64{firstW + n}, Shuffled: true})
		add(&shuffle, id, jsClaim{Waited: []int64{firstW + n}})
		add(&shuffle, id, jsClaim{Admitted: firstW + 2*n})
		add(&shuffle, id, jsClaim{Shown: []lottery.Odds{{Interval: firstW + 1, Odds: 0.25}}, Admitted: firstW + 2*n, Shuffled: true})
		// The cuts a visitor of the shuffle was shown: as recorded, one
		// not fixed in its interval (held from one before), and one raised
		// after the fact.
		add(&shuffle, id, jsClaim{Shown: shuffle.Cuts[:2], Admitted: firstW + 2*n, Shuffled: true})
		add(&shuffle, id, jsClaim{Shown: []lottery.Odds{{Interval: shuffle.Cuts[0].Interval + 1, Odds: shuffle.Cuts[0].Odds}}, Shuffled: true})
		raised := shuffle
		raised.Cuts = []lottery.Odds{{Interval: shuffle.Cuts[0].Interval, Odds: 1}}
		add(&raised, id, jsClaim{Shown: shuffle.Cuts[:1], Admitted: shuffle.Cuts[0].Interval, Shuffled: true})
		add(r, id, jsClaim{Admitted: firstW + 2, Shuffled: true})
		add(&withList, id, jsClaim{Admitted: firstW + 2, Shuffled: true})
		// The cut at each visitor's very place: out of turn.
		exact := *r
		exact.Cuts = []lottery.Odds{{Interval: firstW + n, Odds: lottery.Place(seed, id)}, {Interval: firstW + n + 1, Odds: 1}}
		exact.Places = listed
		add(&exact, id, jsClaim{Admitted: firstW + n, Shuffled: true})
		add(&exact, id, jsClaim{Admitted: firstW + n + 1, Shuffled: true})
		decreasing := shuffle
		decreasing.Cuts = slices.Clone(shuffle.Cuts)
		decreasing.Cuts[3].Odds, decreasing.Cuts[4].Odds = decreasing.Cuts[4].Odds, decreasing.Cuts[3].Odds
		add(&decreasing, id, jsClaim{Admitted: firstW + 2*n, Shuffled: true})
		counted := shuffle
		counted.Prequeued = 1000
		add(&counted, id, jsClaim{Admitted: firstW + 2*n, Shuffled: true})
		counted.Prequeued = -1
		add(&counted, id, jsClaim{Admitted: firstW + 2*n, Shuffled: true})
		tamperedShuffle := shuffle
		tamperedShuffle.Seed[0] ^= 1
		add(&tamperedShuffle, id, jsClaim{Admitted: firstW + 2*n, Shuffled: true})
		// The list: the rank noted or moved, the place left out, the
		// list malformed.
		rank := rankIn(listed, lottery.Place(seed, id))
		for _, k := range []int{0, rank, rank + 1, rank - 1} {
			add(&shuffle, id, jsClaim{Shuffled: true, Rank: k})
			add(&shuffle, id, jsClaim{Admitted: firstW + 4*n, Shuffled: true, Rank: k})
			add(&shuffle, id, jsClaim{Admitted: firstW + n, Shuffled: true, Rank: k})
		}
		add(&shuffle, id, jsClaim{Rank: rank})
		add(&shuffle, id, jsClaim{Shuffled: true, Rank: -1})
		list := func(change func(ps []float64) []float64) *lottery.Record {
			x := shuffle
			x.Places = change(slices.Clone(listed))
			return &x
		}
		for _, x := range []*lottery.Record{
			list(func(ps []float64) []float64 { return slices.Insert(ps, 0, ulp) }), // a place before all
			list(func(ps []float64) []float64 { return slices.Delete(ps, 0, 1) }),
			list(func(ps []float64) []float64 {
				return slices.DeleteFunc(ps, func(v float64) bool { return v == lottery.Place(seed, id) })
			}),
			list(func(ps []float64) []float64 { ps[1] += ulp; ps[len(ps)-2] -= ulp; return ps }),
			list(func(ps []float64) []float64 { ps[2], ps[3] = ps[3], ps[2]; return ps }),
			list(func(ps []float64) []float64 { ps[3] = ps[2]; return ps }),
			list(func(ps []float64) []float64 { return append(ps, 1) }),
			list(func(ps []float64) []float64 { return append(ps, 1.5) }),
			list(func(ps []float64) []float64 { return slices.Insert(ps, 0, -ulp) }),
			list(func(ps []float64) []float64 { return slices.Insert(ps, 0, 0) }),
			list(func(ps []float64) []float64 { return slices.Insert(ps, 0, 1e-300) }),
			list(func(ps []float64) []float64 { ps[0] = math.Nextafter(ps[0], 0); return ps }),
			list(func([]float64) []float64 { return nil }),
		} {
			add(x, id, jsClaim{Admitted: firstW + 4*n, Shuffled: true, Rank: rank})
			add(x, id, jsClaim{Shuffled: true})
			add(x, id, jsClaim{})
		}
	}
	// The intervals at the edges of periods: each belongs to the period
	// that holds its last millisecond, and a draw holds within its period.
	for _, bc := range boundaryCases() {
		r := &lottery.Record{Period: bc.period, Commitment: lottery.Commit(seed, bc.period), Seed: seed, IntervalMS: bc.intervalMS}
		for _, id := range ids {
			add(r, id, jsClaim{Waited: []int64{bc.w}})
			add(r, id, jsClaim{Waited: []int64{bc.w - 1}, Admitted: bc.w})
		}
		r.Odds = []lottery.Odds{{Interval: bc.w, Odds: p}}
		for _, id := range ids {
			for _, w := range []int64{bc.w - 1, bc.w, bc.w + 1, bc.w + 2, bc.w + 3} {
				add(r, id, jsClaim{Admitted: w})
			}
			add(r, id, jsClaim{Waited: []int64{bc.w}, Shown: []lottery.Odds{{Interval: bc.w, Odds: p}}})
		}
	}
	// Places as JSON may hold null (0, in Go as in the script), and
	// nothing but numbers in a list.
	withList := honest(seed, p, n)
	withList.Places = listed
	b, err := json.Marshal(withList)
	require.NoError(t, err)
	for _, places := range []string{`"places":[null,`, `"places":["0.5",`, `"places":0.5,"x":[`} {
		addRaw(strings.Replace(string(b), `"places":[`, places, 1), jsClaim{Shuffled: true})
		addRaw(strings.Replace(string(b), `"places":[`, places, 1), jsClaim{Shuffled: true, Rank: rankIn(listed, lottery.Place(seed, 1))})
	}
	for _, bad := range []string{
		`{}`,
		`{"start":1764853200,"end":1764856800,"commitment":"` + lottery.Commit(seed, hour).String() + `","intervalMs":"30000"}`,
		`{"start":1764853200,"end":1764856800,"commitment":"` + lottery.Commit(seed, hour).String() + `","intervalMs":30000.5}`,
		`{"start":1764853200,"end":1764856800,"commitment":"` + lottery.Commit(seed, hour).String() + `","intervalMs":1e300}`,
		`{"start":1764853200,"end":1764856800,"commitment":"` + lottery.Commit(seed, hour).String() + `","intervalMs":-5}`,
		`{"start":1,"end":0,"commitment":"` + lottery.Commit(seed, hour).String() + `"}`,
		`{"start":1764853200,"end":1764856800,"commitment":"` + lottery.Commit(seed, hour).String() + `","intervalMs":30000,"odds":[{"interval":58828440,"odds":1.5}]}`,
		`{"start":1764853200,"end":1764856800,"commitment":"00"}`,
		`{"start":1764853200,"end":1764856800,"commitment":"` + lottery.Commit(seed, hour).String() + `","intervalMs":30000,"cuts":[{"interval":58828440,"odds":-0}, {"interval":58828441,"odds":"1"}]}`,
		`{"start":1764853200,"end":1764856800,"commitment":"` + lottery.Commit(seed, hour).String() + `","cuts":[{"interval":58828440,"odds":0.5}]}`,
	} {
		addRaw(bad, jsClaim{})
	}

	// The commitment shown: the record's, another (a seed chosen after the
	// fact, with a commitment to it), none.
	r := honest(seed, p, n)
	forged := honest(testSeed(10), p, n)
	for _, c := range []lottery.Hash{r.Commitment, forged.Commitment, {}} {
		for _, id := range ids {
			add(r, id, jsClaim{Commitment: c, Admitted: firstW + 3})
			add(forged, id, jsClaim{Commitment: c, Admitted: firstW + 3})
		}
		hidden := *forged
		hidden.Seed = lottery.Seed{}
		add(&hidden, 1, jsClaim{Commitment: c})
	}
	// Shown odds of an interval of the next period: its own record's; and
	// intervals 0, outside any period of a real date.
	add(r, 1, jsClaim{Shown: []lottery.Odds{{Interval: firstW + 120, Odds: p}}})
	add(r, 1, jsClaim{Shown: []lottery.Odds{{Interval: 0, Odds: p}}})
	add(r, 1, jsClaim{Waited: []int64{0}})
	// One text, one reading: keys in another case, whole numbers in any
	// form, seeds that are not 64 hex digits.
	b, err = json.Marshal(honest(seed, 0.01, n))
	require.NoError(t, err)
	text := string(b)
	for _, change := range [][2]string{
		{`"odds":[`, `"ODDS":[`},
		{`"odds":[`, `"Odds":[],"odds":[`},
		{`"odds":[`, `"odds":[],"Odds":[`},
		{`"seed":`, `"SEED":`},
		{`"seed":`, `"\u017feed":`},
		{`"start":`, `"START":`},
		{`{"interval":58828443,"odds":0.01}`, `{"interval":58828443,"odds":0.01,"Odds":1}`},
		{`{"interval":58828443,`, `{"Interval":58828443,`},
		{`"interval":58828443,`, `"interval":58828443.0,`},
		{`"interval":58828443,`, `"interval":5.8828443e7,`},
		{`"intervalMs":30000`, `"intervalMs":30000.5`},
		{`"start":1764853200`, `"start":9007199254740992`},
		{`"odds":[`, `"prequeued":9007199254740991,"odds":[`},
		{`"odds":[`, `"prequeued":9007199254740992,"odds":[`},
		{`"seed":"` + seed.String() + `"`, `"seed":"0"`},
		{`"seed":"` + seed.String() + `"`, `"seed":0`},
		{`"seed":"` + seed.String() + `"`, `"seed":null`},
		{`"seed":"` + seed.String() + `"`, `"seed":""`},
		{`"seed":"` + seed.String() + `"`, `"seed":"` + strings.Repeat("0", 64) + `"`},
		{`"seed":"` + seed.String() + `"`, `"seed":"` + strings.ToUpper(seed.String()) + `"`},
		{`"odds":[`, `"odds":[null,`},
		{`"odds":[`, `"odds":[[],`},
		{`"odds":[`, `"odds":[{"interval":58828440,"odds":"0.5"},`},
	} {
		require.Contains(t, text, change[0])
		for _, w := range []int64{firstW + 3, firstW + 4} {
			addRaw(strings.Replace(text, change[0], change[1], 1), jsClaim{Admitted: w})
		}
	}

	in, err := json.Marshal(cases)
	require.NoError(t, err)
	cmd := exec.Command(node, "-e", jsRunner, script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var got []jsReport
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got, len(cases))

	verdicts := map[string]int{}
	defer func() { t.Logf("verdicts (\"\": kept): %v", verdicts) }()
	for i, c := range cases {
		var r lottery.Record
		var rep lottery.Report
		var verr error
		if verr = json.Unmarshal(c.Record, &r); verr == nil {
			id, err := lottery.ParseIdentity(c.Identity)
			require.NoError(t, err)
			rep, verr = lottery.Verify(&r, id, lottery.Claim(c.Claim))
		} else {
			verr = lottery.ErrRecord
		}
		g := got[i]
		want := kindOf(t, verr)
		verdicts[want]++
		if want == "" {
			assert.Nil(t, g.Error, "case %d: %s", i, c.Record)
		} else if assert.NotNil(t, g.Error, "case %d: %v", i, verr) {
			assert.Equal(t, want, g.Error.Kind, "case %d: Go: %v, script: %s", i, verr, g.Error.Message)
			if _, hint, ok := strings.Cut(verr.Error(), " (it held at interval "); ok {
				verdicts["notDrawn, held next to it"]++
				assert.Contains(t, g.Error.Message, " (it held at interval "+hint, "case %d: the same interval to claim", i)
			}
		}
		if verr != nil && !errors.Is(verr, lottery.ErrMissingOdds) && !errors.Is(verr, lottery.ErrOddsChanged) &&
			!errors.Is(verr, lottery.ErrNotDrawn) && !errors.Is(verr, lottery.ErrOutOfTurn) &&
			!errors.Is(verr, lottery.ErrUnlisted) && !errors.Is(verr, lottery.ErrRankMoved) {
			continue // no report to compare
		}
		assert.Equal(t, rep.Place, g.Place, "case %d", i)
		assert.Equal(t, rep.Cut, g.Cut, "case %d", i)
		assert.Equal(t, rep.Rank, g.Rank, "case %d", i)
		assert.Equal(t, rep.Listed, g.Listed, "case %d", i)
		require.Len(t, g.Draws, len(rep.Draws), "case %d", i)
		for j, d := range rep.Draws {
			assert.Equal(t, lottery.Drawn{Interval: g.Draws[j].Interval, Draw: g.Draws[j].Draw, Odds: g.Draws[j].Odds, Won: g.Draws[j].Won}, d, "case %d", i)
		}
	}
}

// The verifier page is static: it loads its script beside it and nothing
// from elsewhere, and its own script parses.
func TestVerifierPage(t *testing.T) {
	page, err := os.ReadFile("../docs/verify.html")
	require.NoError(t, err)
	assert.Contains(t, string(page), `<script src="verify.js"></script>`)
	assert.NotRegexp(t, `(?i)(src|href)\s*=\s*"?(https?:)?//`, string(page), "an external resource")
	m := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindSubmatch(page)
	require.NotNil(t, m, "the page's own script")

	node, err := exec.LookPath("node")
	if err != nil {
		servicetest.Unavailable(t, servicetest.Program("node", "the verifier page's script"), err)
		return
	}
	file := filepath.Join(t.TempDir(), "page.js")
	require.NoError(t, os.WriteFile(file, m[1], 0o600))
	out, err := exec.Command(node, "--check", file).CombinedOutput()
	require.NoError(t, err, string(out))

	// The page reads the claim as the command does.
	script, err := filepath.Abs("../docs/verify.js")
	require.NoError(t, err)
	out, err = exec.Command(node, "-e", `
const l = require(process.argv[1]);
const ok = JSON.stringify(l.parseClaim("58828440-58828442, 58828450", "58828440=0.25", " 58828450 ", true));
const ranked = JSON.stringify(l.parseClaim("", "", "", true, " 12 ", " `+strings.Repeat("aB", 32)+` "));
let bad = [];
for (const c of [["x", "", ""], ["3-1", "", ""], ["", "1", ""], ["", "", "1.5"], ["", "", "", "yes"],
  ["", "", "", true, "x"], ["", "", "", true, "0"], ["", "", "", true, "-1"], ["", "", "", true, "1.5"],
  ["", "", "", false, "", "abc"], ["", "", "", false, "", "`+strings.Repeat("g", 64)+`"]]) {
  try { l.parseClaim(...c); } catch (e) { bad.push(c); }
}
process.stdout.write(ok + "\n" + ranked + "\n" + bad.length);`, script).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, `{"waited":[58828440,58828441,58828442,58828450],"shown":[{"interval":58828440,"odds":0.25}],"admitted":58828450,"shuffled":true,"rank":0,"commitment":""}`+"\n"+
		`{"waited":[],"shown":[],"admitted":0,"shuffled":true,"rank":12,"commitment":"`+strings.Repeat("aB", 32)+`"}`+"\n11", string(out))
}

// The page parses a record's JSON as Go does: nested 10000 deep, both
// read it; one deeper, both refuse it (JSON.parse alone took it).
func TestScriptRecordDepth(t *testing.T) {
	node, script, ok := nodeAndScript(t)
	if !ok {
		return
	}
	for _, tc := range []struct {
		arrays int // nested in an unknown key, inside the record's object
		ok     bool
	}{
		{9_999, true},
		{10_000, false},
	} {
		text := `{"x":` + strings.Repeat("[", tc.arrays) + strings.Repeat("]", tc.arrays) + `,"start":3600,"end":7200,"commitment":"` + strings.Repeat("ab", 32) + `"}`
		var r lottery.Record
		goErr := json.Unmarshal([]byte(text), &r)
		cmd := exec.Command(node, "-e", `
const l = require(process.argv[1]);
let text = "";
process.stdin.on("data", (d) => (text += d));
process.stdin.on("end", () => {
  try { l.parseRecord(text); console.log("ok"); } catch (e) { console.log("refused: " + e.message); }
});`, script)
		cmd.Stdin = strings.NewReader(text)
		out, err := cmd.Output()
		require.NoError(t, err)
		assert.Equal(t, tc.ok, goErr == nil, "%d arrays: Go: %v", tc.arrays, goErr)
		assert.Equal(t, tc.ok, strings.TrimSpace(string(out)) == "ok", "%d arrays: the page: %s", tc.arrays, out)
	}
}

// nodeAndScript finds node and docs/verify.js; ok is false when node is
// not there (the test is then skipped, or failed where it is required).
func nodeAndScript(t *testing.T) (node, script string, ok bool) {
	node, err := exec.LookPath("node")
	if err != nil {
		servicetest.Unavailable(t, servicetest.Program("node", "the verifier page's script"), err)
		return "", "", false
	}
	script, err = filepath.Abs("../docs/verify.js")
	require.NoError(t, err)
	return node, script, true
}

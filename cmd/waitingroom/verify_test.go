package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/lottery"
)

// verifyRecord returns an hour's honest record, with odds 0.25 in its
// first 10 intervals and a shuffle let in from the 11th, whose cuts are
// 0.25, none, 0.75 and 1, and whose places are those of identities 1 to
// 20; and the first interval; and an identity among 1 to 20 that wins a
// draw, with the interval it wins, and whose place is between the first
// two cuts.
func verifyRecord(t *testing.T) (r *lottery.Record, first int64, winner uint64, won int64) {
	var seed lottery.Seed
	copy(seed[:], "the seed of the verify command..")
	hour := lottery.Period{Start: 1764853200, End: 1764853200 + 3600}
	r = &lottery.Record{Period: hour, Commitment: lottery.Commit(seed, hour), Seed: seed, IntervalMS: 30_000}
	first = hour.Start * 1000 / r.IntervalMS
	for w := first; w < first+10; w++ {
		r.Odds = append(r.Odds, lottery.Odds{Interval: w, Odds: 0.25})
	}
	r.Cuts = []lottery.Odds{{Interval: first + 10, Odds: 0.25}, {Interval: first + 12, Odds: 0.75}, {Interval: first + 13, Odds: 1}}
	for id := uint64(1); id <= 20; id++ {
		r.Places = append(r.Places, lottery.Place(seed, id))
	}
	slices.Sort(r.Places)
	for id := uint64(1); id <= 20; id++ {
		if p := lottery.Place(seed, id); p < 0.25 || p >= 0.75 {
			continue
		}
		for w := first; w < first+10; w++ {
			if lottery.Draw(seed, id, w) < 0.25 {
				return r, first, id, w
			}
		}
	}
	t.Fatal("nobody wins")
	return
}

func TestVerifyCommand(t *testing.T) {
	r, first, winner, won := verifyRecord(t)
	// Checked a minute after the period's end: a seed not revealed is not
	// overdue yet.
	verifyNow = func() time.Time { return time.Unix(r.End, 0).Add(time.Minute) }
	t.Cleanup(func() { verifyNow = time.Now })
	honest, err := json.Marshal(r)
	require.NoError(t, err)
	tampered := *r
	tampered.Seed[0] ^= 1
	bad, err := json.Marshal(&tampered)
	require.NoError(t, err)
	zero := *r
	zero.Cuts = append([]lottery.Odds{{Interval: first + 10, Odds: 0}}, r.Cuts[1:]...)
	zeroCut, err := json.Marshal(&zero)
	require.NoError(t, err)
	p := lottery.Place(r.Seed, winner)
	rank := slices.Index(r.Places, p) + 1
	require.Positive(t, rank)
	record := func(places []float64) []byte {
		x := *r
		x.Places = places
		b, err := json.Marshal(&x)
		require.NoError(t, err)
		return b
	}
	unlisted := record(slices.DeleteFunc(slices.Clone(r.Places), func(v float64) bool { return v == p }))
	inserted := record(append([]float64{0}, r.Places...)) // a place inserted before all
	dir := t.TempDir()
	file := filepath.Join(dir, "record.json")
	require.NoError(t, os.WriteFile(file, honest, 0o600))
	id := lottery.FormatIdentity(winner)
	place := "place in the shuffle: " + strconv.FormatFloat(p, 'g', -1, 64) + "\n"
	ranked := place + fmt.Sprintf("rank %d of 20\n", rank)
	rankArg := strconv.Itoa(rank)
	wonArg := strconv.FormatInt(won, 10)
	waited := fmt.Sprintf("%d-%d", first, won)
	in := func(k int64) string { return strconv.FormatInt(first+k, 10) }
	shown := r.Commitment.String()
	// A seed chosen after the fact, with a commitment of its own.
	forged := *r
	forged.Seed[0] ^= 1
	forged.Commitment = lottery.Commit(forged.Seed, forged.Period)
	recommitted, err := json.Marshal(&forged)
	require.NoError(t, err)
	unrevealed := func(r lottery.Record) []byte {
		r.Seed = lottery.Seed{}
		b, err := json.Marshal(&r)
		require.NoError(t, err)
		return b
	}
	hidden, hiddenForged := unrevealed(*r), unrevealed(forged)
	big := filepath.Join(t.TempDir(), "big.json")
	require.NoError(t, os.WriteFile(big, append(append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), maxRecord)...), `"}`...), 0o600))

	for _, tc := range []struct {
		name     string
		args     []string
		stdin    []byte
		code     int
		out, err string
	}{
		{"kept, from a file", []string{"-id", id, "-waited", waited, "-admitted", wonArg, file}, nil, exitOK,
			"kept\n", ""},
		{"kept, from standard input", []string{"-id", id, "-admitted", wonArg, "-shown", wonArg + "=0.25"}, honest, exitOK,
			"yes\nkept\n", ""}, // not of the shuffle: no place
		{"let in in turn", []string{"-id", id, "-shuffled", "-waited", in(10) + "-" + in(11), "-admitted", in(12)}, honest, exitOK,
			ranked + "cut at admission: 0.75\nkept\n", ""},
		{"let in in turn, under the latest cut", []string{"-id", id, "-shuffled", "-admitted", in(14)}, honest, exitOK,
			ranked + "cut at admission: 1\nkept\n", ""},
		{"let in in turn, at the rank noted", []string{"-id", id, "-shuffled", "-rank", rankArg, "-admitted", in(12)}, honest, exitOK,
			ranked + "cut at admission: 0.75\nkept\n", ""},
		{"still waiting, at the rank noted", []string{"-id", id, "-shuffled", "-rank", rankArg}, honest, exitOK,
			ranked + "kept\n", ""},
		{"the rank moved", []string{"-id", id, "-shuffled", "-rank", rankArg, "-admitted", in(12)}, inserted, exitFailure,
			place + fmt.Sprintf("rank %d of 21\nbroken: rank in the shuffle moved: noted %d, now %d of 21\n", rank+1, rank, rank+1), ""},
		{"a rank moved, another noted", []string{"-id", id, "-shuffled", "-rank", strconv.Itoa(rank + 1)}, honest, exitFailure,
			ranked + fmt.Sprintf("broken: rank in the shuffle moved: noted %d, now %d of 20\n", rank+1, rank), ""},
		{"a place inserted, no rank noted", []string{"-id", id, "-shuffled", "-admitted", in(12)}, inserted, exitOK,
			place + fmt.Sprintf("rank %d of 21\n", rank+1) + "cut at admission: 0.75\nkept\n", ""},
		{"the place left out of the list", []string{"-id", id, "-shuffled", "-admitted", in(12)}, unlisted, exitFailure,
			place + "broken: place not in the published list of the shuffle: place " + strconv.FormatFloat(p, 'g', -1, 64) + " is not among the record's 19\n", ""},
		{"no list", []string{"-id", id, "-shuffled"}, record(nil), exitFailure,
			place + "broken: place not in the published list of the shuffle: the record lists no places\n", ""},
		{"no list, not shuffled", []string{"-id", id, "-admitted", wonArg}, record(nil), exitOK, "yes\nkept\n", ""},
		{"a list out of order", []string{"-id", id, "-shuffled"}, record([]float64{0.5, 0.25}), exitUsage,
			"", "want places in strictly ascending order"},
		{"a place not a multiple of 2^-53", []string{"-id", id, "-shuffled"}, record([]float64{0.1}), exitUsage,
			"", "place 1 of the list, 0.1, not a multiple of 2^-53"},
		{"a rank without -shuffled", []string{"-id", id, "-rank", "3"}, honest, exitUsage, "", "rank 3 claimed by a visitor not of the shuffle"},
		{"a negative rank", []string{"-id", id, "-shuffled", "-rank", "-1"}, honest, exitUsage, "", "rank -1: want 1 or more"},
		{"a bad rank", []string{"-id", id, "-shuffled", "-rank", "third"}, honest, exitUsage, "", "-rank"},
		{"the table", []string{"-id", id, "-waited", wonArg, "-"}, honest, exitOK,
			"interval     draw                 odds                 won\n" + wonArg + " ", ""},
		{"tampered seed", []string{"-id", id, "-admitted", wonArg}, bad, exitFailure,
			"broken: seed does not match the commitment", ""},
		{"odds changed", []string{"-id", id, "-shown", wonArg + "=0.5"}, honest, exitFailure,
			"broken: odds changed: interval " + wonArg + ": shown 0.5, recorded 0.25\n", ""},
		{"let in out of turn", []string{"-id", id, "-shuffled", "-admitted", in(11)}, honest, exitFailure,
			ranked + "cut at admission: 0.25\nbroken: let in before their place in the shuffle came: let in at interval " + in(11), ""},
		{"let in at a cut of 0", []string{"-id", id, "-shuffled", "-admitted", in(10)}, zeroCut,
			exitFailure, ranked + "cut at admission: 0\nbroken: let in before", ""},
		{"let in before the first cut", []string{"-id", id, "-shuffled", "-admitted", in(5)}, honest, exitFailure,
			ranked + "broken: odds not published: the record has no cut at or before interval " + in(5), ""},
		{"let in under the latest cut, intervals after it", []string{"-id", id, "-shuffled", "-admitted", in(20)}, honest, exitOK,
			ranked + "cut at admission: 1\nkept\n", ""},
		{"a bad shuffled flag", []string{"-id", id, "-shuffled=maybe"}, honest, exitUsage, "", "shuffled"},
		{"help", []string{"-h"}, nil, exitOK, "Usage:\n  waitingroom verify -id IDENTITY", ""},
		{"no identity", nil, honest, exitUsage, "", "-id: lottery: identity \"\""},
		{"bad identity", []string{"-id", "xyz"}, honest, exitUsage, "", "want 1 to 16 hex digits"},
		{"bad range", []string{"-id", "1", "-waited", "9-3"}, honest, exitUsage, "", `range "9-3"`},
		{"huge range", []string{"-id", "1", "-waited", "1-1000000000"}, honest, exitUsage, "", "at most 100000"},
		{"a range wider than int64", []string{"-id", "1", "-waited", "-5000000000000000000-5000000000000000000"}, honest, exitUsage, "", "at most 100000"},
		{"a range to the largest interval", []string{"-id", "1", "-waited", "9223372036854775806-9223372036854775807"}, honest, exitUsage, "", "outside the period"},
		{"shown odds of interval 0", []string{"-id", "1", "-shown", "0=0.25"}, honest, exitUsage, "", "interval 0 is outside the period"},
		{"shown odds not a number", []string{"-id", id, "-shown", wonArg + "=NaN"}, honest, exitUsage, "", "want interval=odds"},
		{"shown odds in hexadecimal", []string{"-id", id, "-shown", wonArg + "=0x1p-2"}, honest, exitUsage, "", "want interval=odds"},
		{"shown odds above 1", []string{"-id", id, "-shown", wonArg + "=1.5"}, honest, exitUsage, "", "want interval=odds"},
		{"shown odds infinite", []string{"-id", id, "-shown", wonArg + "=1e400"}, honest, exitUsage, "", "want interval=odds"},
		{"the commitment shown", []string{"-id", id, "-commitment", shown, "-admitted", wonArg}, honest, exitOK, "kept\n", ""},
		{"a commitment made after the fact", []string{"-id", id, "-commitment", shown}, recommitted, exitFailure,
			"broken: commitment changed: shown " + shown, ""},
		{"the new commitment, unchecked", []string{"-id", id}, recommitted, exitOK, "kept\n", ""},
		{"a bad commitment", []string{"-id", id, "-commitment", "abc"}, honest, exitUsage, "", "-commitment: want 64 hex digits"},
		{"a seed not revealed yet", []string{"-id", id, "-commitment", shown, "-admitted", wonArg}, hidden, exitNotYet,
			"not revealed yet: check again once the period", ""},
		{"a seed not revealed yet, shuffled", []string{"-id", id, "-shuffled"}, hidden, exitNotYet,
			"not revealed yet", ""},
		{"a seed not revealed an hour after its period, overdue", []string{"-id", id, "-commitment", shown, "-now-offset", "61m"}, hidden, exitFailure,
			"broken: the seed of ", ""},
		{"a seed not revealed yet, another commitment", []string{"-id", id, "-commitment", shown}, hiddenForged, exitFailure,
			"broken: commitment changed", ""},
		{"a record too large", []string{"-id", "1", big}, nil, exitUsage, "", "larger than 64 MiB"},
		{"a key in another case", []string{"-id", "1"}, []byte(strings.Replace(string(honest), `"odds":[`, `"ODDS":[`, 1)), exitUsage,
			"", `key "ODDS": did you mean "odds"?`},
		{"bad interval", []string{"-id", "1", "-waited", "x"}, honest, exitUsage, "", `-waited: "x"`},
		{"bad shown", []string{"-id", "1", "-shown", "5"}, honest, exitUsage, "", `-shown: "5": want interval=odds`},
		{"unknown flag", []string{"-id", "1", "-bogus"}, honest, exitUsage, "", "bogus"},
		{"two records", []string{"-id", "1", file, file}, nil, exitUsage, "", "one record at most"},
		{"no such file", []string{"-id", "1", filepath.Join(dir, "none.json")}, nil, exitUsage, "", "none.json"},
		{"not JSON", []string{"-id", "1"}, []byte("<html>"), exitUsage, "", "the record in standard input"},
		{"bad hex", []string{"-id", "1"}, []byte(`{"commitment":"abc"}`), exitUsage, "", "want 64 hex digits"},
		{"the lottery's status rather than a record", []string{"-id", "1"}, []byte(`{"current":{"start":3600,"end":7200},"next":null,"revealed":null}`), exitUsage,
			"", "not one period's record"},
		{"malformed record", []string{"-id", "1"}, []byte(strings.Replace(string(honest), `"odds":0.25`, `"odds":1.25`, 1)), exitUsage,
			"", "odds 1.25 outside [0, 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if i := slices.Index(tc.args, "-now-offset"); i >= 0 { // the test's, not the command's
				d, err := time.ParseDuration(tc.args[i+1])
				require.NoError(t, err)
				verifyNow = func() time.Time { return time.Unix(r.End, 0).Add(d) }
				defer func() { verifyNow = func() time.Time { return time.Unix(r.End, 0).Add(time.Minute) } }()
				tc.args = slices.Delete(slices.Clone(tc.args), i, i+2)
			}
			code := runVerify(tc.args, bytes.NewReader(tc.stdin), &stdout, &stderr)
			assert.Equal(t, tc.code, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			assert.Contains(t, stdout.String(), tc.out)
			assert.Contains(t, stderr.String(), tc.err)
			if tc.code == exitUsage {
				assert.Contains(t, stderr.String(), "Run waitingroom verify -h for the flags.")
			}
			if strings.Contains(tc.name, "not revealed") || strings.Contains(tc.name, "commitment") {
				assert.NotContains(t, stdout.String(), "place in the shuffle", "none computed")
			}
		})
	}
}

// The command dispatches verify before reading any of the proxy's flags.
func TestVerifySubcommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"verify", "-h"}, &stdout, &stderr, nil)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout.String(), "waitingroom verify -id IDENTITY")
	assert.Contains(t, stdout.String(), "-waited")
}

// The examples in README.md are what the command prints for the records
// in testdata: lottery-record.json (record.json in README.md) and
// lottery-shuffle.json (shuffle.json).
func TestVerifyREADME(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	for _, tc := range []struct {
		command string
		code    int
	}{
		{"waitingroom verify -id 0000000000000001 -commitment c9fb542150e8b1b0c9affd78d4db1c7f57c815af67904e20e5399430f5ca4518 -waited 58828440-58828442 -admitted 58828443 record.json", exitOK},
		{"waitingroom verify -id 0000000000000001 -admitted 58828441 < record.json", exitFailure},
		{"waitingroom verify -id 0000000000000005 -shuffled -rank 3 -waited 58828560-58828562 -admitted 58828563 shuffle.json", exitOK},
		{"waitingroom verify -id 0000000000000005 -shuffled -admitted 58828562 < shuffle.json", exitFailure},
		{"waitingroom verify -id 0000000000000005 -shuffled -rank 2 < shuffle.json", exitFailure},
	} {
		record, err := os.ReadFile(filepath.Join("testdata", "lottery-"+strings.Fields(tc.command)[len(strings.Fields(tc.command))-1]))
		require.NoError(t, err)
		args := strings.Fields(strings.TrimPrefix(tc.command, "waitingroom verify "))
		args = args[:len(args)-1] // the record comes on standard input
		if args[len(args)-1] == "<" {
			args = args[:len(args)-1]
		}
		var stdout, stderr bytes.Buffer
		code := runVerify(args, bytes.NewReader(record), &stdout, &stderr)
		assert.Equal(t, tc.code, code, stderr.String())
		assert.Contains(t, string(readme), "$ "+tc.command+"\n"+stdout.String())
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/lottery"
)

// verifyRecord returns an hour's honest record, with odds p in its first
// 10 intervals, the rank hashes of identities 1 to 5, and the first
// interval; and an identity among 1 to 5 that wins a draw, with the
// interval it wins.
func verifyRecord(t *testing.T) (r *lottery.Record, first int64, winner uint64, won int64) {
	var seed lottery.Seed
	copy(seed[:], "the seed of the verify command..")
	hour := lottery.Period{Start: 1764853200, End: 1764853200 + 3600}
	r = &lottery.Record{Period: hour, Commitment: lottery.Commit(seed, hour), Seed: seed, IntervalMS: 30_000}
	first = hour.Start * 1000 / r.IntervalMS
	for w := first; w < first+10; w++ {
		r.Odds = append(r.Odds, lottery.Odds{Interval: w, Odds: 0.25})
	}
	for id := uint64(1); id <= 5; id++ {
		r.Ranks = append(r.Ranks, lottery.RankHash(seed, id))
	}
	for i := 1; i < len(r.Ranks); i++ {
		for j := i; j > 0 && string(r.Ranks[j][:]) < string(r.Ranks[j-1][:]); j-- {
			r.Ranks[j], r.Ranks[j-1] = r.Ranks[j-1], r.Ranks[j]
		}
	}
	for id := uint64(1); id <= 5; id++ {
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
	honest, err := json.Marshal(r)
	require.NoError(t, err)
	tampered := *r
	tampered.Seed[0] ^= 1
	bad, err := json.Marshal(&tampered)
	require.NoError(t, err)
	dir := t.TempDir()
	file := filepath.Join(dir, "record.json")
	require.NoError(t, os.WriteFile(file, honest, 0o600))
	id := lottery.FormatIdentity(winner)
	rep, err := lottery.Verify(r, winner, lottery.Claim{})
	require.NoError(t, err)
	rank := strconv.Itoa(rep.Rank)
	wonArg := strconv.FormatInt(won, 10)
	waited := fmt.Sprintf("%d-%d", first, won)

	for _, tc := range []struct {
		name     string
		args     []string
		stdin    []byte
		code     int
		out, err string
	}{
		{"kept, from a file", []string{"-id", id, "-waited", waited, "-admitted", wonArg, "-rank", rank, file}, nil, exitOK,
			"kept\n", ""},
		{"kept, from standard input", []string{"-id", id, "-admitted", wonArg, "-shown", wonArg + "=0.25"}, honest, exitOK,
			"yes\nrank in the shuffle: " + rank + "\nkept\n", ""},
		{"the table", []string{"-id", id, "-waited", wonArg, "-"}, honest, exitOK,
			"interval     draw                 odds                 won\n" + wonArg + " ", ""},
		{"tampered seed", []string{"-id", id, "-admitted", wonArg}, bad, exitFailure,
			"broken: seed does not match the commitment", ""},
		{"odds changed", []string{"-id", id, "-shown", wonArg + "=0.5"}, honest, exitFailure,
			"broken: odds changed: interval " + wonArg + ": shown 0.5, recorded 0.25\n", ""},
		{"a rank moved", []string{"-id", id, "-rank", strconv.Itoa(rep.Rank%5 + 1)}, honest, exitFailure,
			"broken: rank does not match", ""},
		{"help", []string{"-h"}, nil, exitOK, "Usage:\n  waitingroom verify -id IDENTITY", ""},
		{"no identity", nil, honest, exitUsage, "", "-id: lottery: identity \"\""},
		{"bad identity", []string{"-id", "xyz"}, honest, exitUsage, "", "want 1 to 16 hex digits"},
		{"bad range", []string{"-id", "1", "-waited", "9-3"}, honest, exitUsage, "", `range "9-3"`},
		{"huge range", []string{"-id", "1", "-waited", "1-1000000000"}, honest, exitUsage, "", "at most 100000"},
		{"bad interval", []string{"-id", "1", "-waited", "x"}, honest, exitUsage, "", `-waited: "x"`},
		{"bad shown", []string{"-id", "1", "-shown", "5"}, honest, exitUsage, "", `-shown: "5": want interval=odds`},
		{"unknown flag", []string{"-id", "1", "-bogus"}, honest, exitUsage, "", "bogus"},
		{"two records", []string{"-id", "1", file, file}, nil, exitUsage, "", "one record at most"},
		{"no such file", []string{"-id", "1", filepath.Join(dir, "none.json")}, nil, exitUsage, "", "none.json"},
		{"not JSON", []string{"-id", "1"}, []byte("<html>"), exitUsage, "", "the record in standard input"},
		{"bad hex", []string{"-id", "1"}, []byte(`{"commitment":"abc"}`), exitUsage, "", "want 64 hex digits"},
		{"malformed record", []string{"-id", "1"}, []byte(strings.Replace(string(honest), `"odds":0.25`, `"odds":1.25`, 1)), exitUsage,
			"", "odds 1.25 outside [0, 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runVerify(tc.args, bytes.NewReader(tc.stdin), &stdout, &stderr)
			assert.Equal(t, tc.code, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			assert.Contains(t, stdout.String(), tc.out)
			assert.Contains(t, stderr.String(), tc.err)
			if tc.code == exitUsage {
				assert.Contains(t, stderr.String(), "Run waitingroom verify -h for the flags.")
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

// The examples in README.md are what the command prints for the record in
// testdata/lottery-record.json.
func TestVerifyREADME(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	record, err := os.ReadFile(filepath.Join("testdata", "lottery-record.json"))
	require.NoError(t, err)
	for _, tc := range []struct {
		command string
		code    int
	}{
		{"waitingroom verify -id 0000000000000001 -waited 58828440-58828442 -admitted 58828443 -rank 2 record.json", exitOK},
		{"waitingroom verify -id 0000000000000001 -admitted 58828441 < record.json", exitFailure},
	} {
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

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom/lottery"
)

// verifyUsage comes before the flags of waitingroom verify -h.
const verifyUsage = `Usage:
  waitingroom verify -id IDENTITY [flags] [RECORD]

Checks a visitor's draws, or place and rank in an event's shuffle,
against a room's lottery record: the JSON the room published for the
period (its records' address with ?at= a second of the period, the link
on the visitor's page), read from the file RECORD, or from standard
input without one or with "-". It prints the visitor's draw in
each interval named (or their place, rank and cut), and "kept" with
status 0, or what the room broke with status 1; status 2 for a bad flag
or a record that cannot be read; status 3, "not revealed yet", for a
record whose seed the room has not revealed yet: check it again once the
period and the draws it holds are over (an hour after the period's end,
a seed still not revealed is broken, status 1). Without -commitment,
"kept" says the record was checked against itself alone.

Flags:
`

// exitNotYet is waitingroom verify's status for a record without its
// seed yet: nothing to check, nothing broken.
const exitNotYet = 3

// revealOverdue is how long after its period's end a seed still not
// revealed is taken for one the room failed to reveal: a room reveals it
// within minutes (three refresh intervals and their lateness).
const revealOverdue = time.Hour

// verifyNow is the clock waitingroom verify tells an overdue reveal by.
var verifyNow = time.Now

// maxRange bounds the intervals one range of -waited names.
const maxRange = 100_000

// runVerify runs waitingroom verify with args (those after "verify"),
// reading the record from stdin when no file is named. It returns the
// exit status: exitOK when the room kept its promises, exitFailure when
// it broke one, exitUsage for bad flags or an unreadable record,
// exitNotYet for a record whose seed is not revealed yet.
func runVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("waitingroom verify", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	id := fs.String("id", "", "the visitor's identity, as the room showed it (16 hex digits)")
	commitment := fs.String("commitment", "", "the commitment the room showed the visitor while they waited (64 hex digits): the record's must be the same")
	waited := fs.String("waited", "", "intervals the visitor waited in: numbers and ranges, as 58828440-58828445,58828450")
	shown := fs.String("shown", "", "odds the room showed the visitor: interval=odds,... (with -shuffled, the cuts it showed)")
	admitted := fs.Int64("admitted", 0, "the interval the visitor was let in (0: not let in)")
	shuffled := fs.Bool("shuffled", false, "the visitor joined the event's pre-queue: their place must be listed, their admission is checked against the cuts")
	rank := fs.Int("rank", 0, "with -shuffled, the visitor's rank in the shuffle as they noted it, from an earlier copy of the record (0: none)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			_, _ = io.WriteString(stdout, verifyUsage)
			fs.PrintDefaults()
			return exitOK
		}
		return verifyUsageError(stderr, err)
	}
	if fs.NArg() > 1 {
		return verifyUsageError(stderr, fmt.Errorf("one record at most, got %d arguments", fs.NArg()))
	}
	identity, err := lottery.ParseIdentity(*id)
	if err != nil {
		return verifyUsageError(stderr, fmt.Errorf("-id: %w", err))
	}
	c := lottery.Claim{Admitted: *admitted, Shuffled: *shuffled, Rank: *rank}
	if *commitment != "" {
		if err := c.Commitment.UnmarshalText([]byte(strings.TrimSpace(*commitment))); err != nil {
			return verifyUsageError(stderr, fmt.Errorf("-commitment: want 64 hex digits"))
		}
	}
	if c.Waited, err = parseIntervals(*waited); err != nil {
		return verifyUsageError(stderr, err)
	}
	if c.Shown, err = parseShown(*shown); err != nil {
		return verifyUsageError(stderr, err)
	}
	r, err := readRecord(fs.Arg(0), stdin)
	if err != nil {
		return verifyUsageError(stderr, err)
	}
	rep, err := lottery.Verify(r, identity, c)
	if errors.Is(err, lottery.ErrRecord) {
		return verifyUsageError(stderr, err)
	}
	// A cut of 0 lets nobody in: Report.Cut is 0 then, and the admission
	// out of turn. The place is a pre-queued visitor's, once the seed is
	// revealed (0 before: not computed).
	writeReport(stdout, rep, c.Shuffled && rep.Place > 0, rep.Cut > 0 || errors.Is(err, lottery.ErrOutOfTurn))
	switch ended := time.Unix(r.End, 0); {
	case errors.Is(err, lottery.ErrNotRevealed) && verifyNow().After(ended.Add(revealOverdue)):
		fmt.Fprintf(stdout, "broken: the seed of %d-%d is not revealed %v after its period ended (a room reveals it within minutes)\n",
			r.Start, r.End, verifyNow().Sub(ended).Truncate(time.Minute))
		return exitFailure
	case errors.Is(err, lottery.ErrNotRevealed):
		fmt.Fprintln(stdout, "not revealed yet: check again once the period and the draws it holds are over")
		return exitNotYet
	case err != nil:
		fmt.Fprintln(stdout, "broken:", strings.TrimPrefix(err.Error(), "lottery: "))
		return exitFailure
	}
	fmt.Fprintln(stdout, "kept")
	if c.Commitment == (lottery.Hash{}) {
		fmt.Fprintln(stdout, "(against the record alone: without -commitment, a seed chosen after the fact under a commitment of its own passes too)")
	}
	return exitOK
}

// verifyUsageError writes err and a pointer to the usage to stderr, and
// returns exitUsage.
func verifyUsageError(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "waitingroom verify:", err)
	fmt.Fprintln(stderr, "Run waitingroom verify -h for the flags.")
	return exitUsage
}

// maxRecord bounds the bytes of a record read: 64 MiB, a shuffle's list
// of a few million places.
const maxRecord = 64 << 20

// readRecord reads a lottery record as JSON from the file name, or from
// stdin when name is "" or "-", up to maxRecord bytes.
func readRecord(name string, stdin io.Reader) (*lottery.Record, error) {
	in := stdin
	if name == "" || name == "-" {
		name = "standard input"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	b, err := io.ReadAll(io.LimitReader(in, maxRecord+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRecord {
		return nil, fmt.Errorf("the record in %s: larger than %d MiB", name, maxRecord>>20)
	}
	var r lottery.Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("the record in %s: %w", name, err)
	}
	var status struct{ Current, Next, Revealed json.RawMessage }
	if r.Start == 0 && r.End == 0 && json.Unmarshal(b, &status) == nil && (status.Current != nil || status.Next != nil || status.Revealed != nil) {
		return nil, fmt.Errorf("the record in %s: the room's lottery status (current, next, revealed), not one period's record: ask for the period's with ?at= one of its seconds", name)
	}
	return &r, nil
}

// parseIntervals reads -waited: interval numbers and ranges first-last,
// separated by commas.
func parseIntervals(s string) ([]int64, error) {
	var ws []int64
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		// A range's dash follows a digit: "-5" alone is a number.
		if i := strings.Index(item[1:], "-"); i >= 0 {
			a, errA := strconv.ParseInt(item[:i+1], 10, 64)
			b, errB := strconv.ParseInt(item[i+2:], 10, 64)
			// Unsigned, b-a is exact for any b >= a (signed, it may overflow).
			if errA != nil || errB != nil || b < a || uint64(b)-uint64(a) >= maxRange {
				return nil, fmt.Errorf("-waited: range %q: want first-last, at most %d intervals", item, maxRange)
			}
			for w := a; ; w++ { // w <= b would hold for ever at b = MaxInt64
				ws = append(ws, w)
				if w == b {
					break
				}
			}
			continue
		}
		w, err := strconv.ParseInt(item, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("-waited: %q: want an interval number or a range first-last", item)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// decimal is the odds as a page shows them, and as the verifier page
// reads them: no sign, no hexadecimal, no infinity.
var decimal = regexp.MustCompile(`^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$`)

// parseShown reads -shown: interval=odds, separated by commas.
func parseShown(s string) ([]lottery.Odds, error) {
	var odds []lottery.Odds
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		ws, ps, ok := strings.Cut(item, "=")
		ps = strings.TrimSpace(ps)
		w, errW := strconv.ParseInt(strings.TrimSpace(ws), 10, 64)
		p, errP := strconv.ParseFloat(ps, 64)
		if !ok || errW != nil || errP != nil || !decimal.MatchString(ps) || !(p >= 0 && p <= 1) {
			return nil, fmt.Errorf("-shown: %q: want interval=odds, the odds a decimal number from 0 to 1", item)
		}
		odds = append(odds, lottery.Odds{Interval: w, Odds: p})
	}
	return odds, nil
}

// writeReport writes the visitor's draws as a table, then their place
// when shuffle, their rank among the record's places when computed, and
// the cut at their admission when cut.
func writeReport(w io.Writer, rep lottery.Report, shuffle, cut bool) {
	if len(rep.Draws) > 0 {
		fmt.Fprintf(w, "%-12s %-20s %-20s %s\n", "interval", "draw", "odds", "won")
	}
	for _, d := range rep.Draws {
		won := "no"
		if d.Won {
			won = "yes"
		}
		fmt.Fprintf(w, "%-12d %-20s %-20s %s\n", d.Interval,
			strconv.FormatFloat(d.Draw, 'g', -1, 64), strconv.FormatFloat(d.Odds, 'g', -1, 64), won)
	}
	if shuffle {
		fmt.Fprintln(w, "place in the shuffle:", strconv.FormatFloat(rep.Place, 'g', -1, 64))
	}
	if rep.Rank != 0 {
		fmt.Fprintf(w, "rank %d of %d\n", rep.Rank, rep.Listed)
	}
	if cut {
		fmt.Fprintln(w, "cut at admission:", strconv.FormatFloat(rep.Cut, 'g', -1, 64))
	}
}

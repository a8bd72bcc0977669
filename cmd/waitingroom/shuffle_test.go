package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/template"
)

// shuffleVisitor is a browser of TestShuffleEndToEnd: what it noted of its
// wait, as a visitor who means to check the shuffle would.
type shuffleVisitor struct {
	c      *http.Client
	arrive time.Time // its first request
	first  int       // the proxy of its first request; it alternates after

	identity, commitment, records string // as its waiting JSON showed them
	prequeued                     bool   // its first answer was the pre-queue's
	requests                      [2]int // requests to each proxy
	admittedAt                    time.Time
	admitted                      int64 // the refresh interval it was let in
	rank                          int   // its rank, as the verifier reported it
}

// visitShuffle asks url for c's waiting JSON: the room's data, or
// admitted when the demo app answered.
func visitShuffle(c *http.Client, url string) (d template.Data, admitted bool, err error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return d, false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return d, false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return d, false, err
	}
	if resp.StatusCode == http.StatusOK && strings.Contains(string(b), "You're in") {
		return d, true, nil
	}
	var body struct {
		Room template.Data `json:"waitingRoom"`
	}
	if err := json.Unmarshal(b, &body); err != nil || !body.Room.InWaitingRoom {
		return d, false, fmt.Errorf("neither admitted nor a waiting JSON (status %d): %.200s", resp.StatusCode, b)
	}
	return body.Room, false, nil
}

// wait is the visitor's whole wait: it arrives during the pre-queue, comes
// back as each waiting JSON says, at either proxy in turn, until let in
// or until giveUp.
func (v *shuffleVisitor) wait(bases []string, start, giveUp time.Time, refresh int64) error {
	time.Sleep(time.Until(v.arrive))
	for i := 0; ; i++ {
		p := (v.first + i) % len(bases)
		v.requests[p]++
		d, in, err := visitShuffle(v.c, bases[p]+"/")
		now := time.Now()
		switch {
		case err != nil:
			return err
		case in && i == 0:
			return errors.New("let in at its first request, in the pre-queue")
		case in:
			if now.Before(start) {
				return fmt.Errorf("let in at %s, before the event's start", now.Format(time.StampMilli))
			}
			// The interval the answer came in: the admission was in it or
			// the one before, and a cut never goes down.
			v.admittedAt, v.admitted = now, now.UnixMilli()/refresh
			return nil
		}
		if i == 0 {
			v.prequeued = d.IsEventPrequeueing && now.Before(start)
		}
		if d.LotteryIdentity == "" || d.LotteryCommitment == "" || d.LotteryRecords == "" {
			return fmt.Errorf("request %d: a pre-queued visitor's JSON without its identity, commitment or record: %+v", i, d)
		}
		if v.identity == "" {
			v.identity, v.commitment, v.records = d.LotteryIdentity, d.LotteryCommitment, d.LotteryRecords
		} else if d.LotteryIdentity != v.identity || d.LotteryCommitment != v.commitment || d.LotteryRecords != v.records {
			return fmt.Errorf("request %d: shown %s, %s, %s; before %s, %s, %s", i,
				d.LotteryIdentity, d.LotteryCommitment, d.LotteryRecords, v.identity, v.commitment, v.records)
		}
		if now.After(giveUp) {
			return fmt.Errorf("still waiting at %s, after %d requests", now.Format(time.StampMilli), i+1)
		}
		time.Sleep(time.Duration(d.RefreshIntervalSeconds) * time.Second)
	}
}

// rankRE is the verifier's report of a visitor's rank.
var rankRE = regexp.MustCompile(`(?m)^rank (\d+) of (\d+)$`)

// verifyShuffled runs waitingroom verify on record for a visitor of the
// pre-queue, with -rank when rank is not 0; it returns the exit status
// and what it printed.
func verifyShuffled(record []byte, id string, admitted int64, rank int) (int, string) {
	args := []string{"-id", id, "-shuffled", "-admitted", strconv.FormatInt(admitted, 10)}
	if rank != 0 {
		args = append(args, "-rank", strconv.Itoa(rank))
	}
	var stdout, stderr bytes.Buffer
	code := runVerify(args, bytes.NewReader(record), &stdout, &stderr)
	return code, stdout.String() + stderr.String()
}

// TestShuffleEndToEnd: two proxies share one SQLite store, with
// -lottery-path, and a scheduled event whose pre-queue is shuffled at its
// start. Visitors arrive during the pre-queue at either proxy, note their
// identity and the commitment their waiting JSON shows, and come back as
// it says, at either proxy, until let in after the start. Once the
// period's seed is revealed, its record, the same from both proxies'
// public address, lists as many places as visitors, under the commitment
// each was shown; the verifier finds every visitor's place and rank
// (ranks 1 to n, once each), checks their admission against the cuts,
// and fails a copy of the record with a place taken out.
func TestShuffleEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: runs on the real clock for 2.5 to 3.5 minutes")
	}
	noEnv(t)
	began := time.Now()
	const crowd = 20
	const refresh = int64(1000) // -refresh-interval, the smallest the room takes, in ms
	// An event's times are whole minutes: the pre-queue opens at the
	// first one at least 5 s from now, for a minute, and the event lasts
	// a minute.
	opens := began.Add(5*time.Second + time.Minute - 1).Truncate(time.Minute)
	starts := opens.Add(time.Minute)
	end := starts.Add(time.Minute)
	file := writeFile(t, "room.yaml", fmt.Sprintf(`events:
  - name: drop
    prequeueStart: %s
    start: %s
    end: %s
    shuffleAtStart: true
`, opens.UTC().Format(time.RFC3339), starts.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339)))
	args := []string{"-config", file, "-demo", "-key", hexKey, "-queueing-method", "random",
		"-total-active-users", "1000", "-new-users-per-minute", "1000",
		"-refresh-interval", "1s", "-sync-interval", "100ms", "-lottery-path", "/lottery",
		"-store", "sqlite://" + filepath.Join(t.TempDir(), "rooms.db")}
	bases := []string{start(t, args...), start(t, args...)}
	// Before the pre-queue opens, the room publishes its commitment to
	// the seed of the period from the opening to the event's end.
	var committed string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		resp, err := http.Get(bases[1] + "/lottery")
		require.NoError(c, err)
		defer resp.Body.Close()
		var recs map[string]*lottery.Record
		require.NoError(c, json.NewDecoder(resp.Body).Decode(&recs))
		next := recs["next"]
		require.NotNil(c, next, "the next period")
		require.Equal(c, lottery.Period{Start: opens.Unix(), End: end.Unix()}, next.Period)
		committed = next.Commitment.String()
	}, time.Until(opens), 100*time.Millisecond, "the event's period committed to before the pre-queue opens")

	visitors := make([]*shuffleVisitor, crowd)
	errs := make([]error, crowd)
	var wg sync.WaitGroup
	for i := range visitors {
		// Across the pre-queue's first 55 s, at either proxy.
		v := &shuffleVisitor{c: browser(t), arrive: opens.Add(50*time.Millisecond + time.Duration(i)*55*time.Second/crowd), first: i % 2}
		visitors[i] = v
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = v.wait(bases, starts, end, refresh)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "visitor %d", i)
	}
	at := strconv.FormatInt(opens.Unix(), 10)
	for i, v := range visitors {
		require.True(t, v.prequeued, "visitor %d arrived in the pre-queue", i)
		require.Equal(t, "/lottery?at="+at, v.records, "visitor %d: the record of the period from the pre-queue's opening", i)
		require.Equal(t, visitors[0].commitment, v.commitment, "visitor %d: one commitment", i)
	}

	// The seed is revealed lottery.Hold refresh intervals (each counted
	// with its lateness) after the event's end.
	var raw [2][]byte
	var record lottery.Record
	read := func(c *assert.CollectT, client *http.Client, base string) []byte {
		resp, err := client.Get(base + "/lottery?at=" + at)
		require.NoError(c, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(c, err)
		require.Equal(c, http.StatusOK, resp.StatusCode, "%s", body)
		return body
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		raw[1] = read(c, http.DefaultClient, bases[1])
		record = lottery.Record{}
		require.NoError(c, json.Unmarshal(raw[1], &record), "%s", raw[1])
		assert.False(c, record.Seed.IsZero(), "revealed")
	}, time.Until(end)+time.Minute, 200*time.Millisecond, "the seed is revealed after the event")
	revealed := time.Now()
	// The other proxy shows it too once its own sync brings the reveal
	// (its view may be a sync behind).
	other := browser(t)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		raw[0] = read(c, other, bases[0])
		assert.JSONEq(c, string(raw[1]), string(raw[0]), "the same record from both proxies")
	}, 10*time.Second, 100*time.Millisecond)

	assert.Equal(t, opens.Unix(), record.Start)
	assert.Equal(t, end.Unix(), record.End)
	assert.Equal(t, committed, record.Commitment.String(), "the commitment published before the pre-queue opened")
	assert.Equal(t, visitors[0].commitment, record.Commitment.String(), "the commitment every visitor was shown")
	assert.Equal(t, refresh, record.IntervalMS)
	require.NotEmpty(t, record.Cuts, "the shuffle's cuts")
	require.Len(t, record.Places, crowd, "every visitor of the pre-queue listed (all came back), nobody else: %s", raw[1])
	assert.True(t, slices.IsSorted(record.Places))

	ranks := make([]int, crowd)
	for i, v := range visitors {
		code, out := verifyShuffled(raw[1], v.identity, v.admitted, 0)
		require.Equal(t, exitOK, code, "visitor %d: %s", i, out)
		m := rankRE.FindStringSubmatch(out)
		require.NotNil(t, m, "visitor %d: a rank: %s", i, out)
		assert.Equal(t, strconv.Itoa(crowd), m[2], "visitor %d: of the whole list", i)
		v.rank, _ = strconv.Atoi(m[1])
		ranks[i] = v.rank
		code, out = verifyShuffled(raw[1], v.identity, v.admitted, v.rank)
		require.Equal(t, exitOK, code, "visitor %d with -rank %d: %s", i, v.rank, out)
		assert.Contains(t, out, fmt.Sprintf("rank %d of %d", v.rank, crowd))
	}
	slices.Sort(ranks)
	for k, r := range ranks {
		require.Equal(t, k+1, r, "the ranks are 1 to %d, once each", crowd)
	}

	// A copy of the record with the first place taken out: its visitor is
	// not listed, and the last one's rank noted before is not the list's.
	tampered := record
	tampered.Places = slices.Clone(record.Places[1:])
	forged, err := json.Marshal(tampered)
	require.NoError(t, err)
	firstV := visitors[slices.IndexFunc(visitors, func(v *shuffleVisitor) bool { return v.rank == 1 })]
	lastV := visitors[slices.IndexFunc(visitors, func(v *shuffleVisitor) bool { return v.rank == crowd })]
	code, out := verifyShuffled(forged, firstV.identity, firstV.admitted, 0)
	assert.Equal(t, exitFailure, code, "the visitor whose place was taken out: %s", out)
	code, out = verifyShuffled(forged, lastV.identity, lastV.admitted, lastV.rank)
	assert.Equal(t, exitFailure, code, "the last visitor, their rank noted: %s", out)
	code, out = verifyShuffled(forged, lastV.identity, lastV.admitted, 0)
	assert.Equal(t, exitOK, code, "without a rank noted, the last visitor finds their place: %s", out)

	// The figures.
	var requests [2]int
	byInterval := map[int64]int{}
	for _, v := range visitors {
		requests[0] += v.requests[0]
		requests[1] += v.requests[1]
		byInterval[v.admitted-starts.UnixMilli()/refresh]++
	}
	var cuts []string
	for _, c := range record.Cuts {
		cuts = append(cuts, fmt.Sprintf("%+d:%.3g", c.Interval-starts.UnixMilli()/refresh, c.Odds))
	}
	below := 0 // places under the first cut
	for _, p := range record.Places {
		if p < record.Cuts[0].Odds {
			below++
		}
	}
	t.Logf("%d visitors, %d requests at one proxy and %d at the other, let in by interval from the start %v; cuts %v (%d places under the first), %d pre-queued at the first; "+
		"%d places listed; the seed read revealed %.1f s after the event's end; the test took %.1f s, %.1f s of it before the pre-queue opened",
		crowd, requests[0], requests[1], byInterval, cuts, below, record.Prequeued, len(record.Places),
		revealed.Sub(end).Seconds(), time.Since(began).Seconds(), opens.Sub(began).Seconds())
}

// Command jsonclient waits in a waiting room the way a mobile app or a
// script should: it keeps the room's cookie (its place in the queue), asks
// for JSON, comes back after refreshIntervalSeconds (earlier requests get
// no new chance), and prints the estimate until it is let in. Then it
// prints the application's answer. When the room gives it a proof of work
// (challengePuzzle), it solves it with challenge.Solve while it
// waits and sends the answer in the Waiting-Room-Challenge header of its
// next request.
//
//	go run ./jsonclient -url http://127.0.0.1:8080/
//
// curl.sh does the same with curl and a shell loop.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/go-waitingroom/waitingroom/challenge"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080/", "the page to get")
	jsonKey := flag.String("json-key", "waitingRoom", "top-level key of the room's JSON answers")
	maxWait := flag.Duration("max-wait", time.Hour, "give up after waiting this long")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *maxWait)
	defer cancel()
	jar, _ := cookiejar.New(nil) // never fails without options
	w := &waiter{
		client:  &http.Client{Jar: jar, Timeout: 30 * time.Second},
		jsonKey: *jsonKey,
		sleep:   sleep,
		log:     os.Stderr,
	}
	body, err := w.wait(ctx, *url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jsonclient:", err)
		os.Exit(1)
	}
	_, _ = os.Stdout.Write(body)
}

// errClosed reports a room that takes no new visitors (QueueingMethod
// Reject): its answer does not refresh, so waiting is pointless.
var errClosed = errors.New("the site is closed to new visitors")

// maxBody bounds what the client reads of a response.
const maxBody = 1 << 20

// status is the room's JSON answer to a waiting client (the fields this
// client uses).
type status struct {
	InWaitingRoom          bool   `json:"inWaitingRoom"`
	WaitTimeKnown          bool   `json:"waitTimeKnown"`
	WaitTimeFormatted      string `json:"waitTimeFormatted"`
	QueueIsFull            bool   `json:"queueIsFull"`
	QueueAll               bool   `json:"queueAll"`
	RefreshIntervalSeconds int    `json:"refreshIntervalSeconds"`
	IsRandomQueue          bool   `json:"isRandomQueue"`
	IsRejectQueue          bool   `json:"isRejectQueue"`
	PositionInLine         int    `json:"positionInLine"`
	ChancePerRefreshOneIn  int    `json:"chancePerRefreshOneIn"`
	ChallengePuzzle        string `json:"challengePuzzle"`
}

// waiter waits in a room on behalf of the program.
type waiter struct {
	client  *http.Client // with a cookie jar: the cookie is the place in the queue
	jsonKey string       // top-level key of the room's JSON answers
	// sleep waits for d or until ctx is done (then it returns ctx.Err()).
	sleep func(ctx context.Context, d time.Duration) error
	log   io.Writer // progress lines
}

// sleep waits for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait gets url until the room lets the client in, and returns the
// application's answer. It fails when ctx ends first, when the site is
// closed, or when the answer is an HTTP error.
func (w *waiter) wait(ctx context.Context, url string) ([]byte, error) {
	answer := "" // to the latest puzzle, sent with the next request
	for {
		resp, body, err := w.get(ctx, url, answer)
		if err != nil {
			return nil, err
		}
		st, waiting := w.parse(resp, body)
		if !waiting {
			if resp.StatusCode >= 400 {
				return nil, fmt.Errorf("%s: %s", url, resp.Status)
			}
			fmt.Fprintf(w.log, "let in: %s\n", resp.Status)
			return body, nil
		}
		if st.IsRejectQueue {
			return nil, errClosed
		}
		d := time.Duration(st.RefreshIntervalSeconds) * time.Second
		if d < time.Second { // never hammer the room
			d = refreshHeader(resp)
		}
		answer = ""
		if st.ChallengePuzzle != "" {
			if answer, err = challenge.Solve(ctx, st.ChallengePuzzle); err != nil {
				return nil, fmt.Errorf("solving the room's puzzle: %w", err)
			}
			fmt.Fprintln(w.log, "solved the room's puzzle")
		}
		fmt.Fprintf(w.log, "waiting: %s; next try in %v\n", describe(st), d)
		if err := w.sleep(ctx, d); err != nil {
			return nil, fmt.Errorf("gave up waiting: %w", err)
		}
	}
}

// get requests url asking for JSON, with answer to the room's challenge
// if not "", and reads the answer.
func (w *waiter) get(ctx context.Context, url, answer string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if answer != "" {
		req.Header.Set(challenge.Header, answer)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, nil, err
	}
	return resp, body, nil
}

// parse returns the room's status when resp is the room's JSON answer to a
// waiting client; anything else is the application's.
func (w *waiter) parse(resp *http.Response, body []byte) (status, bool) {
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return status{}, false
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return status{}, false
	}
	var st status
	if raw, ok := doc[w.jsonKey]; !ok || json.Unmarshal(raw, &st) != nil || !st.InWaitingRoom {
		return status{}, false
	}
	return st, true
}

// refreshHeader is the delay of resp's Refresh header, at least a second.
func refreshHeader(resp *http.Response) time.Duration {
	if n, err := strconv.Atoi(resp.Header.Get("Refresh")); err == nil && n > 1 {
		return time.Duration(n) * time.Second
	}
	return time.Second
}

// describe says what the room tells a waiting visitor.
func describe(st status) string {
	switch {
	case st.QueueAll:
		return "the site lets no one in at the moment"
	case st.QueueIsFull:
		return "the queue is full: no one new can join"
	case !st.WaitTimeKnown:
		if st.PositionInLine > 0 {
			return fmt.Sprintf("no estimate yet, number %d in line", st.PositionInLine)
		}
		return "no estimate yet"
	case st.IsRandomQueue && st.ChancePerRefreshOneIn > 0:
		return fmt.Sprintf("estimated wait %s (random draw, 1 in %d at each try)", st.WaitTimeFormatted, st.ChancePerRefreshOneIn)
	case st.IsRandomQueue:
		return "estimated wait " + st.WaitTimeFormatted + " (random draw)"
	case st.PositionInLine > 0:
		return fmt.Sprintf("estimated wait %s, number %d in line", st.WaitTimeFormatted, st.PositionInLine)
	}
	return "estimated wait " + st.WaitTimeFormatted
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// errNotLoopback is returned for a target, or a connection, that is not on
// a loopback address.
var errNotLoopback = errors.New("only loopback targets (127.0.0.0/8, ::1, localhost)")

// checkTarget parses raw and accepts it only as an http(s) URL whose host
// is a loopback IP address or localhost.
func checkTarget(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("-url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("-url %q: want an http:// or https:// URL", raw)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("-url %q: %w", raw, errNotLoopback)
	}
	return u, nil
}

// loopbackOnly is a net.Dialer Control function that refuses to connect to
// anything but a loopback address, whatever a name resolved to or a
// redirect pointed at.
func loopbackOnly(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s: %w", address, errNotLoopback)
	}
	return nil
}

// newTransport returns the transport every visitor shares: one keep-alive
// connection per visitor at most, no proxy, loopback only.
func newTransport(clients int) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Control: loopbackOnly}
	return &http.Transport{
		Proxy:               nil, // never through an HTTP proxy from the environment
		DialContext:         d.DialContext,
		MaxIdleConns:        clients,
		MaxIdleConnsPerHost: clients,
		IdleConnTimeout:     90 * time.Second,
	}
}

// outcome is what a response was, for a visitor.
type outcome int

const (
	served  outcome = iota // the application answered
	waiting                // the room's waiting page
	closed                 // the room's closed page
)

// maxBody bounds what a visitor reads of a response.
const maxBody = 1 << 20

// roomStatus is the part of the room's JSON answer that visitors read.
type roomStatus struct {
	InWaitingRoom          bool `json:"inWaitingRoom"`
	RefreshIntervalSeconds int  `json:"refreshIntervalSeconds"`
	IsRejectQueue          bool `json:"isRejectQueue"`
}

// classify says what resp (with its body) is, and, for the waiting page,
// when to come back: refreshIntervalSeconds of a JSON answer, else the
// Refresh header, and never sooner than a second.
func classify(resp *http.Response, body []byte, jsonKey string) (outcome, time.Duration) {
	h := resp.Header
	refresh, hasRefresh := refreshHeader(h.Get("Refresh"))
	var st roomStatus
	isJSON := false
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err == nil && mt == "application/json" {
		var doc map[string]json.RawMessage
		if json.Unmarshal(body, &doc) == nil {
			if raw, ok := doc[jsonKey]; ok && json.Unmarshal(raw, &st) == nil && st.InWaitingRoom {
				isJSON = true
			}
		}
	}
	switch {
	case isJSON && st.IsRejectQueue:
		return closed, 0
	case isJSON || hasRefresh:
		if isJSON && st.RefreshIntervalSeconds > 0 {
			refresh = time.Duration(st.RefreshIntervalSeconds) * time.Second
		}
		return waiting, max(refresh, time.Second)
	case strings.Contains(h.Get("Cache-Control"), "no-store") && slices.ContainsFunc(h.Values("Vary"), func(v string) bool {
		return strings.Contains(strings.ToLower(v), "accept")
	}):
		return closed, 0
	}
	return served, 0
}

// refreshHeader reads the delay of a Refresh header ("21" or
// "21; url=..."). ok is false when there is none.
func refreshHeader(v string) (d time.Duration, ok bool) {
	if v == "" {
		return 0, false
	}
	s, _, _ := strings.Cut(v, ";")
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, true
	}
	return time.Duration(n) * time.Second, true
}

// stats is what one client saw. Each client has its own; run merges them.
type stats struct {
	latencies                   []time.Duration
	status                      map[int]int
	served, waiting, closed     int // responses
	failed                      int // requests without an answer
	firstErr                    error
	arrived, admitted, left     int // visitors
	waitingAtEnd, browsingAtEnd int
}

// result is the outcome of a run.
type result struct {
	stats
	elapsed time.Duration
	// stoppedBy says what ended the run: "duration", "requests" or
	// "interrupt".
	stoppedBy string
}

// loader runs the visitors of one run.
type loader struct {
	o         options
	transport *http.Transport
	budget    atomic.Int64       // requests left
	spent     atomic.Bool        // the budget ended the run
	exhausted context.CancelFunc // ends the run when the budget is spent
}

// run runs the visitors until the duration or the request budget is spent,
// or ctx is done.
func run(ctx context.Context, o options) (*result, error) {
	if _, err := checkTarget(o.url); err != nil {
		return nil, err
	}
	// The clock starts before the timer does, so a run stopped by its
	// duration never reports less than it.
	start := time.Now()
	timed, cancelTimed := context.WithTimeout(ctx, o.duration)
	defer cancelTimed()
	runCtx, exhausted := context.WithCancel(timed)
	defer exhausted()
	l := &loader{o: o, transport: newTransport(o.clients), exhausted: exhausted}
	defer l.transport.CloseIdleConnections()
	l.budget.Store(int64(o.requests))

	all := make([]*stats, o.clients)
	var wg sync.WaitGroup
	for i := range all {
		st := &stats{status: map[int]int{}}
		all[i] = st
		wg.Go(func() {
			for runCtx.Err() == nil {
				l.visit(runCtx, st)
			}
		})
	}
	wg.Wait()
	res := &result{elapsed: time.Since(start)}
	switch {
	case ctx.Err() != nil:
		res.stoppedBy = "interrupt"
	case l.spent.Load():
		res.stoppedBy = "requests"
	default:
		res.stoppedBy = "duration"
	}
	res.status = map[int]int{}
	for _, st := range all {
		res.latencies = append(res.latencies, st.latencies...)
		for code, n := range st.status {
			res.status[code] += n
		}
		res.served += st.served
		res.waiting += st.waiting
		res.closed += st.closed
		res.failed += st.failed
		if res.firstErr == nil {
			res.firstErr = st.firstErr
		}
		res.arrived += st.arrived
		res.admitted += st.admitted
		res.left += st.left
		res.waitingAtEnd += st.waitingAtEnd
		res.browsingAtEnd += st.browsingAtEnd
	}
	slices.Sort(res.latencies)
	return res, nil
}

// pause waits for d, or until ctx is done.
func pause(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// visit is one visitor, from arrival with an empty cookie jar to departure
// or the end of the run.
func (l *loader) visit(ctx context.Context, st *stats) {
	jar, _ := cookiejar.New(nil) // never fails without options
	client := &http.Client{Transport: l.transport, Jar: jar, Timeout: l.o.timeout}
	st.arrived++
	var admittedAt time.Time // zero while not let in
	letIn, queued := false, false
	// atEnd counts the visitor in the state the end of the run found them.
	atEnd := func() {
		switch {
		case !admittedAt.IsZero():
			st.browsingAtEnd++
		case queued:
			st.waitingAtEnd++
		}
	}
	for {
		if l.budget.Add(-1) < 0 {
			l.spent.Store(true)
			l.exhausted() // the last request is spent: the run ends
			atEnd()
			return
		}
		out, refresh, err := l.get(ctx, client, st)
		if err != nil && ctx.Err() != nil { // cut off by the end of the run: not counted
			atEnd()
			return
		}
		if err != nil {
			st.failed++
			if st.firstErr == nil {
				st.firstErr = err
			}
			pause(ctx, 100*time.Millisecond)
			return
		}
		var next time.Duration
		switch out {
		case waiting:
			st.waiting++
			admittedAt, queued = time.Time{}, true // back in the queue, if they had been in
			next = refresh
		case closed:
			st.closed++
			pause(ctx, time.Second)
			return
		case served:
			st.served++
			now := time.Now()
			if admittedAt.IsZero() {
				admittedAt, queued = now, false
				if !letIn {
					letIn = true
					st.admitted++
				}
			}
			if now.Add(l.o.interval).Sub(admittedAt) >= l.o.browse {
				st.left++
				return
			}
			next = l.o.interval
		}
		pause(ctx, next)
		if ctx.Err() != nil {
			atEnd()
			return
		}
	}
}

// get requests the target once with client and records the answer's
// status and latency in st. err is set when there is no answer.
func (l *loader) get(ctx context.Context, client *http.Client, st *stats) (outcome, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.o.url, nil)
	if err != nil {
		return 0, 0, err
	}
	if l.o.json {
		req.Header.Set("Accept", "application/json")
	} else {
		req.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	_ = resp.Body.Close()
	if err != nil {
		return 0, 0, err
	}
	st.latencies = append(st.latencies, time.Since(start))
	st.status[resp.StatusCode]++
	out, refresh := classify(resp, body, l.o.jsonKey)
	return out, refresh, nil
}

// percentile returns the p-quantile (0 < p ≤ 1, nearest rank) of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// print writes the report of res.
func (res *result) print(w io.Writer, o options) {
	accept := "html"
	if o.json {
		accept = "json"
	}
	n := len(res.latencies)
	fmt.Fprintf(w, "target       %s (%d clients, accept %s, interval %v, browse %v)\n", o.url, o.clients, accept, o.interval, o.browse)
	fmt.Fprintf(w, "requests     %d in %.2fs (stopped by %s; limits %v, %d requests)\n", n, res.elapsed.Seconds(), res.stoppedBy, o.duration, o.requests)
	fmt.Fprintf(w, "throughput   %.0f req/s\n", float64(n)/res.elapsed.Seconds())
	fmt.Fprintf(w, "latency      p50 %v  p90 %v  p99 %v  max %v\n",
		round(percentile(res.latencies, 0.50)), round(percentile(res.latencies, 0.90)),
		round(percentile(res.latencies, 0.99)), round(percentile(res.latencies, 1)))
	codes := slices.Sorted(maps.Keys(res.status))
	parts := make([]string, 0, len(codes))
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d: %d", c, res.status[c]))
	}
	fmt.Fprintf(w, "status       %s\n", strings.Join(parts, ", "))
	fmt.Fprintf(w, "responses    admitted %d, waiting %d, closed %d, failed %d\n", res.served, res.waiting, res.closed, res.failed)
	if res.firstErr != nil {
		fmt.Fprintf(w, "first error  %v\n", res.firstErr)
	}
	fmt.Fprintf(w, "visitors     %d arrived, %d let in, %d left after browsing; at the end %d waiting, %d browsing\n",
		res.arrived, res.admitted, res.left, res.waitingAtEnd, res.browsingAtEnd)
}

// round shortens d for the report.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

package multiproc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
)

// hexKey is the cookie key every process of a test shares.
const hexKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the outage test makes many on
	// purpose, and the rooms report the outage themselves.
	redis.SetLogger(quietRedis{})
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// binary builds cmd/waitingroom once per test run and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "waitingroom-multiproc-")
		if buildErr != nil {
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		buildBin = filepath.Join(buildDir, "waitingroom")
		cmd := exec.Command(goTool, "build", "-o", buildBin, "github.com/go-waitingroom/waitingroom/cmd/waitingroom")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/waitingroom: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return buildBin
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
// Another process may take it before it is used: callers retry.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// randomName returns prefix followed by 12 random hex digits.
func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// syncBuffer collects a running program's output.
type syncBuffer = servicetest.Buffer

// proc is one running cmd/waitingroom process.
type proc struct {
	name   string
	base   string // http://127.0.0.1:port
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

// startProc starts the proxy with args on a free loopback port and waits
// until its health check answers. It is stopped (SIGINT, then SIGKILL) at
// the end of the test, and its output is logged if the test failed.
func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	bin := binary(t)
	for attempt := 0; ; attempt++ {
		port := strconv.Itoa(freePort(t))
		p := &proc{name: name, base: "http://127.0.0.1:" + port, out: &syncBuffer{}, exited: make(chan struct{})}
		p.cmd = exec.Command(bin, append(append([]string{}, args...), "-listen", "127.0.0.1:"+port)...)
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		require.NoError(t, p.cmd.Start())
		go func() { _ = p.cmd.Wait(); close(p.exited) }()
		err := p.waitHealthy(15 * time.Second)
		if err == nil {
			t.Cleanup(func() {
				p.stop()
				if t.Failed() {
					t.Logf("output of %s:\n%s", p.name, p.out.String())
				}
			})
			return p
		}
		p.stop()
		if attempt < 2 && strings.Contains(p.out.String(), "address already in use") {
			continue // the port was taken in the meantime
		}
		t.Fatalf("%s did not start: %v\n%s", name, err, p.out.String())
	}
}

func (p *proc) waitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("exited: %v", p.cmd.ProcessState)
		default:
		}
		if resp, err := c.Get(p.base + "/healthz"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no healthy answer within %v", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop interrupts the process and kills it if it has not exited within
// 10 seconds.
func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// activeReport is the JSON form of the demo's /active.
type activeReport struct {
	At                  time.Time      `json:"at"`
	Active              int            `json:"active"`
	AdmissionsPerMinute map[string]int `json:"admissionsPerMinute"`
	Sessions            []struct {
		Visitor    string    `json:"visitor"`
		AcceptedAt time.Time `json:"acceptedAt"`
		LastSeen   time.Time `json:"lastSeen"`
	} `json:"sessions"`
}

// sessionID identifies a session across processes.
type sessionID struct {
	visitor    string
	acceptedAt int64 // Unix ms
}

// merged is the sessions of several demo processes, each counted once.
type merged struct {
	at       time.Time // the earliest of the reports' times
	sum      int       // the sum of the processes' own active counts
	sessions map[sessionID]time.Time
	admitted map[sessionID]time.Time
}

// active counts the merged sessions with a request within session of m.at.
func (m merged) active(session time.Duration) int {
	n := 0
	for _, seen := range m.sessions {
		if m.at.Sub(seen) < session {
			n++
		}
	}
	return n
}

// perMinute counts the merged sessions by the minute they were admitted.
func (m merged) perMinute() map[time.Time]int {
	out := map[time.Time]int{}
	for _, at := range m.admitted {
		out[at.Truncate(time.Minute)]++
	}
	return out
}

// fetchReports reads every process's /active report at once and merges
// them.
func fetchReports(ctx context.Context, c *http.Client, procs []*proc) (merged, error) {
	reps := make([]activeReport, len(procs))
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/active?format=json", nil)
			resp, err := c.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs[i] = fmt.Errorf("%s /active: %s", p.name, resp.Status)
				return
			}
			errs[i] = json.NewDecoder(resp.Body).Decode(&reps[i])
		})
	}
	wg.Wait()
	m := merged{sessions: map[sessionID]time.Time{}, admitted: map[sessionID]time.Time{}}
	for i, rep := range reps {
		if errs[i] != nil {
			return m, errs[i]
		}
		if m.at.IsZero() || rep.At.Before(m.at) {
			m.at = rep.At
		}
		m.sum += rep.Active
		for _, s := range rep.Sessions {
			id := sessionID{s.Visitor, s.AcceptedAt.UnixMilli()}
			if s.LastSeen.After(m.sessions[id]) {
				m.sessions[id] = s.LastSeen
			}
			m.admitted[id] = s.AcceptedAt
		}
	}
	return m, nil
}

// loadStats counts what the clients of drive saw.
type loadStats struct {
	requests, admittedPages, waitingPages atomic.Int64
	serverErrors, otherErrors             atomic.Int64
	clientsIn                             atomic.Int64
	lostSession                           atomic.Int64 // waiting pages after being let in

	mu       sync.Mutex
	firstErr string
}

func (s *loadStats) fail(msg string) {
	s.mu.Lock()
	if s.firstErr == "" {
		s.firstErr = msg
	}
	s.mu.Unlock()
}

func (s *loadStats) String() string {
	return fmt.Sprintf("requests=%d admitted-pages=%d waiting-pages=%d clients-in=%d 5xx=%d other-errors=%d lost-sessions=%d first-error=%q",
		s.requests.Load(), s.admittedPages.Load(), s.waitingPages.Load(), s.clientsIn.Load(),
		s.serverErrors.Load(), s.otherErrors.Load(), s.lostSession.Load(), s.firstErr)
}

// sleepCtx sleeps for d or until ctx is done, and reports whether it slept
// the whole time.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// drive runs n cookie-keeping clients until ctx is done. Each arrives at a
// random moment within arrival, then sends every request to a process
// chosen at random: once let in it browses a page every 0.5 to 1.5 s;
// while waiting it comes back when the page's Refresh header says.
func drive(ctx context.Context, bases []string, n int, arrival time.Duration, stats *loadStats) {
	tr := &http.Transport{MaxIdleConnsPerHost: n, IdleConnTimeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			jar, _ := cookiejar.New(nil)
			c := &http.Client{Transport: tr, Jar: jar, Timeout: 10 * time.Second}
			if !sleepCtx(ctx, mrand.N(arrival+1)) {
				return
			}
			in := false
			for ctx.Err() == nil {
				wait := client(ctx, c, bases[mrand.N(len(bases))]+"/", &in, stats)
				if !sleepCtx(ctx, wait) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// client sends one request and returns how long to wait before the next.
func client(ctx context.Context, c *http.Client, url string, in *bool, stats *loadStats) time.Duration {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			stats.otherErrors.Add(1)
			stats.fail(err.Error())
		}
		return time.Second
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		if ctx.Err() == nil {
			stats.otherErrors.Add(1)
			stats.fail(err.Error())
		}
		return time.Second
	}
	stats.requests.Add(1)
	switch {
	case resp.StatusCode >= 500:
		stats.serverErrors.Add(1)
		stats.fail(fmt.Sprintf("%s: %s", url, resp.Status))
		return time.Second
	case bytes.Contains(body, []byte("You're in")):
		stats.admittedPages.Add(1)
		if !*in {
			*in = true
			stats.clientsIn.Add(1)
		}
		return 500*time.Millisecond + mrand.N(time.Second)
	}
	stats.waitingPages.Add(1)
	if *in {
		stats.lostSession.Add(1)
		stats.fail("an admitted client got a waiting page from " + url)
	}
	secs, err := strconv.Atoi(resp.Header.Get("Refresh"))
	if err != nil || secs <= 0 {
		stats.otherErrors.Add(1)
		stats.fail(fmt.Sprintf("%s: status %d without a Refresh header", url, resp.StatusCode))
		return time.Second
	}
	return time.Duration(secs) * time.Second
}

// Command soak runs the waiting room for minutes under churn and reports
// whether it stays healthy: memory and goroutines flat, the limits held,
// no 5xx. scripts/soak.sh builds cmd/waitingroom and runs it; it talks to
// 127.0.0.1 only.
//
// It starts -procs cmd/waitingroom processes (-bin) in front of an
// upstream application of its own, sharing the Redis at -redis under a key
// prefix of their own (deleted at the end), and sends -visitors virtual
// visitors at them, arriving over the first 80 % of the run. Visitors keep
// their cookies and pick a process at random for every request; waiting
// ones come back when the page says, or give up (-abandon per page);
// admitted ones browse for 10 to 60 s, then half of them end their
// session through the application's "Waiting-Room-Command: revoke"
// response header and half just leave. Along the way the room switches to
// random queueing and back and lowers then restores its limits (Room.Update
// of a room that shares the store and never syncs), and one process is
// restarted.
//
// Every 10 s it prints the visitors' figures and, per process, the live
// heap after the latest GC and the goroutines (from the Go runtime's
// gctrace and schedtrace output), the resident memory and threads, and
// the shared clock's lead over this host's clock. At the end it checks the
// limits from the visitors' side and from the room's own counts, and
// exits with status 1 if they were exceeded or a visitor got a 5xx.
package main

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
)

// options are the command's flags.
type options struct {
	minutes      float64
	visitors     int
	bin, redis   string
	procs        int
	total, perMn int
	refresh      time.Duration
	syncInterval time.Duration
	session      time.Duration
	abandon      float64
}

// main reads the flags, runs the soak until its end or an interrupt, and
// exits with its status: 1 if it failed, 2 for bad flags.
func main() {
	var o options
	flag.Float64Var(&o.minutes, "minutes", 10, "how long to run")
	flag.IntVar(&o.visitors, "visitors", 10_000, "virtual visitors, arriving over the first 80 % of the run")
	flag.StringVar(&o.bin, "bin", "", "path of the cmd/waitingroom binary (required)")
	flag.StringVar(&o.redis, "redis", "127.0.0.1:6379", "Redis host:port on loopback")
	flag.IntVar(&o.procs, "procs", 3, "waiting-room processes")
	flag.IntVar(&o.total, "total-active-users", 300, "TotalActiveUsers")
	flag.IntVar(&o.perMn, "new-users-per-minute", 300, "NewUsersPerMinute")
	flag.DurationVar(&o.refresh, "refresh-interval", 5*time.Second, "RefreshInterval")
	flag.DurationVar(&o.syncInterval, "sync-interval", 200*time.Millisecond, "SyncInterval")
	flag.DurationVar(&o.session, "session-duration", time.Minute, "SessionDuration")
	flag.Float64Var(&o.abandon, "abandon", 0.08, "chance that a waiting visitor gives up at each waiting page")
	flag.Parse()
	if o.bin == "" || o.minutes <= 0 || o.procs < 1 || o.visitors < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if host, _, err := net.SplitHostPort(o.redis); err != nil || (host != "127.0.0.1" && host != "localhost") {
		fmt.Fprintln(os.Stderr, "soak: -redis must be a loopback host:port")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
	}
	os.Exit(code)
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// limits are the settings in force from a moment on.
type limits struct {
	from             time.Time
	total, perMinute int
	method           waitingroom.QueueingMethod
}

// soak is one run.
type soak struct {
	o       options
	name    string
	prefix  string
	keyHex  string
	started time.Time
	procs   []*proc
	rdb     *redis.Client
	ctrl    *waitingroom.Room // shares the store, never syncs: Update only

	mu       sync.Mutex
	history  []limits
	visitors []*visitor
	events   []string

	requests, serverErrors, connErrors, lost, waitingPages atomic.Int64
	arrived, admitted, revoked, gaveUp, left               atomic.Int64
	maxLead                                                atomic.Int64 // ms the shared clock was seen ahead of this host's
	transport                                              *http.Transport
}

func run(ctx context.Context, o options) (int, error) {
	s := &soak{o: o, name: "soak-" + randomHex(4), prefix: "soak:" + randomHex(4) + ":", keyHex: randomHex(32), started: time.Now()}
	s.rdb = redis.NewClient(&redis.Options{Addr: o.redis})
	defer s.rdb.Close()
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	err := s.rdb.Ping(pctx).Err()
	cancel()
	if err != nil {
		return 1, fmt.Errorf("redis at %s: %w", o.redis, err)
	}
	defer s.cleanupRedis()

	upstream, err := s.startUpstream()
	if err != nil {
		return 1, err
	}
	defer upstream.Close()

	key, _ := hex.DecodeString(s.keyHex)
	s.ctrl, err = waitingroom.New(waitingroom.Config{
		Name: s.name, TotalActiveUsers: o.total, NewUsersPerMinute: o.perMn,
		SessionDuration: o.session, RefreshInterval: o.refresh, Keys: [][]byte{key},
		SyncInterval: -1, Logger: slog.New(slog.DiscardHandler),
	}, redisstore.New(s.rdb, redisstore.Options{KeyPrefix: s.prefix}))
	if err != nil {
		return 1, err
	}
	defer s.ctrl.Close()
	s.history = []limits{{from: time.Now(), total: o.total, perMinute: o.perMn, method: waitingroom.FIFO}}

	for i := range o.procs {
		p, err := s.startProc(i, "http://"+upstream.Addr().String())
		if err != nil {
			s.stopProcs()
			return 1, err
		}
		s.procs = append(s.procs, p)
	}
	defer s.stopProcs()
	s.transport = &http.Transport{MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second}
	defer s.transport.CloseIdleConnections()

	duration := time.Duration(o.minutes * float64(time.Minute))
	fmt.Printf("soak: %d visitors over %v against %d processes on redis %s (room %s, prefix %s); limits %d active, %d/min; refresh %v, sync %v, session %v\n",
		o.visitors, duration, o.procs, o.redis, s.name, s.prefix, o.total, o.perMn, o.refresh, o.syncInterval, o.session)
	runCtx, stopRun := context.WithTimeout(ctx, duration)
	defer stopRun()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.arrivals(runCtx, time.Duration(float64(duration)*0.8)) }()
	go func() { defer wg.Done(); s.churn(runCtx, duration) }()
	s.report(runCtx)
	wg.Wait()
	s.waitVisitors()
	return s.summary(), nil
}

// startUpstream serves the application behind the proxies: "app" for
// every page, and on /logout the revoke command.
func (s *soak) startUpstream() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Path == "/logout" {
			w.Header().Set(waitingroom.CommandHeader, "revoke")
			_, _ = io.WriteString(w, "bye")
			return
		}
		_, _ = io.WriteString(w, "app")
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln, nil
}

// cleanupRedis deletes the run's keys.
func (s *soak) cleanupRedis() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	keys, err := s.rdb.Keys(ctx, s.prefix+"*").Result()
	if err == nil && len(keys) > 0 {
		_ = s.rdb.Del(ctx, keys...).Err()
	}
}

// proc is one cmd/waitingroom process and what its runtime reports.
type proc struct {
	i    int
	port int
	args []string
	env  []string

	mu         sync.Mutex
	cmd        *exec.Cmd
	done       chan struct{}
	heapMB     float64 // live heap after the latest GC
	goroutines int     // at the latest scheduler trace
	outages    int     // "store unreachable" lines
	losses     int     // "shared state was lost" lines
	restarts   int
	tail       []string // latest other lines, for errors

	inSched bool
	gCount  int
}

func (s *soak) startProc(i int, upstream string) (*proc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	p := &proc{i: i, port: port,
		args: []string{"-upstream", upstream, "-listen", fmt.Sprintf("127.0.0.1:%d", port),
			"-store", "redis://" + s.o.redis + "/0", "-store-prefix", s.prefix, "-name", s.name, "-key", s.keyHex,
			"-total-active-users", strconv.Itoa(s.o.total), "-new-users-per-minute", strconv.Itoa(s.o.perMn),
			"-session-duration", s.o.session.String(), "-refresh-interval", s.o.refresh.String(),
			"-sync-interval", s.o.syncInterval.String()},
		env: append(os.Environ(), "GODEBUG=gctrace=1,schedtrace=10000,scheddetail=1"),
	}
	return p, p.start(s.o.bin)
}

// base is the process's URL.
func (p *proc) base() string { return fmt.Sprintf("http://127.0.0.1:%d", p.port) }

// start runs the process and waits until its health check answers.
func (p *proc) start(bin string) error {
	cmd := exec.Command(bin, p.args...)
	cmd.Env = p.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	go func() {
		p.read(stderr)
		_ = cmd.Wait()
		close(done)
	}()
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("process %d exited at start: %s", p.i+1, strings.Join(p.lastLines(), " | "))
		default:
		}
		if resp, err := c.Get(p.base() + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("process %d not healthy within 20 s", p.i+1)
}

// stop interrupts the process and waits for it (kills it after 15 s).
func (p *proc) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// stopProcs stops every process.
func (s *soak) stopProcs() {
	for _, p := range s.procs {
		p.stop()
	}
}

// read parses the process's stderr: gctrace lines ("gc N @...: ... A->B->C
// MB, ..."), scheduler traces (a "SCHED" line, then one "  G..." line per
// goroutine), the room's log lines.
func (p *proc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		switch {
		case strings.HasPrefix(line, "SCHED "):
			if p.inSched {
				p.goroutines = p.gCount
			}
			p.inSched, p.gCount = true, 0
		case p.inSched && strings.HasPrefix(line, "  G"):
			p.gCount++
		case p.inSched && (strings.HasPrefix(line, "  P") || strings.HasPrefix(line, "  M")):
		default:
			if p.inSched {
				p.goroutines, p.inSched = p.gCount, false
			}
			if strings.HasPrefix(line, "gc ") {
				if mb, ok := liveHeap(line); ok {
					p.heapMB = mb
				}
			} else {
				if strings.Contains(line, "store unreachable") {
					p.outages++
				}
				if strings.Contains(line, "shared state was lost") {
					p.losses++
				}
				p.tail = append(p.tail, line)
				if len(p.tail) > 20 {
					p.tail = p.tail[1:]
				}
			}
		}
		p.mu.Unlock()
	}
}

// liveHeap returns C of "A->B->C MB" in a gctrace line: the live heap
// after the collection.
func liveHeap(line string) (float64, bool) {
	for _, f := range strings.Fields(line) {
		if parts := strings.Split(f, "->"); len(parts) == 3 {
			if v, err := strconv.ParseFloat(parts[2], 64); err == nil {
				return v, true
			}
		}
	}
	return 0, false
}

// lastLines returns the latest lines of the process's stderr that were
// neither traces nor counted.
func (p *proc) lastLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.tail)
}

// procStatus returns the resident memory (MB) and threads of pid from
// /proc.
func procStatus(pid int) (rssMB float64, threads int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			kb, _ := strconv.ParseFloat(f[1], 64)
			rssMB = kb / 1024
		case "Threads:":
			threads, _ = strconv.Atoi(f[1])
		}
	}
	return rssMB, threads
}

// visitor is one virtual visitor.
type visitor struct {
	cookies map[string]string

	arrived    time.Time
	admittedAt time.Time // the response that let them in
	sentAt     time.Time // the request that got that response
	sessionEnd time.Time // revoke, or latest cookie while admitted + session
	revoked    bool
	gone       bool
}

// arrivals starts the visitors uniformly over spread.
func (s *soak) arrivals(ctx context.Context, spread time.Duration) {
	start := time.Now()
	rng := mrand.New(mrand.NewPCG(uint64(start.UnixNano()), 7))
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range s.o.visitors {
		at := start.Add(time.Duration(float64(spread) * float64(i) / float64(s.o.visitors)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(at)):
		}
		v := &visitor{cookies: map[string]string{}}
		s.mu.Lock()
		s.visitors = append(s.visitors, v)
		s.mu.Unlock()
		s.arrived.Add(1)
		seed := rng.Uint64()
		wg.Go(func() { s.visit(ctx, v, mrand.New(mrand.NewPCG(seed, 9))) })
	}
}

// waitVisitors gives the visitors' goroutines a moment to notice the end.
func (s *soak) waitVisitors() {
	time.Sleep(500 * time.Millisecond)
}

// visit is one visitor's life.
func (s *soak) visit(ctx context.Context, v *visitor, rng *mrand.Rand) {
	c := &http.Client{Transport: s.transport, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	browse := 10*time.Second + time.Duration(rng.Int64N(int64(50*time.Second)))
	revoke := rng.IntN(2) == 0
	s.mu.Lock()
	v.arrived = time.Now()
	s.mu.Unlock()
	for ctx.Err() == nil {
		path := "/"
		s.mu.Lock()
		in := !v.admittedAt.IsZero()
		browsed := in && time.Since(v.admittedAt) >= browse
		s.mu.Unlock()
		if browsed && !revoke {
			s.mu.Lock()
			v.gone = true
			s.mu.Unlock()
			s.left.Add(1)
			return
		}
		if browsed {
			path = "/logout"
		}
		a, err := s.request(ctx, c, v, rng, path)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.connErrors.Add(1) // a process restarting: the balancer tries another
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		wait, done := s.act(v, a, rng, in)
		if done || !sleep(ctx, wait) {
			return
		}
	}
}

// answer is what a visitor got for one request.
type answer struct {
	status    int
	body      string
	refresh   string    // the Refresh header
	sent, got time.Time // when the request was sent, when its answer came
	newCookie bool      // the answer set a cookie
}

// request sends visitor v's request for path, with its cookies, to a
// process picked at random, and keeps the cookies the answer sets.
func (s *soak) request(ctx context.Context, c *http.Client, v *visitor, rng *mrand.Rand, path string) (answer, error) {
	p := s.procs[rng.IntN(len(s.procs))]
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base()+path, nil)
	for name, val := range v.cookies {
		req.AddCookie(&http.Cookie{Name: name, Value: val})
	}
	sent := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	a := answer{status: resp.StatusCode, body: string(body), refresh: resp.Header.Get("Refresh"), sent: sent, got: time.Now()}
	s.requests.Add(1)
	for _, ck := range resp.Cookies() {
		if ck.MaxAge < 0 {
			delete(v.cookies, ck.Name)
		} else {
			v.cookies[ck.Name] = ck.Value
			a.newCookie = true
		}
	}
	return a, nil
}

// act counts answer a to visitor v (in: let in before the request) and
// returns how long v waits before the next request, or done when v is
// gone: revoked, or given up waiting.
func (s *soak) act(v *visitor, a answer, rng *mrand.Rand, in bool) (wait time.Duration, done bool) {
	wait = 2*time.Second + time.Duration(rng.Int64N(int64(3*time.Second)))
	switch {
	case a.status >= 500:
		s.serverErrors.Add(1)
		wait = time.Second
	case a.body == "bye":
		s.mu.Lock()
		v.revoked, v.gone, v.sessionEnd = true, true, a.sent
		s.mu.Unlock()
		s.revoked.Add(1)
		return 0, true
	case a.body == "app":
		s.mu.Lock()
		if v.admittedAt.IsZero() {
			v.admittedAt, v.sentAt = a.got, a.sent
			s.admitted.Add(1)
		}
		if a.newCookie || v.sessionEnd.IsZero() {
			v.sessionEnd = a.got.Add(s.o.session)
		}
		s.mu.Unlock()
	default:
		s.waitingPages.Add(1)
		if in {
			s.lost.Add(1)
		}
		if rng.Float64() < s.o.abandon {
			s.mu.Lock()
			v.gone = true
			s.mu.Unlock()
			s.gaveUp.Add(1)
			return 0, true
		}
		secs, _ := strconv.Atoi(a.refresh)
		wait = time.Duration(max(secs, 1)) * time.Second
	}
	return wait, false
}

// sleep waits d, or until ctx is done: then it returns false.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// churn changes the room while it runs: random queueing and back, lower
// limits and back, one process restarted.
func (s *soak) churn(ctx context.Context, duration time.Duration) {
	start := time.Now()
	steps := []struct {
		at   float64
		name string
		do   func() error
	}{
		{0.20, "switch to random queueing", func() error {
			return s.update(func(st *waitingroom.Settings) { st.QueueingMethod = waitingroom.Random })
		}},
		{0.35, "switch back to FIFO", func() error { return s.update(func(st *waitingroom.Settings) { st.QueueingMethod = waitingroom.FIFO }) }},
		{0.50, "lower the limits by a third", func() error {
			return s.update(func(st *waitingroom.Settings) {
				st.TotalActiveUsers, st.NewUsersPerMinute = s.o.total*2/3, s.o.perMn*2/3
			})
		}},
		{0.60, "restart process 2", func() error {
			p := s.procs[min(1, len(s.procs)-1)]
			p.stop()
			p.mu.Lock()
			p.restarts++
			p.mu.Unlock()
			return p.start(s.o.bin)
		}},
		{0.75, "restore the limits", func() error {
			return s.update(func(st *waitingroom.Settings) { st.TotalActiveUsers, st.NewUsersPerMinute = s.o.total, s.o.perMn })
		}},
	}
	for _, st := range steps {
		at := start.Add(time.Duration(st.at * float64(duration)))
		if !sleep(ctx, time.Until(at)) {
			return
		}
		err := st.do()
		msg := fmt.Sprintf("%7s  churn: %s", time.Since(s.started).Round(time.Second), st.name)
		if err != nil {
			msg += ": " + err.Error()
		}
		fmt.Println(msg)
		s.mu.Lock()
		s.events = append(s.events, msg)
		s.mu.Unlock()
	}
}

// update changes the live settings through the control room and notes
// the limits in force from now on.
func (s *soak) update(fn func(*waitingroom.Settings)) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var after waitingroom.Settings
	err := s.ctrl.Update(ctx, func(st *waitingroom.Settings) { fn(st); after = *st })
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.history = append(s.history, limits{from: time.Now(), total: after.TotalActiveUsers, perMinute: after.NewUsersPerMinute, method: after.QueueingMethod})
	s.mu.Unlock()
	return nil
}

// sharedState reads the room's state from Redis, as the processes keep it.
func (s *soak) sharedState(ctx context.Context) (*store.State, error) {
	val, err := s.rdb.Get(ctx, s.prefix+s.name).Bytes()
	if err != nil {
		return nil, err
	}
	if len(val) <= 8 {
		return nil, errors.New("short value")
	}
	return store.UnmarshalState(val[8:])
}

// report prints the figures every 10 s until ctx is done.
func (s *soak) report(ctx context.Context) {
	fmt.Println("   time  arrived  waiting-pages/s  admitted  active  revoked  gave-up  5xx  conn-err  lost | per process: heap MB (live) / RSS MB / goroutines / threads | soak heap MB / goroutines | clock lead")
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	lastWaiting := int64(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		wp := s.waitingPages.Load()
		var procs []string
		for _, p := range s.procs {
			p.mu.Lock()
			pid := p.cmd.Process.Pid
			line := fmt.Sprintf("%.1f", p.heapMB)
			g := p.goroutines
			p.mu.Unlock()
			rss, threads := procStatus(pid)
			procs = append(procs, fmt.Sprintf("%s/%.0f/%d/%d", line, rss, g, threads))
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		lead := "?"
		if st, err := s.sharedState(ctx); err == nil {
			ms := st.Clock - time.Now().UnixMilli()
			lead = time.Duration(ms * int64(time.Millisecond)).String()
			if ms > s.maxLead.Load() {
				s.maxLead.Store(ms)
			}
		}
		fmt.Printf("%7s  %7d  %15.0f  %8d  %6d  %7d  %7d  %3d  %8d  %4d | %s | %.0f / %d | %s\n",
			time.Since(s.started).Round(time.Second), s.arrived.Load(), float64(wp-lastWaiting)/10, s.admitted.Load(),
			s.activeAt(time.Now(), 0), s.revoked.Load(), s.gaveUp.Load(), s.serverErrors.Load(), s.connErrors.Load(), s.lost.Load(),
			strings.Join(procs, "  "), float64(ms.HeapAlloc)/(1<<20), runtime.NumGoroutine(), lead)
		lastWaiting = wp
	}
}

// activeAt counts the visitors whose session is alive at t, as the
// visitors see it: from the response that let them in to their revoke or
// the end of the session their latest cookie gave them, less early (a
// room whose clock runs ahead ends sessions that much sooner).
func (s *soak) activeAt(t time.Time, early time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.visitors {
		end := v.sessionEnd
		if !v.revoked {
			end = end.Add(-early)
		}
		if !v.admittedAt.IsZero() && !v.admittedAt.After(t) && end.After(t) {
			n++
		}
	}
	return n
}

// limitsAt returns the highest limits in force during [from, to].
func (s *soak) limitsAt(from, to time.Time) (total, perMinute int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, l := range s.history {
		end := time.Now().Add(time.Hour)
		if i+1 < len(s.history) {
			end = s.history[i+1].from
		}
		if l.from.Before(to) && end.After(from) {
			total, perMinute = max(total, l.total), max(perMinute, l.perMinute)
		}
	}
	return total, perMinute
}

// summary checks the limits and prints the final figures; it returns the
// exit status.
func (s *soak) summary() int {
	fmt.Println()
	s.printTotals()
	// The room's minutes and sessions follow the shared clock: while it
	// runs ahead of this host's (a known defect, see
	// TestSharedClockDoesNotRunAhead in package faults), sessions end that
	// much sooner in real time, and an admission near a minute's end falls
	// in the room's next minute. Figures off only by that lead are
	// reported, not failed.
	lead := time.Duration(max(s.maxLead.Load(), 0)) * time.Millisecond
	status := 0
	if !s.activeHeld(lead) {
		status = 1
	}
	if !s.admissionsHeld(lead) {
		status = 1
	}
	if !s.roomCountsHeld() {
		status = 1
	}
	s.printProcs()
	if s.serverErrors.Load() > 0 {
		status = 1
	}
	if status == 0 {
		fmt.Println("soak: OK")
	} else {
		fmt.Println("soak: FAILED")
	}
	return status
}

// printTotals prints the run's length and the visitors' counts.
func (s *soak) printTotals() {
	fmt.Printf("soak: %v; %d visitors arrived, %d let in, %d revoked, %d left, %d gave up; %d requests, %d 5xx, %d connection errors (process restart), %d waiting pages after admission\n",
		time.Since(s.started).Round(time.Second), s.arrived.Load(), s.admitted.Load(), s.revoked.Load(), s.left.Load(), s.gaveUp.Load(),
		s.requests.Load(), s.serverErrors.Load(), s.connErrors.Load(), s.lost.Load())
}

// activeHeld checks the active visitors, every second, against the
// highest TotalActiveUsers in force over the last session (lowering the
// limit ends no session), and prints the peak. It reports whether they
// held, but for seconds over the limit only with sessions lead sooner.
func (s *soak) activeHeld(lead time.Duration) bool {
	peak, peakAt, over, overLead := 0, time.Time{}, 0, 0
	for t := s.started; t.Before(time.Now()); t = t.Add(time.Second) {
		n := s.activeAt(t, 0)
		total, _ := s.limitsAt(t.Add(-s.o.session), t)
		if n > peak {
			peak, peakAt = n, t
		}
		if n > total {
			over++
			if s.activeAt(t, lead) > total {
				overLead++
			}
		}
	}
	total, _ := s.limitsAt(peakAt.Add(-s.o.session), peakAt)
	fmt.Printf("limits: peak active %d at %s (limit in force %d); seconds over the limit: %d, of which %d not explained by the shared clock's lead of up to %v\n",
		peak, peakAt.Sub(s.started).Round(time.Second), total, over, overLead, lead)
	return overLead == 0
}

// admissionsHeld checks the admissions per minute from the visitors' side
// (the minute of the response; an admission whose request and response
// fall in different minutes, or within lead of its minute's end, is
// counted as uncertain) against NewUsersPerMinute, and prints them. It
// reports whether the certain ones held.
func (s *soak) admissionsHeld(lead time.Duration) bool {
	perMinute, uncertain := s.admissionsByMinute(lead)
	minutes := make([]time.Time, 0, len(perMinute))
	for m := range perMinute {
		minutes = append(minutes, m)
	}
	slices.SortFunc(minutes, time.Time.Compare)
	held := true
	var parts []string
	for _, m := range minutes {
		_, lim := s.limitsAt(m, m.Add(time.Minute))
		mark := ""
		if perMinute[m]-uncertain[m] > lim {
			mark, held = " OVER", false
		}
		parts = append(parts, fmt.Sprintf("%s=%d(%d near its ends)/%d%s", m.Format("15:04"), perMinute[m], uncertain[m], lim, mark))
	}
	fmt.Printf("admissions per minute, visitors' side (minute=admitted(of which within the clock lead or a round trip of the minute's ends)/limit): %s\n", strings.Join(parts, " "))
	return held
}

// admissionsByMinute counts the visitors let in by the minute of the
// response that let them in, and those of them uncertain.
func (s *soak) admissionsByMinute(lead time.Duration) (perMinute, uncertain map[time.Time]int) {
	perMinute = map[time.Time]int{}
	uncertain = map[time.Time]int{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.visitors {
		if v.admittedAt.IsZero() {
			continue
		}
		m := v.admittedAt.Truncate(time.Minute)
		perMinute[m]++
		if !v.sentAt.Truncate(time.Minute).Equal(m) || !v.admittedAt.Add(lead).Truncate(time.Minute).Equal(m) {
			uncertain[m]++
		}
	}
	return perMinute, uncertain
}

// roomCountsHeld checks the admissions per minute from the room's own
// counts, in the shared state, against the limits in force around each
// minute, and prints them. It reports whether they held; a state it cannot
// read holds.
func (s *soak) roomCountsHeld() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := s.sharedState(ctx)
	if err != nil {
		fmt.Printf("the room's state could not be read: %v\n", err)
		return true
	}
	held := true
	var parts []string
	for _, c := range slices.SortedFunc(slices.Values(st.Admitted), func(a, b store.Count) int { return cmp.Compare(a.Key, b.Key) }) {
		m := time.Unix(c.Key*60, 0)
		_, lim := s.limitsAt(m.Add(-15*time.Second), m.Add(75*time.Second))
		mark := ""
		if int(c.N) > lim {
			mark, held = " OVER", false
		}
		parts = append(parts, fmt.Sprintf("%s=%d/%d%s", m.Format("15:04"), c.N, lim, mark))
	}
	fmt.Printf("admissions per minute, the room's own counts: %s (shared clock lead %v)\n", strings.Join(parts, " "),
		time.Duration((st.Clock-time.Now().UnixMilli())*int64(time.Millisecond)))
	return held
}

// printProcs prints each process's restarts, troubles and runtime.
func (s *soak) printProcs() {
	for _, p := range s.procs {
		p.mu.Lock()
		fmt.Printf("process %d: %d restarts, %d store-unreachable lines, %d state-lost lines, live heap %.1f MB, %d goroutines\n",
			p.i+1, p.restarts, p.outages, p.losses, p.heapMB, p.goroutines)
		p.mu.Unlock()
	}
}

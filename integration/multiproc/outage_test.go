package multiproc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
)

// redisServer is a redis-server child process of the test, on a port of its
// own, so the shared Redis is never touched.
type redisServer struct {
	t      *testing.T
	bin    string
	dir    string
	port   int
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

// newRedisServer finds redis-server and starts it on a free port. Without
// the binary the test skips (fails with WAITINGROOM_REQUIRE_SERVICES=1).
func newRedisServer(t *testing.T) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		servicetest.Unavailable(t, servicetest.Program("redis-server", "to run a server of the test's own"), err)
	}
	s := &redisServer{t: t, bin: bin, dir: t.TempDir(), out: &syncBuffer{}}
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("redis-server output:\n%s", s.out.String())
		}
	})
	for attempt := 0; ; attempt++ {
		s.port = freePort(t)
		err := s.start()
		if err == nil {
			return s
		}
		if attempt == 2 {
			t.Fatalf("redis-server did not start: %v\n%s", err, s.out.String())
		}
	}
}

func (s *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// start runs redis-server on s.port without persistence, except that a
// dump written by SHUTDOWN SAVE in s.dir is loaded, and waits for PING.
func (s *redisServer) start() error {
	s.cmd = exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--dbfilename", "dump.rdb")
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	s.exited = exited
	go func() { _ = s.cmd.Wait(); close(exited) }()
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited: %v", s.cmd.ProcessState)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("no PONG within 10 s: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// shutdownSave stops the server after it wrote its data to disk.
func (s *redisServer) shutdownSave() {
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer c.Close()
	_ = c.ShutdownSave(context.Background()).Err() // the connection closes: an error is expected
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		s.t.Error("redis-server did not shut down; killing it")
		s.kill()
	}
}

// kill stops the server at once: what it had in memory is lost.
func (s *redisServer) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// outagePlan is one outage scenario. Times are from the start of the
// scenario (t = 0), at which the rooms' clock reads startSecond past a
// minute.
type outagePlan struct {
	total, perMinute int
	startSecond      int
	wave1, wave2     int           // visitors arriving at 0.3 s and at wave2At
	wave2At          time.Duration //
	stopAt           time.Duration // the server stops
	restartAt        time.Duration // the server starts again on the same port
	endAt            time.Duration // the visitors stop
	keepData         bool          // stop with SHUTDOWN SAVE and reload; else kill, and it comes back empty
	// idle is how many visitors of wave 1 send no request once let in,
	// to the end: their sessions reach a state rebuilt after a loss only
	// from the instances' memory, not from a request.
	idle int
}

// outageVisitor is one cookie-keeping visitor of an outage scenario. Times
// are on the rooms' clock.
type outageVisitor struct {
	wave       int
	idle       bool // no request once let in
	arrival    time.Time
	in         bool
	acceptedAt time.Time
	bucket     time.Time
	// passedDuringOutage counts the requests that reached the application
	// while the server was down.
	passedDuringOutage int
	serverErrors       int
	otherErrors        int
	lost               int // waiting pages after being let in
	firstErr           string
}

// outageRun is what a scenario observed.
type outageRun struct {
	plan                   outagePlan
	t0, stopped, restarted time.Time // rooms' clock
	visitors               []*outageVisitor
	logs                   *syncBuffer
}

const outageRooms = 3

// runOutage runs plan: three rooms (as three instances would) on their own
// redis-server, each behind a loopback HTTP server, and visitors who pick
// a server at random for every request.
func runOutage(t *testing.T, plan outagePlan) *outageRun {
	t.Helper()
	srv := newRedisServer(t)

	// The rooms' clock is real time shifted so that t = 0 falls on
	// plan.startSecond past a minute: the scenario then knows which
	// arrival minute each wave gets.
	now := time.Now()
	shift := time.Duration(plan.startSecond)*time.Second - time.Duration(now.UnixNano()%int64(time.Minute))
	if shift < 0 {
		shift += time.Minute
	}
	clock := func() time.Time { return time.Now().Add(shift) }
	run := &outageRun{plan: plan, logs: &syncBuffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("room logs:\n%s", run.logs.String())
		}
	})

	name := randomName("outage-")
	prefix := randomName("wroutage:") + ":"
	var bases []string
	for i := range outageRooms {
		c := redis.NewClient(&redis.Options{Addr: srv.addr(), DialTimeout: 500 * time.Millisecond,
			ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
		st := redisstore.New(c, redisstore.Options{KeyPrefix: prefix})
		rm, err := waitingroom.New(waitingroom.Config{
			Name: name,
			Settings: waitingroom.Settings{
				TotalActiveUsers:  plan.total,
				NewUsersPerMinute: plan.perMinute,
				SessionDuration:   time.Minute,
			},
			RefreshInterval: time.Second,
			SyncInterval:    100 * time.Millisecond,
			Keys:            [][]byte{[]byte(hexKey)},
			Now:             clock,
			Logger:          slog.New(slog.NewTextHandler(run.logs, nil)).With("instance", i+1),
		}, st)
		require.NoError(t, err)
		hs := httptest.NewServer(rm.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tk, ok := waitingroom.TicketFrom(w)
			if !ok {
				http.Error(w, "no ticket", http.StatusInternalServerError)
				return
			}
			fmt.Fprintf(w, "in %d %d\n", tk.Bucket.Unix(), tk.AcceptedAt.UnixMilli())
		})))
		t.Cleanup(func() {
			hs.Close()
			_ = rm.Close()
			_ = st.Close()
			_ = c.Close()
		})
		bases = append(bases, hs.URL+"/")
		require.NoError(t, rm.Sync(context.Background()))
	}

	start := time.Now()
	at := func(d time.Duration) time.Time { return start.Add(d) }
	run.t0 = start.Add(shift)
	ctx, cancel := context.WithDeadline(context.Background(), at(plan.endAt))
	defer cancel()

	var (
		mu       sync.Mutex
		down     bool
		wg       sync.WaitGroup
		tr       = &http.Transport{MaxIdleConnsPerHost: 64}
		visitors []*outageVisitor
	)
	defer tr.CloseIdleConnections()
	launch := func(wave, n, idle int, arrive time.Duration) {
		for i := range n {
			v := &outageVisitor{wave: wave, idle: i < idle}
			visitors = append(visitors, v)
			wg.Go(func() {
				jar, _ := cookiejar.New(nil)
				c := &http.Client{Transport: tr, Jar: jar, Timeout: 5 * time.Second}
				if !sleepCtx(ctx, time.Until(at(arrive))+mrand.N(200*time.Millisecond)) {
					return
				}
				for ctx.Err() == nil {
					wait := v.visit(ctx, c, bases[mrand.N(len(bases))], clock, func() bool {
						mu.Lock()
						defer mu.Unlock()
						return down
					})
					if !sleepCtx(ctx, wait) {
						return
					}
				}
			})
		}
	}
	launch(1, plan.wave1, plan.idle, 300*time.Millisecond)
	launch(2, plan.wave2, 0, plan.wave2At)

	time.Sleep(time.Until(at(plan.stopAt)))
	mu.Lock()
	down = true
	mu.Unlock()
	run.stopped = clock()
	if plan.keepData {
		srv.shutdownSave()
	} else {
		srv.kill()
	}
	time.Sleep(time.Until(at(plan.restartAt)))
	require.NoError(t, srv.start(), "restarting redis-server on port %d", srv.port)
	run.restarted = clock()
	mu.Lock()
	down = false
	mu.Unlock()

	wg.Wait()
	run.visitors = visitors
	return run
}

// visit sends one request and returns how long to wait before the next.
func (v *outageVisitor) visit(ctx context.Context, c *http.Client, url string, clock func() time.Time, down func() bool) time.Duration {
	sent := clock()
	if v.arrival.IsZero() {
		v.arrival = sent
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	switch {
	case err != nil:
		if ctx.Err() == nil {
			v.otherErrors++
			v.setErr(err.Error())
		}
		return time.Second
	case resp.StatusCode >= 500:
		v.serverErrors++
		v.setErr(fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(body)))
		return time.Second
	case bytes.HasPrefix(body, []byte("in ")):
		f := strings.Fields(string(body))
		b, _ := strconv.ParseInt(f[1], 10, 64)
		a, _ := strconv.ParseInt(f[2], 10, 64)
		if !v.in {
			v.in, v.bucket, v.acceptedAt = true, time.Unix(b, 0), time.UnixMilli(a)
		}
		if down() {
			v.passedDuringOutage++
		}
		if v.idle {
			return time.Hour // past the end of the scenario
		}
		return 300*time.Millisecond + mrand.N(300*time.Millisecond)
	}
	if v.in {
		v.lost++
		v.setErr("a waiting page after being let in")
	}
	secs, err := strconv.Atoi(resp.Header.Get("Refresh"))
	if err != nil || secs <= 0 {
		v.otherErrors++
		v.setErr(fmt.Sprintf("status %d without a Refresh header", resp.StatusCode))
		return time.Second
	}
	return time.Duration(secs) * time.Second
}

func (v *outageVisitor) setErr(s string) {
	if v.firstErr == "" {
		v.firstErr = s
	}
}

// admissions returns the visitors let in, in order of admission.
func (r *outageRun) admissions() []*outageVisitor {
	var in []*outageVisitor
	for _, v := range r.visitors {
		if v.in {
			in = append(in, v)
		}
	}
	sortByAdmission(in)
	return in
}

func sortByAdmission(vs []*outageVisitor) {
	for i := 1; i < len(vs); i++ {
		for j := i; j > 0 && vs[j].acceptedAt.Before(vs[j-1].acceptedAt); j-- {
			vs[j], vs[j-1] = vs[j-1], vs[j]
		}
	}
}

// describe summarises the run for the test log.
func (r *outageRun) describe() string {
	var b strings.Builder
	rel := func(at time.Time) string { return at.Sub(r.t0).Round(10 * time.Millisecond).String() }
	fmt.Fprintf(&b, "rooms' clock at t=0: %s; server stopped at t=%s, back at t=%s\n",
		r.t0.Format("15:04:05.000"), rel(r.stopped), rel(r.restarted))
	for _, v := range r.admissions() {
		fmt.Fprintf(&b, "  admitted at t=%-7s wave %d, arrived t=%-7s bucket %s\n",
			rel(v.acceptedAt), v.wave, rel(v.arrival), v.bucket.Format("15:04:05"))
	}
	waiting := map[int]int{}
	for _, v := range r.visitors {
		if !v.in {
			waiting[v.wave]++
		}
	}
	fmt.Fprintf(&b, "  still waiting at the end: wave 1: %d, wave 2: %d\n", waiting[1], waiting[2])
	for _, line := range strings.Split(r.logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") || strings.Contains(line, "reachable again") {
			fmt.Fprintf(&b, "  log: %s\n", line)
		}
	}
	return b.String()
}

// checkServed checks what must hold through any outage under FailClosed:
// no 5xx, admitted visitors keep passing, nobody new gets in while the
// server is down, the room admits again once it is back, and everyone let
// in kept the arrival minute of their first request.
func (r *outageRun) checkServed(t *testing.T) {
	t.Helper()
	passed := 0
	for i, v := range r.visitors {
		assert.Zero(t, v.serverErrors, "visitor %d: 5xx responses (%s)", i, v.firstErr)
		assert.Zero(t, v.otherErrors, "visitor %d: errors (%s)", i, v.firstErr)
		assert.Zero(t, v.lost, "visitor %d was let in, then got a waiting page", i)
		passed += v.passedDuringOutage
		if v.in {
			// The arrival second, as the room's shared clock read it:
			// a second off the visitor's at most.
			from := v.arrival.Truncate(time.Second)
			assert.True(t, !v.bucket.Before(from.Add(-time.Second)) && !v.bucket.After(from.Add(time.Second)),
				"visitor %d (wave %d) kept the second of their first request, %s: %s", i, v.wave, v.arrival.Format("15:04:05.000"), v.bucket.Format("15:04:05"))
		}
	}
	assert.Positive(t, passed, "admitted visitors passed while the server was down")

	// A grant held when the server went away may be used until the next
	// sync fails, at its deadline (2 s) at the latest.
	closedFrom := r.stopped.Add(2*time.Second + 200*time.Millisecond)
	var after int
	for _, v := range r.admissions() {
		if v.acceptedAt.After(closedFrom) && v.acceptedAt.Before(r.restarted) {
			t.Errorf("a wave %d visitor was let in at t=%s, while the server was down", v.wave, v.acceptedAt.Sub(r.t0))
		}
		if v.acceptedAt.After(r.restarted) {
			after++
		}
	}
	assert.Positive(t, after, "the room admits again once the server is back")
}

// checkLimits reports how the limits fared, for the caller to assert: every
// session of the scenario is still alive at its end (sessions last a
// minute), so the admissions are the active visitors.
func (r *outageRun) checkLimits() (active int, perMinute map[time.Time]int, ok bool) {
	perMinute = map[time.Time]int{}
	ok = true
	for _, v := range r.admissions() {
		active++
		perMinute[v.acceptedAt.Truncate(time.Minute)]++
	}
	if active > r.plan.total {
		ok = false
	}
	for _, n := range perMinute {
		if n > r.plan.perMinute {
			ok = false
		}
	}
	return active, perMinute, ok
}

// TestRedisOutage stops the shared Redis in the middle of the traffic and
// starts it again on the same port a few seconds later.
func TestRedisOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: stops and restarts a redis-server, about 35 s")
	}

	// Redis comes back with its data (SHUTDOWN SAVE, then the dump is
	// loaded): a restart, or a failover to an up-to-date replica.
	//
	// Minute M: wave 1 (28 visitors) arrives at :50; 20 get in (New Users
	// Per Minute) and 8 wait. The server stops at :54. Minute M+1 starts
	// at t=10 during the outage; wave 2 (8 visitors) arrives then and
	// waits. The server is back at :01 of M+1: the room has room for 5
	// more (Total Active Users 25), and FIFO gives all 5 to wave 1, whose
	// bucket is older; nobody of wave 2 gets in.
	t.Run("restart with data", func(t *testing.T) {
		r := runOutage(t, outagePlan{
			total: 25, perMinute: 20, startSecond: 50,
			wave1: 28, wave2: 8, wave2At: 10500 * time.Millisecond,
			stopAt: 4 * time.Second, restartAt: 11 * time.Second, endAt: 17 * time.Second,
			keepData: true,
		})
		t.Log(r.describe())
		r.checkServed(t)
		active, perMinute, ok := r.checkLimits()
		assert.True(t, ok, "limits: %d admitted (Total Active Users %d), per minute %v (at most %d)", active, r.plan.total, perMinute, r.plan.perMinute)
		before := 0
		for _, v := range r.admissions() {
			if v.acceptedAt.Before(r.stopped) {
				before++
				continue
			}
			assert.Equal(t, 1, v.wave, "after the restart, FIFO lets in the older bucket (wave 1) first; a wave %d visitor got in at t=%s",
				v.wave, v.acceptedAt.Sub(r.t0))
		}
		free := r.plan.total - before
		assert.GreaterOrEqual(t, active-before, free-1, "after the restart the %d free slots are used", free)
	})

	// Redis is killed and comes back empty: the room's state is lost.
	//
	// Minute M from :38: wave 1 (10 visitors) gets in at once, the server
	// is killed at :41, wave 2 (15 visitors) arrives at :42 and waits. The
	// server is back, empty, at :47. The 10 admitted visitors still hold
	// their sessions and 10 of the minute's 20 slots are spent. Five of
	// them send no request after they are let in, so nothing but the
	// instances' memory (every session they saw, docs/design.md
	// "Syncing") brings their sessions into the rebuilt state. The README
	// promises that a wipe never lets a second full load in: the limits
	// hold exactly, so at most 10 more get in. A room that forgot the idle
	// five would let in all 15 of wave 2: 25 active, 25 admissions in
	// minute M.
	t.Run("comes back empty", func(t *testing.T) {
		r := runOutage(t, outagePlan{
			total: 20, perMinute: 20, startSecond: 38,
			wave1: 10, wave2: 15, wave2At: 4 * time.Second, idle: 5,
			stopAt: 3 * time.Second, restartAt: 9 * time.Second, endAt: 15 * time.Second,
		})
		t.Log(r.describe())
		r.checkServed(t)
		assert.Contains(t, r.logs.String(), "state was lost", "the instances notice the loss")
		active, perMinute, ok := r.checkLimits()
		assert.True(t, ok, "limits through the wipe: %d admitted (Total Active Users %d), per minute %v (at most %d)",
			active, r.plan.total, perMinute, r.plan.perMinute)
	})
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
)

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
		Name: s.name, Settings: waitingroom.Settings{TotalActiveUsers: o.total, NewUsersPerMinute: o.perMn, SessionDuration: o.session},
		RefreshInterval: o.refresh, Keys: [][]byte{key},
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

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

package main

import (
	"context"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

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

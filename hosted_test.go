package waitingroom

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/challenge"
)

// siteverify is a local server speaking a provider's documented siteverify
// format: a form POST of secret, response and remoteip (and sitekey for
// hCaptcha), answered with JSON holding success, challenge_ts, hostname
// and error-codes (and score for reCAPTCHA v3). Tokens are single use.
func siteverify(t *testing.T, p challenge.Provider, score float64) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	used := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		assert.Equal(t, http.MethodPost, r.Method)
		assert.Equal(t, "application/x-www-form-urlencoded", r.Header.Get("Content-Type"))
		require.NoError(t, r.ParseForm())
		assert.Equal(t, "192.0.2.1", r.PostForm.Get("remoteip"))
		if p == challenge.HCaptcha {
			assert.Equal(t, "site-key", r.PostForm.Get("sitekey"))
		}
		reply := map[string]any{"success": false, "error-codes": []string{}}
		tok := r.PostForm.Get("response")
		switch {
		case r.PostForm.Get("secret") != "s3cret":
			reply["error-codes"] = []string{"invalid-input-secret"}
		case tok == "" || !strings.HasPrefix(tok, "good"):
			reply["error-codes"] = []string{"invalid-input-response"}
		case used[tok]:
			reply["error-codes"] = []string{"timeout-or-duplicate"}
		default:
			used[tok] = true
			reply["success"] = true
			reply["challenge_ts"] = "2026-05-27T15:54:00Z"
			reply["hostname"] = "example.com"
			if p == challenge.ReCAPTCHA {
				reply["score"] = score
				reply["action"] = "queue"
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(reply)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestHostedChallenge(t *testing.T) {
	for _, tc := range []struct {
		provider challenge.Provider
		minScore float64
		score    float64
		class    string
	}{
		{challenge.Turnstile, 0, 0, "cf-turnstile"},
		{challenge.HCaptcha, 0, 0, "h-captcha"},
		{challenge.ReCAPTCHA, 0.5, 0.9, "g-recaptcha"},
	} {
		t.Run(string(tc.provider), func(t *testing.T) {
			srv, calls := siteverify(t, tc.provider, tc.score)
			tr := newTestRoom(t, func(c *Config) {
				c.RefreshInterval = 5 * time.Second
				c.SessionDuration, c.QueueHold = time.Minute, 10*time.Minute
				c.Challenge = &challenge.Policy{Kind: challenge.Hosted, OnFail: challenge.Infinite}
				c.ChallengeVerifier = &challenge.Verifier{Provider: tc.provider, SiteKey: "site-key", Secret: "s3cret",
					MinScore: tc.minScore, Hostname: "example.com", VerifyURL: srv.URL}
			})
			tr.fill(10)
			// The page holds the provider's widget in the {{{turnstile}}}
			// slot; the JSON names the provider and the site key.
			v := &visitor{}
			w := tr.get(v, "text/html")
			require.Equal(t, http.StatusOK, w.Code)
			assert.Contains(t, w.Body.String(), `class="`+tc.class+`" data-sitekey="site-key"`)
			assert.Empty(t, w.Header().Get("Refresh"), "the page reloads itself once answered")
			tr.clk.Add(6 * time.Second)
			p := readWaiting(t, tr.getWith(v, ""))
			assert.Equal(t, string(tc.provider), p.Challenge)

			tr.clk.Add(2 * time.Minute) // room for everyone, the place held
			tr.sync()
			for _, bad := range []string{"forged", strings.Repeat("good", 2000)} {
				tr.clk.Add(6 * time.Second)
				w = tr.getWith(v, bad)
				require.True(t, isWaiting(w), "parked: %s", bad[:6])
			}
			tr.clk.Add(6 * time.Second)
			assert.True(t, admitted(tr.getWith(v, "good-token")))
			assert.Equal(t, int64(2), calls.Load(), "the oversized token is never sent")

			// The token is single use: replayed, the provider refuses it.
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			assert.Error(t, tr.cfg.ChallengeVerifier.Verify(r, "good-token"), "replayed")
		})
	}
}

// Without a ChallengeVerifier, a hosted challenge is off: nobody is held.
func TestHostedChallengeWithoutVerifier(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.Challenge = &challenge.Policy{Kind: challenge.Hosted, Who: challenge.Everyone, OnFail: challenge.Infinite}
	})
	assert.True(t, admitted(tr.getWith(&visitor{}, "")))
	assert.Zero(t, tr.Stats().Counters.ChallengesIssued)
}

// hostedRoom is a full room with a hosted challenge (challenge.Turnstile, OnFail
// infinite) verified by the server at url, whose visitors refresh every
// 5 s exactly.
func hostedRoom(t *testing.T, url string, mutate func(*challenge.Verifier)) *testRoom {
	h := &challenge.Verifier{Provider: challenge.Turnstile, SiteKey: "site-key", Secret: "s3cret", VerifyURL: url}
	if mutate != nil {
		mutate(h)
	}
	tr := newTestRoom(t, func(c *Config) {
		c.RefreshInterval, c.RefreshJitter = 5*time.Second, -1
		c.SessionDuration, c.QueueHold = 30*time.Minute, 10*time.Minute
		c.Challenge = &challenge.Policy{Kind: challenge.Hosted, OnFail: challenge.Infinite}
		c.ChallengeVerifier = h
	})
	tr.fill(10)
	return tr
}

// The provider is asked at most once per chance of a place: 500 requests
// of one waiting cookie with a bad token, one after the other or all at
// once, make one siteverify call per chance the room gives the place,
// and the place fails once.
func TestHostedOncePerChance(t *testing.T) {
	for _, concurrent := range []bool{false, true} {
		t.Run(map[bool]string{false: "sequential", true: "concurrent"}[concurrent], func(t *testing.T) {
			srv, calls := siteverify(t, challenge.Turnstile, 0)
			tr := hostedRoom(t, srv.URL, nil)
			v := &visitor{}
			require.True(t, isWaiting(tr.getWith(v, "")))
			for chance := 1; chance <= 3; chance++ {
				tr.clk.Add(5 * time.Second)
				var waiting atomic.Int64
				send := func() {
					w := httptest.NewRecorder()
					r := v.request(http.MethodGet, jsonAccept)
					r.Header.Set(challenge.Header, "forged")
					tr.app.ServeHTTP(w, r)
					if isWaiting(w) {
						waiting.Add(1)
					}
				}
				if concurrent {
					var wg sync.WaitGroup
					for range 500 {
						wg.Go(send)
					}
					wg.Wait()
				} else {
					for range 500 {
						send()
					}
				}
				assert.Equal(t, int64(500), waiting.Load())
				assert.Equal(t, int64(chance), calls.Load(), "siteverify calls after %d chances", chance)
			}
			k := tr.Stats().Counters
			assert.Equal(t, uint64(1), k.ChallengesFailed, "once per place")
			assert.Equal(t, uint64(1), k.ChallengesParked)
		})
	}
}

// Random on several instances, a visitor the draw holds may come back
// before their chance is due: not one who has not passed the challenge,
// whose answers are looked at, and the provider asked, once per chance.
func TestHostedOncePerChanceDrawn(t *testing.T) {
	srv, calls := siteverify(t, challenge.Turnstile, 0)
	clk, st := newClock(), newMemStore()
	mutate := func(c *Config) {
		c.QueueingMethod = Random
		c.RefreshInterval, c.RefreshJitter = 5*time.Second, -1
		c.SessionDuration, c.QueueHold = 30*time.Minute, 10*time.Minute
		c.Challenge = &challenge.Policy{Kind: challenge.Hosted, OnFail: challenge.Infinite}
		c.ChallengeVerifier = &challenge.Verifier{Provider: challenge.Turnstile, SiteKey: "site-key", Secret: "s3cret", VerifyURL: srv.URL}
	}
	tr := newTestRoomOn(t, clk, st, mutate)
	other := newTestRoomOn(t, clk, st, mutate)
	tr.fill(10)
	tr.sync()
	other.sync()
	require.Greater(t, tr.syncer.Snapshot().Instances, 1)
	v := &visitor{}
	require.True(t, isWaiting(tr.getWith(v, "")))
	for chance := 1; chance <= 3; chance++ {
		clk.Add(5 * time.Second)
		for range 100 {
			require.True(t, isWaiting(tr.getWith(&visitor{cookie: v.cookie}, "forged")))
		}
		assert.Equal(t, int64(chance), calls.Load(), "siteverify calls after %d chances", chance)
	}
}

// The siteverify calls in flight are bounded per room: a request that
// finds MaxInFlight of them gets the waiting page without a chance and a
// short refresh, its challenge unchanged (deferred, not failed), and is
// verified when it comes back. A provider that gives no verdict (here a
// 429, and a timeout) fails the answer, counted apart.
func TestHostedInFlightBound(t *testing.T) {
	// A call whose token is "hang" times out (at once: the transport
	// says so).
	timeouts := roundTripper(func(r *http.Request) (*http.Response, error) {
		body, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		if strings.Contains(string(body), "response=hang") {
			return nil, context.DeadlineExceeded
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		return http.DefaultTransport.RoundTrip(r)
	})
	arrived, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		require.NoError(t, r.ParseForm())
		switch r.PostForm.Get("response") {
		case "slow":
			arrived <- struct{}{}
			<-release
		case "limited":
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = w.Write([]byte(`{"success":true}`))
	}))
	defer srv.Close()
	tr := hostedRoom(t, srv.URL, func(h *challenge.Verifier) {
		h.MaxInFlight, h.Timeout, h.Client = 2, time.Minute, &http.Client{Transport: timeouts}
	})
	vs := make([]*visitor, 5)
	for i := range vs {
		vs[i] = &visitor{}
		require.True(t, isWaiting(tr.getWith(vs[i], "")))
	}
	tr.clk.Add(time.Minute) // past the minute of the fill's admissions
	tr.setTotal(20)

	// Two calls hang at the provider; the three other places are deferred.
	var wg sync.WaitGroup
	slow := make([]*httptest.ResponseRecorder, 2)
	for i := range slow {
		wg.Go(func() { slow[i] = tr.getWith(vs[i], "slow") })
		select {
		case <-arrived:
		case <-time.After(time.Minute):
			t.Fatal("the call did not reach the provider")
		}
	}
	for _, v := range vs[2:] {
		w := tr.getWith(v, "good")
		require.True(t, isWaiting(w), "deferred")
		assert.Equal(t, "1", w.Header().Get("Refresh"), "back soon")
		assert.Equal(t, "turnstile", readWaiting(t, w).Challenge, "still the challenge")
	}
	close(release)
	wg.Wait()
	for _, w := range slow {
		assert.True(t, admitted(w))
	}
	k := tr.Stats().Counters
	assert.Equal(t, uint64(3), k.ChallengesDeferred)
	assert.Zero(t, k.ChallengesFailed, "deferred is not failed")
	assert.Equal(t, int64(2), calls.Load())

	// Back a second later, each is verified.
	tr.clk.Add(time.Second)
	for _, v := range vs[2:3] {
		assert.True(t, admitted(tr.getWith(v, "good")))
	}
	assert.Equal(t, int64(3), calls.Load())
	// No verdict (a rate limit's 429, a timeout): neither passed nor
	// failed; the provider is asked again at the next chance, and a
	// provider that answers then lets the visitor in (with OnFail
	// infinite, an outage of the provider parks nobody).
	for _, tc := range []struct {
		v     *visitor
		token string
	}{{vs[3], "limited"}, {vs[4], "hang"}} {
		w := tr.getWith(tc.v, tc.token)
		require.True(t, isWaiting(w), tc.token)
		assert.Equal(t, "1", w.Header().Get("Refresh"), "%s: back soon", tc.token)
		assert.Equal(t, "turnstile", readWaiting(t, w).Challenge, "%s: still the challenge", tc.token)
	}
	k = tr.Stats().Counters
	assert.Equal(t, uint64(2), k.ChallengesUnverified)
	assert.Zero(t, k.ChallengesFailed, "no verdict is no failure")
	assert.Equal(t, int64(4), calls.Load(), "the timeout never reached the server")
	tr.clk.Add(time.Second)
	assert.True(t, admitted(tr.getWith(vs[3], "good")), "asked again, and let in")
	assert.Equal(t, int64(5), calls.Load())
}

// roundTripper is an http.RoundTripper made of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

package waitingroom

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// siteverify is a local server speaking a provider's documented siteverify
// format: a form POST of secret, response and remoteip (and sitekey for
// hCaptcha), answered with JSON holding success, challenge_ts, hostname
// and error-codes (and score for reCAPTCHA v3). Tokens are single use.
func siteverify(t *testing.T, p HostedProvider, score float64) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	used := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		assert.Equal(t, http.MethodPost, r.Method)
		assert.Equal(t, "application/x-www-form-urlencoded", r.Header.Get("Content-Type"))
		require.NoError(t, r.ParseForm())
		assert.Equal(t, "192.0.2.1", r.PostForm.Get("remoteip"))
		if p == HCaptcha {
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
			if p == ReCAPTCHA {
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
		provider HostedProvider
		minScore float64
		score    float64
		class    string
	}{
		{Turnstile, 0, 0, "cf-turnstile"},
		{HCaptcha, 0, 0, "h-captcha"},
		{ReCAPTCHA, 0.5, 0.9, "g-recaptcha"},
	} {
		t.Run(string(tc.provider), func(t *testing.T) {
			srv, calls := siteverify(t, tc.provider, tc.score)
			tr := newTestRoom(t, func(c *Config) {
				c.RefreshInterval = 5 * time.Second
				c.SessionDuration, c.QueueHold = time.Minute, 10*time.Minute
				c.Challenge = &Challenge{Kind: ChallengeHosted, OnFail: ChallengeInfinite}
				c.HostedChallenge = &HostedChallenge{Provider: tc.provider, SiteKey: "site-key", Secret: "s3cret",
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
			assert.Error(t, tr.cfg.HostedChallenge.verify(r, "good-token"), "replayed")
		})
	}
}

// A provider that cannot be reached, or answers garbage, fails the
// challenge; never a 5xx.
func TestHostedChallengeUnreachable(t *testing.T) {
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<html>"))
	}))
	defer garbage.Close()
	for _, u := range []string{"http://127.0.0.1:1/siteverify", garbage.URL} {
		h := &HostedChallenge{Provider: Turnstile, SiteKey: "k", Secret: "s", VerifyURL: u, Timeout: time.Second}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		assert.Error(t, h.verify(r, "good"), u)
	}
}

func TestHostedChallengeValidate(t *testing.T) {
	for _, h := range []HostedChallenge{
		{Provider: "captcha", SiteKey: "k", Secret: "s"},
		{Provider: Turnstile, Secret: "s"},
		{Provider: Turnstile, SiteKey: "k"},
		{Provider: ReCAPTCHA, SiteKey: "k", Secret: "s", MinScore: 2},
	} {
		cfg := baseConfig(newClock())
		cfg.HostedChallenge = &h
		_, err := New(cfg, newMemStore())
		assert.ErrorIs(t, err, ErrInvalidConfig)
	}
}

// Without HostedChallenge, a hosted challenge is off: nobody is held.
func TestHostedChallengeWithoutVerifier(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.Challenge = &Challenge{Kind: ChallengeHosted, Who: ChallengeEveryone, OnFail: ChallengeInfinite}
	})
	assert.True(t, admitted(tr.getWith(&visitor{}, "")))
	assert.Zero(t, tr.Counters().ChallengesIssued)
}

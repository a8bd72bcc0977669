package challenge

import (
	"context"
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
func siteverify(t *testing.T, p Provider, score float64) (*httptest.Server, *atomic.Int64) {
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
		} else {
			assert.Empty(t, r.PostForm.Get("sitekey"))
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

// request is a visitor's request from 192.0.2.1 (httptest's address).
func request() *http.Request { return httptest.NewRequest(http.MethodGet, "/", nil) }

func TestVerifierVerify(t *testing.T) {
	for _, p := range []Provider{Turnstile, HCaptcha, ReCAPTCHA} {
		t.Run(string(p), func(t *testing.T) {
			for _, tc := range []struct {
				name  string
				v     func(v *Verifier)
				token string
				score float64
				want  error // nil, or ErrFailed
				calls int64
			}{
				{name: "valid", token: "good-1", score: 0.9, calls: 1},
				{name: "refused", token: "forged", want: ErrFailed, calls: 1},
				{name: "empty", token: "", want: ErrFailed, calls: 1},
				{name: "wrong secret", v: func(v *Verifier) { v.Secret = "other" }, token: "good-1", want: ErrFailed, calls: 1},
				{name: "oversized, never sent", token: strings.Repeat("good", 1025), want: ErrFailed},
				{name: "another hostname", v: func(v *Verifier) { v.Hostname = "example.org" }, token: "good-1", score: 0.9, want: ErrFailed, calls: 1},
				{name: "score too low, or none", v: func(v *Verifier) { v.MinScore = 0.5 }, token: "good-1", score: 0.4, want: ErrFailed, calls: 1},
			} {
				t.Run(tc.name, func(t *testing.T) {
					srv, calls := siteverify(t, p, tc.score)
					v := &Verifier{Provider: p, SiteKey: "site-key", Secret: "s3cret", Hostname: "example.com", VerifyURL: srv.URL}
					if tc.v != nil {
						tc.v(v)
					}
					require.NoError(t, v.Validate())
					err := v.Verify(request(), tc.token)
					if tc.want == nil {
						assert.NoError(t, err)
					} else {
						assert.ErrorIs(t, err, tc.want)
					}
					assert.Equal(t, tc.calls, calls.Load())
				})
			}
		})
	}
}

// A token is single use at the provider: replayed, it is refused.
func TestVerifierReplay(t *testing.T) {
	srv, _ := siteverify(t, Turnstile, 0)
	v := &Verifier{Provider: Turnstile, SiteKey: "site-key", Secret: "s3cret", VerifyURL: srv.URL}
	require.NoError(t, v.Verify(request(), "good-token"))
	assert.ErrorIs(t, v.Verify(request(), "good-token"), ErrFailed, "replayed")
}

// A provider that cannot be reached, answers another status or garbage,
// or not within Timeout gives no verdict: an error that is not ErrFailed.
func TestVerifierNoVerdict(t *testing.T) {
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<html>"))
	}))
	defer garbage.Close()
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"success":false}`))
	}))
	defer limited.Close()
	// A transport that gives up as a deadline would, at once.
	hangs := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		return nil, context.DeadlineExceeded
	})}
	for _, tc := range []struct {
		name string
		v    Verifier
	}{
		{"unreachable", Verifier{VerifyURL: "http://127.0.0.1:1/siteverify", Timeout: time.Second}},
		{"garbage", Verifier{VerifyURL: garbage.URL}},
		{"rate limited", Verifier{VerifyURL: limited.URL}},
		{"timeout", Verifier{VerifyURL: "http://siteverify.invalid/", Client: hangs}},
		{"bad URL", Verifier{VerifyURL: "://"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.v
			v.Provider, v.SiteKey, v.Secret = Turnstile, "k", "s"
			err := v.Verify(request(), "good")
			require.Error(t, err)
			assert.NotErrorIs(t, err, ErrFailed)
		})
	}
}

func TestVerifierValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		v     *Verifier
		field string // named by the error; "" when valid
	}{
		{"nil", nil, ""},
		{"turnstile", &Verifier{Provider: Turnstile, SiteKey: "k", Secret: "s"}, ""},
		{"recaptcha v3", &Verifier{Provider: ReCAPTCHA, SiteKey: "k", Secret: "s", MinScore: 0.5, Timeout: time.Second, MaxInFlight: 8}, ""},
		{"provider", &Verifier{Provider: "captcha", SiteKey: "k", Secret: "s"}, "challenge.Verifier.Provider"},
		{"no site key", &Verifier{Provider: Turnstile, Secret: "s"}, "SiteKey"},
		{"no secret", &Verifier{Provider: Turnstile, SiteKey: "k"}, "Secret"},
		{"score", &Verifier{Provider: ReCAPTCHA, SiteKey: "k", Secret: "s", MinScore: 2}, "challenge.Verifier.MinScore"},
		{"timeout", &Verifier{Provider: HCaptcha, SiteKey: "k", Secret: "s", Timeout: -1}, "challenge.Verifier.Timeout"},
		{"in flight", &Verifier{Provider: HCaptcha, SiteKey: "k", Secret: "s", MaxInFlight: -1}, "challenge.Verifier.MaxInFlight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.v.Validate()
			if tc.field == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tc.field)
		})
	}
}

// The widget is the provider's script and element, the site key escaped.
func TestVerifierWidget(t *testing.T) {
	for _, tc := range []struct {
		p              Provider
		script, class  string
		siteKey, attrs string
	}{
		{Turnstile, "https://challenges.cloudflare.com/turnstile/v0/api.js", "cf-turnstile", "site-key", `data-sitekey="site-key"`},
		{HCaptcha, "https://js.hcaptcha.com/1/api.js", "h-captcha", `"><script>`, `data-sitekey="&#34;&gt;&lt;script&gt;"`},
		{ReCAPTCHA, "https://www.google.com/recaptcha/api.js", "g-recaptcha", `a&b'`, `data-sitekey="a&amp;b&#39;"`},
	} {
		t.Run(string(tc.p), func(t *testing.T) {
			w := (&Verifier{Provider: tc.p, SiteKey: tc.siteKey, Secret: "s"}).Widget()
			assert.Equal(t, `<script src="`+tc.script+`" async defer></script><div class="`+tc.class+`" `+tc.attrs+
				` data-callback="wrChallengeDone"></div>`, w)
		})
	}
}

// roundTripper is an http.RoundTripper made of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

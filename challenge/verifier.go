package challenge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Provider is a hosted challenge service.
type Provider string

// Hosted challenge services, each verified through its documented
// siteverify API.
const (
	// Turnstile is Cloudflare Turnstile
	// (https://challenges.cloudflare.com/turnstile/v0/siteverify).
	Turnstile Provider = "turnstile"
	// HCaptcha is hCaptcha (https://api.hcaptcha.com/siteverify).
	HCaptcha Provider = "hcaptcha"
	// ReCAPTCHA is Google reCAPTCHA v2 or v3
	// (https://www.google.com/recaptcha/api/siteverify).
	ReCAPTCHA Provider = "recaptcha"
)

// providers are the siteverify URLs and widget markup of each provider.
var providers = map[Provider]struct {
	url, script, class string
}{
	Turnstile: {"https://challenges.cloudflare.com/turnstile/v0/siteverify", "https://challenges.cloudflare.com/turnstile/v0/api.js", "cf-turnstile"},
	HCaptcha:  {"https://api.hcaptcha.com/siteverify", "https://js.hcaptcha.com/1/api.js", "h-captcha"},
	ReCAPTCHA: {"https://www.google.com/recaptcha/api/siteverify", "https://www.google.com/recaptcha/api.js", "g-recaptcha"},
}

// DefaultMaxInFlight is Verifier.MaxInFlight's default.
const DefaultMaxInFlight = 64

const (
	// defaultTimeout is Verifier.Timeout's default.
	defaultTimeout = 5 * time.Second
	// maxTokenLen bounds the tokens Verify sends; a longer one fails
	// unsent.
	maxTokenLen = 4096
)

// Verifier verifies the tokens of a hosted challenge widget with its
// provider's siteverify API: a form POST of the secret, the token and the
// visitor's address, answered by JSON whose "success" says whether the
// token is valid. A waiting room with one (waitingroom.Config.
// ChallengeVerifier) asks at most once per chance of a place in the queue
// (a request whose chance is not due gets the page without a call), with
// at most MaxInFlight calls at once, each no longer than Timeout: an
// answer on which a provider that cannot be reached gives no verdict is
// neither passed nor failed, and asked about again at the visitor's next
// chance (waitingroom.Counters.ChallengesUnverified). Safe for concurrent
// use; do not change it once in use (a room copies it in
// waitingroom.New).
type Verifier struct {
	// Provider is Turnstile, HCaptcha or ReCAPTCHA. Required.
	Provider Provider
	// SiteKey is the widget's public key, rendered into the page.
	// Required.
	SiteKey string
	// Secret is the secret key sent to siteverify. Required. A room
	// keeps it in its Config, never in the shared state.
	Secret string
	// MinScore is the least score a reCAPTCHA v3 answer must have, in
	// [0, 1]. Default 0: any score (v2 answers have none).
	MinScore float64
	// Hostname, when set, must be the hostname the provider says the
	// widget was solved on. Default "": any.
	Hostname string
	// VerifyURL replaces the provider's siteverify URL (tests, a proxy).
	// Default the provider's.
	VerifyURL string
	// Client sends the siteverify requests. Default http.DefaultClient;
	// Timeout bounds each request through its context either way.
	Client *http.Client
	// Timeout bounds a verification. Default 5 seconds.
	Timeout time.Duration
	// MaxInFlight bounds the siteverify calls in flight at once on each
	// waiting room (each instance has its own). A request whose answer
	// finds that many in flight gets the waiting page without a chance
	// and comes back in a quarter of the refresh interval (at least a
	// second), its challenge neither passed nor failed
	// (waitingroom.Counters.ChallengesDeferred). Default
	// DefaultMaxInFlight (64).
	MaxInFlight int
}

// Validate reports whether v is a verifier a room accepts: nil, or an
// error wrapping ErrInvalid that names the field at fault. A nil v is no
// verifier, and valid.
func (v *Verifier) Validate() error {
	if v == nil {
		return nil
	}
	if _, ok := providers[v.Provider]; !ok {
		return invalid("challenge.Verifier.Provider %q is not turnstile, hcaptcha or recaptcha", v.Provider)
	}
	switch {
	case v.SiteKey == "" || v.Secret == "":
		return invalid("challenge.Verifier needs SiteKey and Secret")
	case v.MinScore < 0 || v.MinScore > 1:
		return invalid("challenge.Verifier.MinScore must be in [0, 1], got %v", v.MinScore)
	case v.Timeout < 0:
		return invalid("challenge.Verifier.Timeout must be ≥ 0, got %v", v.Timeout)
	case v.MaxInFlight < 0:
		return invalid("challenge.Verifier.MaxInFlight must be ≥ 0, got %d", v.MaxInFlight)
	}
	return nil
}

// siteverifyReply is the JSON every provider answers with (the fields
// read here; each provider adds its own).
type siteverifyReply struct {
	Success    bool     `json:"success"`
	Hostname   string   `json:"hostname"`
	Score      *float64 `json:"score"`
	ErrorCodes []string `json:"error-codes"`
}

// errNoVerdict: the provider answered with something else than a verdict.
var errNoVerdict = errors.New("challenge: no verdict from the hosted challenge's provider")

// Verify asks the provider whether token, sent with request r, is valid
// for r's client (the IP of r.RemoteAddr goes as remoteip; r's context,
// and Timeout, bound the call). It returns nil when the provider says so
// (and the Hostname and MinScore hold); an error wrapping ErrFailed when
// it says no, or the token is over 4,096 bytes (never sent); any other
// error when there is no verdict: the provider could not be reached, did
// not answer in time, answered a status other than 200 (a rate limit, an
// outage) or something other than its JSON. v must be valid (Validate).
func (v *Verifier) Verify(r *http.Request, token string) error {
	if len(token) > maxTokenLen {
		return ErrFailed
	}
	u := v.VerifyURL
	if u == "" {
		u = providers[v.Provider].url
	}
	timeout := v.Timeout
	if timeout == 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	form := url.Values{"secret": {v.Secret}, "response": {token}}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		form.Set("remoteip", ip)
	}
	if v.Provider == HCaptcha {
		form.Set("sitekey", v.SiteKey)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	client := v.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errNoVerdict // a rate limit, an outage
	}
	var rep siteverifyReply
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&rep); err != nil {
		return errNoVerdict
	}
	switch {
	case !rep.Success:
		return ErrFailed
	case v.Hostname != "" && rep.Hostname != v.Hostname:
		return ErrFailed
	case v.MinScore > 0 && (rep.Score == nil || *rep.Score < v.MinScore):
		return ErrFailed
	}
	return nil
}

// Widget returns the HTML markup of v's widget: the provider's script and
// the element it turns into the challenge, with SiteKey, whose callback,
// wrChallengeDone, sends the token (the waiting page's script,
// template.ChallengeScript, defines it). v must be valid (Validate).
func (v *Verifier) Widget() string {
	p := providers[v.Provider]
	return `<script src="` + p.script + `" async defer></script><div class="` + p.class + `" data-sitekey="` +
		htmlEscaper.Replace(v.SiteKey) + `" data-callback="wrChallengeDone"></div>`
}

var htmlEscaper = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;", `"`, "&#34;", `'`, "&#39;")

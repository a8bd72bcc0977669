package waitingroom

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

// HostedProvider is a hosted challenge service.
type HostedProvider string

// Hosted challenge services, each verified through its documented
// siteverify API.
const (
	// Turnstile is Cloudflare Turnstile
	// (https://challenges.cloudflare.com/turnstile/v0/siteverify).
	Turnstile HostedProvider = "turnstile"
	// HCaptcha is hCaptcha (https://api.hcaptcha.com/siteverify).
	HCaptcha HostedProvider = "hcaptcha"
	// ReCAPTCHA is Google reCAPTCHA v2 or v3
	// (https://www.google.com/recaptcha/api/siteverify).
	ReCAPTCHA HostedProvider = "recaptcha"
)

// siteverify URLs and widget markup of each provider.
var hostedProviders = map[HostedProvider]struct {
	url, script, class string
}{
	Turnstile: {"https://challenges.cloudflare.com/turnstile/v0/siteverify", "https://challenges.cloudflare.com/turnstile/v0/api.js", "cf-turnstile"},
	HCaptcha:  {"https://api.hcaptcha.com/siteverify", "https://js.hcaptcha.com/1/api.js", "h-captcha"},
	ReCAPTCHA: {"https://www.google.com/recaptcha/api/siteverify", "https://www.google.com/recaptcha/api.js", "g-recaptcha"},
}

// HostedChallenge verifies the tokens of a hosted challenge widget with its
// provider's siteverify API: a form POST of the secret, the token and the
// visitor's address, answered by JSON whose "success" says whether the
// token is valid. The room asks at most once per chance of a place in the
// queue (a request whose chance is not due gets the page without a call),
// with at most MaxInFlight calls at once, each no longer than Timeout: an
// answer on which a provider that cannot be reached gives no verdict is
// neither passed nor failed, and asked about again at the visitor's next
// chance (Counters.ChallengesUnverified). Safe for
// concurrent use; do not change it after New.
type HostedChallenge struct {
	// Provider is Turnstile, HCaptcha or ReCAPTCHA. Required.
	Provider HostedProvider
	// SiteKey is the widget's public key, rendered into the page.
	// Required.
	SiteKey string
	// Secret is the secret key sent to siteverify. Required.
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
	// Room (each instance has its own). A request whose answer finds that
	// many in flight gets the waiting
	// page without a chance and comes back in a quarter of the refresh
	// interval (at least a second), its challenge neither passed nor
	// failed (Counters.ChallengesDeferred). Default 64.
	MaxInFlight int
}

// defaultHostedInFlight is HostedChallenge.MaxInFlight's default.
const defaultHostedInFlight = 64

func (h *HostedChallenge) maxInFlight() int {
	if h.MaxInFlight == 0 {
		return defaultHostedInFlight
	}
	return h.MaxInFlight
}

// validate checks h.
func (h *HostedChallenge) validate() error {
	if h == nil {
		return nil
	}
	if _, ok := hostedProviders[h.Provider]; !ok {
		return invalid("HostedChallenge.Provider %q is not turnstile, hcaptcha or recaptcha", h.Provider)
	}
	switch {
	case h.SiteKey == "" || h.Secret == "":
		return invalid("HostedChallenge needs SiteKey and Secret")
	case h.MinScore < 0 || h.MinScore > 1:
		return invalid("HostedChallenge.MinScore must be in [0, 1], got %v", h.MinScore)
	case h.Timeout < 0:
		return invalid("HostedChallenge.Timeout must be ≥ 0, got %v", h.Timeout)
	case h.MaxInFlight < 0:
		return invalid("HostedChallenge.MaxInFlight must be ≥ 0, got %d", h.MaxInFlight)
	}
	return nil
}

// siteverifyReply is the JSON every provider answers with (the fields the
// room reads; each provider adds its own).
type siteverifyReply struct {
	Success    bool     `json:"success"`
	Hostname   string   `json:"hostname"`
	Score      *float64 `json:"score"`
	ErrorCodes []string `json:"error-codes"`
}

var (
	// errHosted: the provider refused the token (or it was never sent:
	// oversized).
	errHosted = errors.New("waitingroom: hosted challenge not passed")
	// errNoVerdict: the provider answered with something else than a
	// verdict.
	errNoVerdict = errors.New("waitingroom: no verdict from the hosted challenge's provider")
)

// verify asks the provider whether token is valid for r's client: nil,
// errHosted when it says no, another error when it gives no verdict.
func (h *HostedChallenge) verify(r *http.Request, token string) error {
	if len(token) > 4096 {
		return errHosted
	}
	u := h.VerifyURL
	if u == "" {
		u = hostedProviders[h.Provider].url
	}
	timeout := h.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	form := url.Values{"secret": {h.Secret}, "response": {token}}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		form.Set("remoteip", ip)
	}
	if h.Provider == HCaptcha {
		form.Set("sitekey", h.SiteKey)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	client := h.Client
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
		return errHosted
	case h.Hostname != "" && rep.Hostname != h.Hostname:
		return errHosted
	case h.MinScore > 0 && (rep.Score == nil || *rep.Score < h.MinScore):
		return errHosted
	}
	return nil
}

// widget is the markup of h's widget: the provider's script and the
// element it turns into the challenge, whose callback (the default page's
// wrChallengeDone) sends the token.
func (h *HostedChallenge) widget() string {
	p := hostedProviders[h.Provider]
	return `<script src="` + p.script + `" async defer></script><div class="` + p.class + `" data-sitekey="` +
		htmlEscape(h.SiteKey) + `" data-callback="wrChallengeDone"></div>`
}

var htmlEscaper = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;", `"`, "&#34;", `'`, "&#39;")

func htmlEscape(s string) string { return htmlEscaper.Replace(s) }

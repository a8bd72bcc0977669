package waitingroom

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"time"

	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/template"
)

// ErrInvalidConfig is wrapped by every error New returns for a Config that
// cannot work, by Room.Update and Settings.Validate for invalid Settings,
// and by the admin package for an unusable authenticator or token.
var ErrInvalidConfig = errors.New("invalid config")

// CookieOptions are the attributes of the visitor cookie. The zero value
// suits a site served over plain HTTP.
type CookieOptions struct {
	// Name is the cookie's name prefix; "_" + Config.Name is appended so
	// rooms never collide. Default "__waitingroom".
	Name string
	// Domain is the cookie's Domain attribute. Default none (the host that set it).
	Domain string
	// Path is the cookie's Path attribute. Default "/".
	Path string
	// Secure states that the site is served over HTTPS (directly or
	// behind a TLS-terminating proxy): the cookie is Secure, and SameSite
	// defaults to None. The room never guesses it from the request.
	// Browsers drop a Secure cookie on plain-HTTP requests, so visitors
	// on HTTP would lose their place. Default false.
	Secure bool
	// SameSite is the cookie's SameSite attribute: Lax, Strict or None.
	// Default 0: None when Secure (so the waiting room works inside an
	// iframe on another site), else Lax. None requires Secure; New
	// refuses it otherwise.
	SameSite http.SameSite
}

// StoreErrorPolicy decides what visitors get while the store cannot be
// reached.
type StoreErrorPolicy int

const (
	// FailClosed (the default) keeps serving admitted visitors on their
	// cookies and queues everyone else; nobody is let in beyond the grant
	// the instance held when the store went away. Queued visitors keep
	// their place, which lives in their cookie. An instance of several
	// cut off alone serves an admitted visitor a session after their
	// latest request the others know of, when they give the slot away.
	FailClosed StoreErrorPolicy = iota
	// FailOpen lets every visitor through, uncounted, while the store is
	// unreachable: the application is unprotected during the outage.
	FailOpen
)

// Defaults and bounds of Config fields.
const (
	defaultSessionDuration = 5 * time.Minute
	minSessionDuration     = time.Minute
	maxSessionDuration     = 30 * time.Minute
	defaultRefreshInterval = 20 * time.Second
	minRefreshInterval     = time.Second
	maxRefreshInterval     = 5 * time.Minute
	defaultRefreshJitter   = 0.1
	defaultQueueHold       = 5 * time.Minute
	defaultSyncInterval    = time.Second
	defaultCookieName      = "__waitingroom"
	defaultJSONKey         = "waitingRoom"
	defaultLanguage        = "en"
)

// maxLimit is the largest value either limit, TotalActiveUsers or
// NewUsersPerMinute, may take: in a Config, in Settings and in an Event.
// 2³¹ − 1 leaves the room's arithmetic on visitor counts far from
// overflowing.
const maxLimit = 1<<31 - 1

// Config configures a Room. The zero value of every optional field means
// its documented default. New copies the Config; changing it afterwards has
// no effect.
type Config struct {
	// Name identifies the room: in the store, in the cookie name and in
	// logs. Required; letters, digits, '-' and '_', at most 64.
	Name string

	// Settings are the room's first live settings: the limits, the
	// queueing method, the events, the page's template and status, the
	// challenge... (TotalActiveUsers and NewUsersPerMinute are required).
	// Room.Update changes them while the room runs. An instance started
	// with other Settings than the running ones (a deploy) makes its own
	// the live ones at its first sync; the instances already running
	// follow them, and Update's changes stay until the next such deploy.
	Settings

	// RefreshInterval is how often a waiting visitor gets a chance to be
	// let in; the page refreshes itself after it. Default 20 seconds; 1
	// second to 5 minutes.
	RefreshInterval time.Duration
	// RefreshJitter varies each visitor's interval at random by up to this
	// fraction either way, so check-ins spread out and nobody can time the
	// release of slots. The interval drawn is rounded, up or down at
	// random, to whole seconds (at least one), what the Refresh header can
	// say, so a browser that obeys it comes back the moment it is
	// eligible. Default 0.1 (±10 %); at most 0.5; negative means no jitter.
	RefreshJitter float64
	// QueueHold is how long a waiting visitor keeps their place after their
	// latest refresh; someone who comes back within it is still in their
	// original arrival minute. A visitor who stops refreshing stops
	// counting as waiting (and reserving a slot) after about two refresh
	// intervals, whatever QueueHold is. Default 5 minutes; at least
	// 2 × RefreshInterval.
	QueueHold time.Duration

	// Cookie are the visitor cookie's name and attributes. Default: see
	// CookieOptions.
	Cookie CookieOptions

	// Keys encrypt and authenticate the visitor cookie. The first key
	// encrypts; every key decrypts, so keys rotate by adding a new key in
	// front and later dropping the old one. Every instance of a room needs
	// the same keys. Required; each at least 32 bytes of secret random data.
	Keys [][]byte

	// ChallengeVerifier verifies the tokens of a hosted challenge
	// (Challenge.Kind challenge.Hosted): Turnstile, hCaptcha or
	// reCAPTCHA. Its secret stays in the Config, never in the shared
	// state. New copies it; its MaxInFlight bounds the calls in flight on
	// this Room. Default nil: a hosted challenge (set here or live) is
	// then off.
	ChallengeVerifier *challenge.Verifier
	// Page says the waiting page's language, when and how it is JSON, and
	// where it links to the lottery's records. Default: template.Options.
	Page template.Options

	// Bypass lists rules for requests that skip the room: neither queued
	// nor counted. The first rule that matches wins. Default none. See
	// Rule for the kinds of rules.
	Bypass []Rule
	// TrustedProxies are the networks of the proxies in front of the
	// application whose X-Forwarded-For may be believed when working out a
	// client's address for ClientNetworks rules. Default none: the
	// connection's remote address is the client, and X-Forwarded-For is
	// ignored.
	TrustedProxies []netip.Prefix

	// SyncInterval is how often the room syncs with the store in the
	// background; a revoke makes the instance sync at once, no sooner
	// than a tenth of SyncInterval after its previous sync began, so
	// that the other instances refuse the revoked cookie from their next
	// sync. Default 1 second; a negative value disables the background
	// loop (call Room.Sync yourself, as tests and the simulator do).
	SyncInterval time.Duration

	// OnStoreError is the policy while the store cannot be reached. Default FailClosed.
	OnStoreError StoreErrorPolicy

	// Now is the room's clock. Default time.Now.
	Now func() time.Time
	// Random returns numbers in [0, 1) for the refresh jitter. Default
	// math/rand/v2's Float64. It must be safe for concurrent use, unless
	// the room is used from one goroutine (as by a simulator, which passes
	// a seeded source to be deterministic).
	Random func() float64
	// Identities draws new visitors' identities: random 64-bit values,
	// unique across every instance of the room (zero, and the top 2³²
	// values, are drawn again). Random admission on several
	// instances draws by identity, so a simulator passes seeded sources,
	// one for each instance, to be deterministic; anything else should
	// leave it nil. When set, it also draws the lottery's seeds, from the
	// sync (docs/lottery.md); when nil, those come from crypto/rand.
	// Default math/rand/v2's Uint64. The same concurrency rule as Random's.
	Identities func() uint64
	// Logger receives the room's logs: state changes and store outages,
	// never one line per request. Default slog.Default().
	Logger *slog.Logger
	// ErrorHandler writes the response to a request Handler gets once the
	// room is closed (err is ErrClosed).
	// Default: 503 with a plain body and no internals.
	ErrorHandler func(w http.ResponseWriter, r *http.Request, err error)

	// newID, if set, draws the instance's ID in place of randomID (tests
	// that need instances in a known order).
	newID func() string
	// fleetMin is the fewest live instances that sync through an
	// aggregator; 0 is the default, share.FleetMin (tests compare a fleet with
	// as many instances syncing on their own).
	fleetMin int
	// seeds draws the lottery's seeds from Identities when it was set:
	// nil, crypto/rand's (lottery.NewSeed).
	seeds func() lottery.Seed
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("waitingroom: %w: "+format, append([]any{ErrInvalidConfig}, a...)...)
}

// invalidChallenge is the error of a challenge.Policy or
// challenge.Verifier that err (from their Validate, wrapping
// challenge.ErrInvalid and naming the field) says is invalid: it wraps
// ErrInvalidConfig too.
func invalidChallenge(err error) error {
	return fmt.Errorf("waitingroom: %w: %w", ErrInvalidConfig, err)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// cookieNameRE is RFC 6265's token, restricted to what browsers accept.
var cookieNameRE = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,200}$")

// normalize validates c and fills in defaults, in steps, on a copy.
func (c Config) normalize() (Config, error) {
	if !nameRE.MatchString(c.Name) {
		return c, invalid("Name %q must be 1 to 64 letters, digits, '-' or '_'", c.Name)
	}
	for _, step := range []func() error{c.normalizeSettings, c.normalizeTiming, c.normalizeCookie, c.normalizePage, c.normalizeRequests} {
		if err := step(); err != nil {
			return c, err
		}
	}
	c.fillHooks()
	return c, nil
}

// normalizeSettings validates the first live settings, and the hosted
// challenge's verifier, and fills in their defaults.
func (c *Config) normalizeSettings() error {
	if c.QueueingMethod == "" {
		c.QueueingMethod = FIFO
	}
	c.Events = cloneEvents(c.Events) // the caller's slice and pointers stay theirs
	c.Challenge = cloneChallenge(c.Challenge)
	if err := c.Settings.Validate(); err != nil {
		return err
	}
	if err := c.ChallengeVerifier.Validate(); err != nil {
		return invalidChallenge(err)
	}
	if c.ChallengeVerifier != nil {
		h := *c.ChallengeVerifier
		h.MaxInFlight = cmp.Or(h.MaxInFlight, challenge.DefaultMaxInFlight)
		c.ChallengeVerifier = &h
	}
	c.SessionDuration = cmp.Or(c.SessionDuration, defaultSessionDuration)
	c.QueueingStatusCode = cmp.Or(c.QueueingStatusCode, http.StatusOK)
	return nil
}

// normalizeTiming validates the refresh, the hold and the sync, and fills
// in their defaults.
func (c *Config) normalizeTiming() error {
	c.RefreshInterval = cmp.Or(c.RefreshInterval, defaultRefreshInterval)
	if c.RefreshInterval < minRefreshInterval || c.RefreshInterval > maxRefreshInterval {
		return invalid("RefreshInterval must be between %v and %v, got %v", minRefreshInterval, maxRefreshInterval, c.RefreshInterval)
	}
	switch {
	case c.RefreshJitter == 0:
		c.RefreshJitter = defaultRefreshJitter
	case c.RefreshJitter < 0:
		c.RefreshJitter = 0
	case c.RefreshJitter > 0.5:
		return invalid("RefreshJitter must be at most 0.5, got %v", c.RefreshJitter)
	}
	c.QueueHold = cmp.Or(c.QueueHold, defaultQueueHold)
	if c.QueueHold < 2*c.RefreshInterval {
		return invalid("QueueHold (%v) must be at least twice RefreshInterval (%v)", c.QueueHold, c.RefreshInterval)
	}
	c.SyncInterval = cmp.Or(c.SyncInterval, defaultSyncInterval)
	return nil
}

// normalizeCookie validates the cookie's attributes and keys, fills in
// their defaults, and copies the keys.
func (c *Config) normalizeCookie() error {
	c.Cookie.Name = cmp.Or(c.Cookie.Name, defaultCookieName)
	if !cookieNameRE.MatchString(c.Cookie.Name) {
		return invalid("Cookie.Name %q is not a valid cookie name", c.Cookie.Name)
	}
	c.Cookie.Path = cmp.Or(c.Cookie.Path, "/")
	switch c.Cookie.SameSite {
	case 0:
		c.Cookie.SameSite = http.SameSiteLaxMode
		if c.Cookie.Secure {
			c.Cookie.SameSite = http.SameSiteNoneMode
		}
	case http.SameSiteLaxMode, http.SameSiteStrictMode:
	case http.SameSiteNoneMode:
		if !c.Cookie.Secure {
			return invalid("Cookie.SameSite None requires a Secure cookie (set Cookie.Secure)")
		}
	default:
		return invalid("Cookie.SameSite must be Lax, Strict, None or 0 (automatic), got %d", c.Cookie.SameSite)
	}
	if len(c.Keys) == 0 {
		return invalid("Keys is required: at least one key of %d or more random bytes", minKeyLen)
	}
	keys := make([][]byte, len(c.Keys))
	for i, k := range c.Keys {
		if len(k) < minKeyLen {
			return invalid("Keys[%d] is %d bytes; keys must be at least %d", i, len(k), minKeyLen)
		}
		keys[i] = slices.Clone(k)
	}
	c.Keys = keys
	return nil
}

// normalizePage validates the page's options and fills in their defaults.
func (c *Config) normalizePage() error {
	c.Page.JSONKey = cmp.Or(c.Page.JSONKey, defaultJSONKey)
	c.Page.Language = cmp.Or(c.Page.Language, defaultLanguage)
	if !template.Supported(c.Page.Language) {
		return invalid("Page.Language %q is not one of %v", c.Page.Language, template.Languages())
	}
	return nil
}

// normalizeRequests validates the bypass rules, the trusted proxies and
// the store error policy, and copies the first two.
func (c *Config) normalizeRequests() error {
	for i, r := range c.Bypass {
		if r.match == nil {
			return invalid("Bypass[%d] is the zero Rule; build rules with PathPrefix, Methods, Header, Cookie, ClientNetworks, Match or All", i)
		}
	}
	for i, p := range c.TrustedProxies {
		if !p.IsValid() {
			return invalid("TrustedProxies[%d] is not a valid network", i)
		}
	}
	c.Bypass = slices.Clone(c.Bypass)
	c.TrustedProxies = slices.Clone(c.TrustedProxies)
	if c.OnStoreError != FailClosed && c.OnStoreError != FailOpen {
		return invalid("unknown OnStoreError %d", c.OnStoreError)
	}
	return nil
}

// fillHooks fills in the default clock, sources, logger and error handler.
func (c *Config) fillHooks() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Random == nil {
		c.Random = mrand.Float64
	}
	if c.Identities == nil {
		c.Identities = mrand.Uint64
	} else {
		c.seeds = share.SeedsFrom(c.Identities)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ErrorHandler == nil {
		c.ErrorHandler = defaultErrorHandler
	}
	c.fleetMin = cmp.Or(c.fleetMin, share.FleetMin)
}

// settings are the live settings c starts with: its Settings, with the
// defaults New filled in left zero.
func (c *Config) settings() Settings {
	s := c.Settings
	s.Events = slices.Clone(s.Events)
	s.Challenge = cloneChallenge(s.Challenge)
	if s.SessionDuration == defaultSessionDuration {
		s.SessionDuration = 0
	}
	if s.QueueingStatusCode == http.StatusOK {
		s.QueueingStatusCode = 0
	}
	return s
}

func defaultErrorHandler(w http.ResponseWriter, _ *http.Request, _ error) {
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, http.StatusText(http.StatusServiceUnavailable), http.StatusServiceUnavailable)
}

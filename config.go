package waitingroom

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"time"

	"github.com/go-waitingroom/waitingroom/challenge"
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
	// Domain is the cookie's Domain attribute. Default none (the host
	// that set it).
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
	// their place, which lives in their cookie.
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
	// Room.Update changes them while the room runs.
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
	// eligible. Default 0.1 (±10 %); at most 0.5; negative means no
	// jitter.
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
	// the same keys. Required; each at least 32 bytes of secret random
	// data.
	Keys [][]byte

	// ChallengeVerifier verifies the tokens of a hosted challenge
	// (Challenge.Kind challenge.Hosted): Turnstile, hCaptcha or
	// reCAPTCHA. Its secret stays in the Config, never in the shared
	// state. New copies it; its MaxInFlight bounds the calls in flight on
	// this Room. Default nil: a hosted challenge (set here or live) is
	// then off.
	ChallengeVerifier *challenge.Verifier
	// Page says in which language the waiting page is written, and when
	// and how it is JSON. Default: see template.Options.
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

	// OnStoreError is the policy while the store cannot be reached.
	// Default FailClosed.
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
	// leave it nil. Default math/rand/v2's Uint64. The same concurrency
	// rule as Random's.
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
	// aggregator; 0 is the default, fleetMin (tests compare a fleet with
	// as many instances syncing on their own).
	fleetMin int
}

// Settings are the parts of the configuration that can change while the
// room runs (Room.Update): every one a visitor's experience depends on.
// Config embeds them. They live in the shared state, so every instance
// follows a change at its next sync. The zero value of each optional field
// means its default.
type Settings struct {
	// QueueingMethod is FIFO, Random, Passthrough or Reject. In a Config,
	// "" means FIFO (the default).
	QueueingMethod QueueingMethod `json:"queueingMethod"`
	// TotalActiveUsers is the most visitors admitted and active at once.
	// Required, > 0 and ≤ 2³¹ − 1 (about two billion visitors).
	TotalActiveUsers int `json:"totalActiveUsers"`
	// NewUsersPerMinute is the most visitors admitted in any minute.
	// Required, > 0 and ≤ TotalActiveUsers.
	NewUsersPerMinute int `json:"newUsersPerMinute"`
	// QueueAll queues every visitor without a session; admitted visitors
	// keep theirs. Default false.
	QueueAll bool `json:"queueAll"`
	// Suspended turns the room off: every request goes straight to the
	// application, with no cookie and no counting. Default false.
	Suspended bool `json:"suspended"`
	// Events are the scheduled events (pre-queue, shuffle, overrides),
	// sorted by start; no two may overlap. Default none.
	Events []Event `json:"events,omitempty"`

	// SessionDuration is how long an admitted visitor stays active after
	// their latest request, in nanoseconds in JSON. Default (0) 5
	// minutes; 1 to 30 minutes. A change applies to sessions under way:
	// shortened, a session whose latest request is further back than the
	// new duration is over.
	SessionDuration time.Duration `json:"sessionDuration,omitempty"`
	// DisableSessionRenewal caps a session at SessionDuration from
	// admission, however active the visitor is; then they queue again, at
	// the back. Default false (requests renew the session). A change caps
	// sessions under way too.
	DisableSessionRenewal bool `json:"disableSessionRenewal,omitempty"`
	// QueueingStatusCode is the status of waiting responses: 200 (the
	// default, 0), 202 or 429. With 429 a Retry-After header is added.
	QueueingStatusCode int `json:"queueingStatusCode,omitempty"`
	// Template is a custom Mustache template for the waiting page.
	// Default "": the embedded page of package template. A template that
	// does not parse is refused. It travels in the shared state, read
	// and written at every sync, so keep it small (inline a few
	// kilobytes, link larger assets from another host).
	Template string `json:"template,omitempty"`
	// Challenge is the challenge step (package challenge): who must pass
	// a challenge, what failing does, and the proof of work's difficulty.
	// Default nil: none. Overridable per Event.
	Challenge *challenge.Policy `json:"challenge,omitempty"`
}

// Validate reports whether Room.Update would accept s: nil, or an error
// wrapping ErrInvalidConfig that says what is wrong. It sorts s.Events by
// start, in place.
func (s *Settings) Validate() error { return s.validate() }

// validate checks s and sorts its events.
func (s *Settings) validate() error { return s.validateWith(parseTemplate) }

// validateWith checks s, with parse checking templates, and sorts its
// events.
func (s *Settings) validateWith(parse func(string) error) error {
	for _, e := range s.Events {
		switch {
		case e.TotalActiveUsers > maxLimit:
			return invalid("event %q: TotalActiveUsers must be at most %d, got %d", e.Name, maxLimit, e.TotalActiveUsers)
		case e.NewUsersPerMinute > maxLimit:
			return invalid("event %q: NewUsersPerMinute must be at most %d, got %d", e.Name, maxLimit, e.NewUsersPerMinute)
		}
	}
	if err := validateEvents(s.Events, parse); err != nil {
		return err
	}
	switch s.QueueingStatusCode {
	case 0, http.StatusOK, http.StatusAccepted, http.StatusTooManyRequests:
	default:
		return invalid("QueueingStatusCode must be 200, 202 or 429, got %d", s.QueueingStatusCode)
	}
	if d := s.SessionDuration; d != 0 && (d < minSessionDuration || d > maxSessionDuration) {
		return invalid("SessionDuration must be between %v and %v, got %v", minSessionDuration, maxSessionDuration, d)
	}
	if s.Template != "" {
		if err := parse(s.Template); err != nil {
			return fmt.Errorf("waitingroom: %w: Template: %w", ErrInvalidConfig, err)
		}
	}
	if err := s.Challenge.Validate(); err != nil {
		return invalidChallenge(err)
	}
	switch {
	case !s.QueueingMethod.valid():
		return invalid("QueueingMethod %q is not fifo, random, passthrough or reject", s.QueueingMethod)
	case s.TotalActiveUsers <= 0:
		return invalid("TotalActiveUsers must be > 0, got %d", s.TotalActiveUsers)
	case s.NewUsersPerMinute <= 0:
		return invalid("NewUsersPerMinute must be > 0, got %d", s.NewUsersPerMinute)
	case s.TotalActiveUsers > maxLimit:
		return invalid("TotalActiveUsers must be at most %d, got %d", maxLimit, s.TotalActiveUsers)
	case s.NewUsersPerMinute > maxLimit:
		return invalid("NewUsersPerMinute must be at most %d, got %d", maxLimit, s.NewUsersPerMinute)
	case s.NewUsersPerMinute > s.TotalActiveUsers:
		return invalid("NewUsersPerMinute (%d) must not exceed TotalActiveUsers (%d)", s.NewUsersPerMinute, s.TotalActiveUsers)
	}
	return nil
}

func (s *Settings) hash() uint64 {
	h := fnv.New64a()
	b, _ := json.Marshal(s)
	h.Write(b)
	return h.Sum64() | 1 // never 0, which means "never set"
}

// sessionDuration is the session's length in ms.
func (s *Settings) sessionDuration() int64 {
	if s.SessionDuration == 0 {
		return defaultSessionDuration.Milliseconds()
	}
	return s.SessionDuration.Milliseconds()
}

// queueingStatusCode is the status of waiting responses.
func (s *Settings) queueingStatusCode() int {
	if s.QueueingStatusCode == 0 {
		return http.StatusOK
	}
	return s.QueueingStatusCode
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

// normalize validates c and fills in defaults. It works on a copy.
func (c Config) normalize() (Config, error) {
	if !nameRE.MatchString(c.Name) {
		return c, invalid("Name %q must be 1 to 64 letters, digits, '-' or '_'", c.Name)
	}
	if c.QueueingMethod == "" {
		c.QueueingMethod = FIFO
	}
	c.Events = cloneEvents(c.Events) // the caller's slice and pointers stay theirs
	c.Challenge = cloneChallenge(c.Challenge)
	if err := c.Settings.validate(); err != nil {
		return c, err
	}
	if err := c.ChallengeVerifier.Validate(); err != nil {
		return c, invalidChallenge(err)
	}
	if c.ChallengeVerifier != nil {
		h := *c.ChallengeVerifier
		if h.MaxInFlight == 0 {
			h.MaxInFlight = challenge.DefaultMaxInFlight
		}
		c.ChallengeVerifier = &h
	}
	if c.SessionDuration == 0 {
		c.SessionDuration = defaultSessionDuration
	}
	if c.SessionDuration < minSessionDuration || c.SessionDuration > maxSessionDuration {
		return c, invalid("SessionDuration must be between %v and %v, got %v", minSessionDuration, maxSessionDuration, c.SessionDuration)
	}
	if c.RefreshInterval == 0 {
		c.RefreshInterval = defaultRefreshInterval
	}
	if c.RefreshInterval < minRefreshInterval || c.RefreshInterval > maxRefreshInterval {
		return c, invalid("RefreshInterval must be between %v and %v, got %v", minRefreshInterval, maxRefreshInterval, c.RefreshInterval)
	}
	switch {
	case c.RefreshJitter == 0:
		c.RefreshJitter = defaultRefreshJitter
	case c.RefreshJitter < 0:
		c.RefreshJitter = 0
	case c.RefreshJitter > 0.5:
		return c, invalid("RefreshJitter must be at most 0.5, got %v", c.RefreshJitter)
	}
	if c.QueueHold == 0 {
		c.QueueHold = defaultQueueHold
	}
	if c.QueueHold < 2*c.RefreshInterval {
		return c, invalid("QueueHold (%v) must be at least twice RefreshInterval (%v)", c.QueueHold, c.RefreshInterval)
	}
	if c.QueueingStatusCode == 0 {
		c.QueueingStatusCode = http.StatusOK
	}
	if c.Cookie.Name == "" {
		c.Cookie.Name = defaultCookieName
	}
	if !cookieNameRE.MatchString(c.Cookie.Name) {
		return c, invalid("Cookie.Name %q is not a valid cookie name", c.Cookie.Name)
	}
	if c.Cookie.Path == "" {
		c.Cookie.Path = "/"
	}
	switch c.Cookie.SameSite {
	case 0:
		c.Cookie.SameSite = http.SameSiteLaxMode
		if c.Cookie.Secure {
			c.Cookie.SameSite = http.SameSiteNoneMode
		}
	case http.SameSiteLaxMode, http.SameSiteStrictMode:
	case http.SameSiteNoneMode:
		if !c.Cookie.Secure {
			return c, invalid("Cookie.SameSite None requires a Secure cookie (set Cookie.Secure)")
		}
	default:
		return c, invalid("Cookie.SameSite must be Lax, Strict, None or 0 (automatic), got %d", c.Cookie.SameSite)
	}
	if len(c.Keys) == 0 {
		return c, invalid("Keys is required: at least one key of %d or more random bytes", minKeyLen)
	}
	for i, k := range c.Keys {
		if len(k) < minKeyLen {
			return c, invalid("Keys[%d] is %d bytes; keys must be at least %d", i, len(k), minKeyLen)
		}
	}
	keys := make([][]byte, len(c.Keys))
	for i, k := range c.Keys {
		keys[i] = slices.Clone(k)
	}
	c.Keys = keys
	if c.Page.JSONKey == "" {
		c.Page.JSONKey = defaultJSONKey
	}
	if c.Page.Language == "" {
		c.Page.Language = defaultLanguage
	}
	if !template.Supported(c.Page.Language) {
		return c, invalid("Page.Language %q is not one of %v", c.Page.Language, template.Languages())
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = defaultSyncInterval
	}
	for i, r := range c.Bypass {
		if r.match == nil {
			return c, invalid("Bypass[%d] is the zero Rule; build rules with PathPrefix, Methods, Header, Cookie, ClientNetworks, Match or All", i)
		}
	}
	for i, p := range c.TrustedProxies {
		if !p.IsValid() {
			return c, invalid("TrustedProxies[%d] is not a valid network", i)
		}
	}
	c.Bypass = slices.Clone(c.Bypass)
	c.TrustedProxies = slices.Clone(c.TrustedProxies)
	if c.OnStoreError != FailClosed && c.OnStoreError != FailOpen {
		return c, invalid("unknown OnStoreError %d", c.OnStoreError)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Random == nil {
		c.Random = mrand.Float64
	}
	if c.Identities == nil {
		c.Identities = mrand.Uint64
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.fleetMin == 0 {
		c.fleetMin = fleetMin
	}
	if c.ErrorHandler == nil {
		c.ErrorHandler = defaultErrorHandler
	}
	return c, nil
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

// cloneEvents returns a copy of events that shares no memory with it: the
// slice and each DisableSessionRenewal.
func cloneEvents(events []Event) []Event {
	events = slices.Clone(events)
	for i := range events {
		if p := events[i].DisableSessionRenewal; p != nil {
			v := *p
			events[i].DisableSessionRenewal = &v
		}
		events[i].Challenge = cloneChallenge(events[i].Challenge)
	}
	return events
}

// cloneChallenge returns a copy of c that shares no memory with it.
func cloneChallenge(c *challenge.Policy) *challenge.Policy {
	if c == nil {
		return nil
	}
	x := *c
	return &x
}

package challenge

import (
	"errors"
	"fmt"
	"math/bits"
	"time"
)

// Kind is what a visitor must pass to enter the queue (Policy.Kind).
type Kind string

// Challenge kinds.
const (
	// Off (the zero value): no challenge.
	Off Kind = ""
	// PoW is the built-in proof of work: the visitor's browser (or JSON
	// client) finds a number that makes a SHA-256 hash of the puzzle
	// start with Difficulty zero bits. No third party.
	PoW Kind = "pow"
	// Hosted is the challenge of a hosted service (Cloudflare Turnstile,
	// hCaptcha or reCAPTCHA), verified by the room's Verifier
	// (waitingroom.Config.ChallengeVerifier); off in a room without one.
	Hosted Kind = "hosted"
)

// Who is who must pass the challenge (Policy.Who).
type Who string

// Who must pass the challenge.
const (
	// Queued (the zero value): visitors who enter the queue, at their
	// first chance after the page that gave them the challenge. A visitor
	// let straight in is never challenged.
	Queued Who = ""
	// Everyone: every visitor, before admission. A new visitor gets the
	// waiting page with the challenge (and a refresh of one second) even
	// when there is room, and is let in at the first chance after passing
	// it.
	Everyone Who = "everyone"
)

// Action is what failing the challenge does (Policy.OnFail).
type Action string

// What failing the challenge does.
const (
	// Log (the zero value): the failure is counted
	// (waitingroom.Counters.ChallengesFailed) and the visitor queues as if
	// passed.
	Log Action = ""
	// Infinite: the visitor is parked in an infinite queue: the same
	// waiting page, refreshes and estimates as everyone's, but never a
	// chance, until they pass the challenge.
	Infinite Action = "infinite"
)

// Limits of Policy fields.
const (
	// DefaultDifficulty is Policy.Difficulty's default: 16 zero bits,
	// about 65,000 hashes (a few tens of milliseconds in a browser).
	DefaultDifficulty = 16
	// MaxDifficulty bounds Policy.Difficulty and Policy.MaxDifficulty,
	// and the difficulty of the puzzles Solve takes.
	MaxDifficulty = 32
	// DefaultTTL is Policy.TTL's default.
	DefaultTTL = 10 * time.Minute
)

// Header is the request header through which a JSON client sends its
// answer to the challenge (the page's puzzle solved with Solve, or a
// hosted widget's token). Browsers send it in the cookie named after the
// room's cookie with "_challenge" appended, which the waiting page's
// script (template.Data.ChallengeWidget) sets.
const Header = "Waiting-Room-Challenge"

// ErrInvalid is wrapped by every error that Policy.Validate and
// Verifier.Validate return. Their messages name the field at fault, as
// in "challenge.Policy.Difficulty must be between 1 and 32, got 40",
// without the text of ErrInvalid, so that a caller can wrap them in its
// own words (the waiting room wraps them with waitingroom.ErrInvalidConfig
// too).
var ErrInvalid = errors.New("challenge: invalid configuration")

// invalidError is an error of Validate: its message, wrapping ErrInvalid.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return ErrInvalid }

func invalid(format string, a ...any) error {
	return &invalidError{fmt.Sprintf(format, a...)}
}

// Policy configures the challenge step: who must pass it, what failing
// does, and how hard the built-in proof of work is. A visitor passes once
// per place in the queue: the room keeps the result in their cookie (which
// copies of the cookie share, as they share the place). A challenge not
// passed stays with the visitor: the new place that a lapsed, spent or
// revoked cookie brings is given it again before any chance, or parked at
// once if it was failed. The zero value, like a nil *Policy, is no
// challenge. The JSON form is that of the admin API's settings:
// {"kind":"pow","onFail":"infinite"}. A Policy is a plain value: read it
// from any goroutine, and do not change one a room holds.
type Policy struct {
	// Kind is Off (the default), PoW or Hosted.
	Kind Kind `json:"kind,omitempty"`
	// Who is Queued (the default) or Everyone.
	Who Who `json:"who,omitempty"`
	// OnFail is Log (the default) or Infinite. A visitor fails by
	// coming back without a valid answer after a page that gave them the
	// challenge: a client without JavaScript (the default page's refresh
	// without the worker's answer) fails too, and so is counted only
	// (Log) or parked (Infinite; the page says JavaScript is needed).
	OnFail Action `json:"onFail,omitempty"`
	// Difficulty is the proof of work's number of leading zero bits, each
	// one doubling the expected work. Default DefaultDifficulty; 1 to
	// MaxDifficulty. Raised, it applies at once to the puzzles already
	// given: an answer to an easier puzzle is neither a pass nor a
	// failure (Puzzles.Verify's ErrStale), and the visitor is given a
	// puzzle of the new difficulty.
	Difficulty int `json:"difficulty,omitempty"`
	// RiseEvery makes the work rise with the queue: one more bit each
	// time the number of visitors waiting doubles past RiseEvery (at
	// 2 × RiseEvery waiting, Difficulty + 1; at 4 ×, + 2; DifficultyAt).
	// Default 0: fixed. A rise leaves the puzzles given before it good:
	// any puzzle of at least Difficulty bits passes within its TTL.
	RiseEvery int `json:"riseEvery,omitempty"`
	// MaxDifficulty caps the risen difficulty. Default Difficulty + 4 (at
	// most the package's MaxDifficulty); Difficulty to the package's
	// MaxDifficulty.
	MaxDifficulty int `json:"maxDifficulty,omitempty"`
	// TTL is how long a puzzle may be answered after it was given.
	// Default DefaultTTL (10 minutes); 1 minute to 1 hour.
	TTL time.Duration `json:"ttl,omitempty"`
}

// Validate reports whether p is a policy a room accepts: nil, or an
// error wrapping ErrInvalid that names the field at fault. A nil p is no
// challenge, and valid.
func (p *Policy) Validate() error {
	if p == nil {
		return nil
	}
	switch p.Kind {
	case Off, PoW, Hosted:
	default:
		return invalid("challenge.Policy.Kind %q is not \"\", pow or hosted", p.Kind)
	}
	switch p.Who {
	case Queued, Everyone:
	default:
		return invalid("challenge.Policy.Who %q is not \"\" or everyone", p.Who)
	}
	switch p.OnFail {
	case Log, Infinite:
	default:
		return invalid("challenge.Policy.OnFail %q is not \"\" or infinite", p.OnFail)
	}
	switch {
	case p.Difficulty < 0 || p.Difficulty > MaxDifficulty:
		return invalid("challenge.Policy.Difficulty must be between 1 and %d, got %d", MaxDifficulty, p.Difficulty)
	case p.MaxDifficulty != 0 && (p.MaxDifficulty < p.difficulty() || p.MaxDifficulty > MaxDifficulty):
		return invalid("challenge.Policy.MaxDifficulty must be between Difficulty and %d, got %d", MaxDifficulty, p.MaxDifficulty)
	case p.RiseEvery < 0:
		return invalid("challenge.Policy.RiseEvery must be ≥ 0, got %d", p.RiseEvery)
	case p.TTL != 0 && (p.TTL < time.Minute || p.TTL > time.Hour):
		return invalid("challenge.Policy.TTL must be between 1m and 1h, got %v", p.TTL)
	}
	return nil
}

// difficulty is p's base difficulty, its default filled in.
func (p *Policy) difficulty() int {
	if p.Difficulty == 0 {
		return DefaultDifficulty
	}
	return p.Difficulty
}

// ttl is p's TTL, its default filled in.
func (p *Policy) ttl() time.Duration {
	if p.TTL == 0 {
		return DefaultTTL
	}
	return p.TTL
}

// DifficultyAt is the difficulty of the puzzles given while waiting
// visitors wait: Difficulty (default DefaultDifficulty), risen by a bit
// each time waiting doubles past RiseEvery, up to MaxDifficulty. p must
// be valid (Validate).
func (p *Policy) DifficultyAt(waiting int64) int {
	d := p.difficulty()
	if p.RiseEvery <= 0 || waiting < 2*int64(p.RiseEvery) {
		return d
	}
	top := p.MaxDifficulty
	if top == 0 {
		top = min(d+4, MaxDifficulty)
	}
	return min(d+bits.Len64(uint64(waiting/int64(p.RiseEvery)))-1, top)
}

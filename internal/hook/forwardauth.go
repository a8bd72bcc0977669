package hook

import (
	"log/slog"
	"net/http"
	"net/netip"
	"time"
)

// Front is what a handler in front of a room needs to know of it.
type Front struct {
	// CookieName is the name of the room's cookie.
	CookieName string
	// CookieAttrs is what follows "name=value" in the Set-Cookie header
	// of the room's cookie: "; Path=/; HttpOnly; SameSite=Lax" and the
	// like.
	CookieAttrs string
	// TrustedProxies are the room's Config.TrustedProxies.
	TrustedProxies []netip.Prefix
	// Logger is the room's.
	Logger *slog.Logger
}

var (
	// FrontOf returns what a handler in front of room needs to know of
	// it.
	FrontOf func(room any) Front

	// ExpectPasses tells room that a handler in front of it gives passes
	// that last up to d: from then on a revoke holds the visitor's slot
	// until every pass that any instance may still give them has
	// expired. The room keeps the longest d it was told. It returns an
	// error wrapping waitingroom.ErrInvalidConfig, and keeps nothing,
	// when such a hold could reach further ahead than the shared state
	// believes a sign of life.
	ExpectPasses func(room any, d time.Duration) error

	// GivePass records a pass that lasts up to d, given now to the
	// admitted visitor whose response w writes (the writer Room.Handler
	// passed on, or one that unwraps to it), as a sign
	// of life of their session until the pass expires. The pass ends at
	// the end of Unix second last: before d has passed from now (Unix
	// ms), before the end of a session that ends whatever the visitor
	// does, and before the end of a revoke's hold that the room knows of.
	// ok is false, and nothing is recorded, when no pass may be given:
	// w is no admitted visitor's, or an end is too close.
	GivePass func(w http.ResponseWriter, d time.Duration) (last, now int64, ok bool)

	// PageHandler is room.Handler(next) for the page that follows an
	// answer that did not let the request through (nginx's error_page
	// after a 401), which may reach another instance: it decides as
	// Handler does, but a visitor whose session it finds alive gets the
	// waiting page, their cookie left alone, rather than next. The
	// instance that answered first refused that session (a revoke it
	// knows of and this one does not yet, or a sign of life this one
	// learnt first), and passing it here would send the visitor back to
	// that refusal. A visitor let in since (a place that became a
	// session, a chance) or a request a rule lets through reaches next.
	PageHandler func(room any, next http.Handler) http.Handler
)

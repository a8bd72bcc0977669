// Package wrcaddy is the waiting room inside Caddy: the HTTP handler
// http.handlers.waitingroom and its Caddyfile directive, waitingroom,
// which decide every request in Caddy's own process (no extra hop) as
// waitingroom.Room.Handler does.
//
//	shop.example {
//		waitingroom {
//			total_active_users 200
//			new_users_per_minute 200
//			key {env.WAITINGROOM_KEY}
//			store redis://127.0.0.1:6379/0
//			bypass /static/ /favicon.ico
//		}
//		reverse_proxy 127.0.0.1:3000
//	}
//
// Build Caddy with it with xcaddy (--with
// github.com/go-waitingroom/waitingroom/wrcaddy) or with the main package
// in wrcaddy/cmd/caddy. The directive runs after basic_auth and
// forward_auth and before everything else (request_header, encode, handle,
// route, respond, reverse_proxy, file_server). README.md in this
// directory lists every subdirective.
package wrcaddy

import (
	"context"
	"errors"
	"fmt"
	"github.com/go-waitingroom/waitingroom/template"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store"
)

func init() {
	caddy.RegisterModule(Handler{})
	httpcaddyfile.RegisterHandlerDirective("waitingroom", parseCaddyfile)
	httpcaddyfile.RegisterDirectiveOrder("waitingroom", httpcaddyfile.After, "forward_auth")
}

// Handler is the waiting room as a Caddy HTTP handler. Its fields are the
// room's Config (zero: the Config's default) in Caddy's JSON; the
// Caddyfile's subdirectives have the same names. Admitted and bypassed
// requests go on to the next handler with the Waiting-Room-Ticket request
// header (waitingroom.TicketHeader; replacing any the client sent), and
// the next handler ends a session with the response header
// "Waiting-Room-Command: revoke"; everyone else gets the waiting page.
//
// A Handler is provisioned once per configuration and then safe for
// concurrent use. With the memory store, configurations of the same room
// name share one store, so a reload keeps the queue.
type Handler struct {
	// Name is the room's name (Config.Name). Default "default".
	Name string `json:"name,omitempty"`
	// TotalActiveUsers and NewUsersPerMinute are the room's limits.
	// Required.
	TotalActiveUsers  int `json:"total_active_users,omitempty"`
	NewUsersPerMinute int `json:"new_users_per_minute,omitempty"`
	// SessionDuration, RefreshInterval, QueueHold and SyncInterval are the
	// Config's durations. Defaults: the Config's.
	SessionDuration caddy.Duration `json:"session_duration,omitempty"`
	RefreshInterval caddy.Duration `json:"refresh_interval,omitempty"`
	QueueHold       caddy.Duration `json:"queue_hold,omitempty"`
	SyncInterval    caddy.Duration `json:"sync_interval,omitempty"`
	// QueueingMethod is fifo, random, passthrough or reject. Default fifo.
	QueueingMethod string `json:"queueing_method,omitempty"`
	// QueueingStatusCode is the status of the waiting page: 200, 202 or
	// 429. Default 200.
	QueueingStatusCode int `json:"queueing_status_code,omitempty"`
	// Keys are the cookie keys (hex or base64, at least 32 bytes each;
	// the first encrypts). Required; the same on every instance.
	// {env.WAITINGROOM_KEY}, filled at provision, or {$WAITINGROOM_KEY}
	// in a Caddyfile, keeps them out of the configuration.
	Keys []string `json:"keys,omitempty"`
	// Store is where the room's state lives: memory (the default; this
	// process only), redis://[user:password@]host:port/db or rediss://
	// (shared by every instance pointed at it); placeholders such as
	// {env.REDIS_URL} are filled at provision.
	Store string `json:"store,omitempty"`
	// StorePrefix is the Redis key prefix. Default redisstore's.
	StorePrefix string `json:"store_prefix,omitempty"`
	// HTTPS says visitors reach the site over HTTPS (Config.Cookie.Secure): the
	// cookie is Secure and SameSite=None. Default false.
	HTTPS bool `json:"https,omitempty"`
	// CookieDomain and CookiePath scope the cookie. Defaults: the
	// Config's.
	CookieDomain string `json:"cookie_domain,omitempty"`
	CookiePath   string `json:"cookie_path,omitempty"`
	// Language is the page's language (Config.Page.Language). Default "en".
	Language string `json:"language,omitempty"`
	// Template is the path of a Mustache file replacing the waiting page.
	// Default: the built-in page.
	Template string `json:"template,omitempty"`
	// Bypass lists path prefixes that skip the room
	// (waitingroom.PathPrefix: canonical paths, any case). Default none.
	Bypass []string `json:"bypass,omitempty"`

	room  *waitingroom.Room
	close func() error
}

// CaddyModule returns the module's information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.waitingroom",
		New: func() caddy.Module { return new(Handler) },
	}
}

// memoryStores are the memory stores of the rooms, by name, shared by the
// configurations that name them.
var memoryStores = caddy.NewUsagePool()

type memoryStore struct{ store.Store }

func (memoryStore) Destruct() error { return nil }

// startupTimeout bounds the first sync with the store.
const startupTimeout = 15 * time.Second

// Provision builds the room and syncs it once with its store: a store
// that cannot be reached fails the configuration.
func (h *Handler) Provision(ctx caddy.Context) error {
	// The keys and the store's address may be placeholders filled now,
	// such as {env.WAITINGROOM_KEY}.
	repl := caddy.NewReplacer()
	var keys [][]byte
	if len(h.Keys) > 0 {
		given := make([]string, len(h.Keys))
		for i, k := range h.Keys {
			given[i] = repl.ReplaceKnown(k, "")
		}
		var err error
		if keys, err = waitingroom.ParseKeys(strings.Join(given, ",")); err != nil {
			return err
		}
	}
	storeAddr := repl.ReplaceKnown(h.Store, "")
	cfg := waitingroom.Config{
		Name: cmp(h.Name, defaultName),
		Settings: waitingroom.Settings{
			TotalActiveUsers:   h.TotalActiveUsers,
			NewUsersPerMinute:  h.NewUsersPerMinute,
			SessionDuration:    time.Duration(h.SessionDuration),
			QueueingMethod:     waitingroom.QueueingMethod(strings.ToLower(h.QueueingMethod)),
			QueueingStatusCode: h.QueueingStatusCode,
		},
		RefreshInterval: time.Duration(h.RefreshInterval),
		QueueHold:       time.Duration(h.QueueHold),
		SyncInterval:    time.Duration(h.SyncInterval),
		Keys:            keys,
		Cookie:          waitingroom.CookieOptions{Secure: h.HTTPS, Domain: h.CookieDomain, Path: h.CookiePath},
		Page:            template.Options{Language: h.Language},
		Logger:          ctx.Slogger(),
	}
	if h.Template != "" {
		src, err := os.ReadFile(h.Template)
		if err != nil {
			return fmt.Errorf("waitingroom: template: %w", err)
		}
		cfg.Template = string(src)
	}
	if len(h.Bypass) > 0 {
		cfg.Bypass = []waitingroom.Rule{waitingroom.PathPrefix(h.Bypass...)}
	}
	var st store.Store
	switch storeAddr {
	case "", "memory":
		name := cmp(h.Name, defaultName)
		v, _, err := memoryStores.LoadOrNew(name, func() (caddy.Destructor, error) {
			s, _, err := openStore("memory", "")
			return memoryStore{s}, err
		})
		if err != nil {
			return err
		}
		st = v.(memoryStore).Store
		h.close = func() error { _, err := memoryStores.Delete(name); return err }
	default:
		s, closer, err := openStore(storeAddr, h.StorePrefix)
		if err != nil {
			return fmt.Errorf("waitingroom: %w", err)
		}
		st, h.close = s, closer.Close
	}
	room, err := waitingroom.New(cfg, st)
	if err != nil {
		_ = h.close()
		return err
	}
	start, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	if err := room.Ready(start); err != nil {
		_ = room.Close()
		_ = h.close()
		return fmt.Errorf("waitingroom: store %s: first sync failed: %w", redact(storeAddr), err)
	}
	h.room = room
	return nil
}

// defaultName is the room's name when the configuration gives none, as
// cmd/waitingroom's.
const defaultName = "default"

// cmp is s, or def when s is empty.
func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Cleanup stops the room's background sync and releases its store.
func (h *Handler) Cleanup() error {
	var errs []error
	if h.room != nil {
		errs = append(errs, h.room.Close())
	}
	if h.close != nil {
		errs = append(errs, h.close())
	}
	return errors.Join(errs...)
}

// Room returns the provisioned room (nil before Provision), for the
// admin API or metrics of a program embedding Caddy.
func (h *Handler) Room() *waitingroom.Room { return h.room }

// ServeHTTP runs r through the room's Handler: the waiting page, or the
// next handler, whose error it returns (nil after the waiting page or a
// closed room's answer). The request goes on with the request header
// TicketHeader set to the admitted visitor's ticket (Ticket.String) or to
// "bypassed", replacing any the client sent, for an application behind
// Caddy to read (waitingroom.ParseTicket); the writer the next handler
// gets carries it too (waitingroom.TicketFrom, through Caddy's wrappers,
// which unwrap), for a handler compiled into Caddy. The next handler ends
// the visitor's session as behind Room.Handler: the response header
// "Waiting-Room-Command: revoke", or waitingroom.Revoke with its writer.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	c := &call{next: next}
	h.room.Handler(c).ServeHTTP(w, r)
	return c.err
}

// call is Caddy's next handler as the http.Handler that the room's Handler
// serves a request that may pass with; it keeps the handler's error.
type call struct {
	next   caddyhttp.Handler
	err    error
	ticket [1]string // the value of TicketHeader
}

func (c *call) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.ticket[0] = "bypassed"
	if t, ok := waitingroom.TicketFrom(w); ok {
		c.ticket[0] = t.String()
	}
	r.Header[waitingroom.TicketHeader] = c.ticket[:]
	c.err = c.next.ServeHTTP(w, r)
}

// parseCaddyfile reads the waitingroom directive.
func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Handler)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// UnmarshalCaddyfile reads the directive:
//
//	waitingroom {
//		name                 <name>
//		total_active_users   <n>
//		new_users_per_minute <n>
//		session_duration     <duration>
//		refresh_interval     <duration>
//		queue_hold           <duration>
//		sync_interval        <duration>
//		queueing_method      fifo|random|passthrough|reject
//		queueing_status_code 200|202|429
//		key                  <key> [<key>...]
//		store                memory|redis://...|rediss://...
//		store_prefix         <prefix>
//		https
//		cookie_domain        <domain>
//		cookie_path          <path>
//		language             <tag>
//		template             <file>
//		bypass               <path prefix> [<path prefix>...]
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive's name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		name := d.Val()
		args := d.RemainingArgs()
		one := func() (string, error) {
			if len(args) != 1 {
				return "", d.Errf("%s takes one value, got %d", name, len(args))
			}
			return args[0], nil
		}
		var err error
		switch name {
		case "name", "queueing_method", "store", "store_prefix", "cookie_domain", "cookie_path", "language", "template":
			var v string
			if v, err = one(); err == nil {
				*map[string]*string{
					"name": &h.Name, "queueing_method": &h.QueueingMethod, "store": &h.Store, "store_prefix": &h.StorePrefix,
					"cookie_domain": &h.CookieDomain, "cookie_path": &h.CookiePath, "language": &h.Language, "template": &h.Template,
				}[name] = v
			}
		case "total_active_users", "new_users_per_minute", "queueing_status_code":
			var v string
			if v, err = one(); err == nil {
				n, perr := strconv.Atoi(v)
				if perr != nil {
					return d.Errf("%s: want a whole number, got %q", name, v)
				}
				*map[string]*int{"total_active_users": &h.TotalActiveUsers, "new_users_per_minute": &h.NewUsersPerMinute,
					"queueing_status_code": &h.QueueingStatusCode}[name] = n
			}
		case "session_duration", "refresh_interval", "queue_hold", "sync_interval":
			var v string
			if v, err = one(); err == nil {
				dur, perr := caddy.ParseDuration(v)
				if perr != nil {
					return d.Errf("%s: %v", name, perr)
				}
				*map[string]*caddy.Duration{"session_duration": &h.SessionDuration, "refresh_interval": &h.RefreshInterval,
					"queue_hold": &h.QueueHold, "sync_interval": &h.SyncInterval}[name] = caddy.Duration(dur)
			}
		case "key", "keys":
			if len(args) == 0 {
				return d.Errf("%s takes at least one key", name)
			}
			h.Keys = append(h.Keys, args...)
		case "bypass":
			if len(args) == 0 {
				return d.Errf("bypass takes at least one path prefix")
			}
			h.Bypass = append(h.Bypass, args...)
		case "https":
			if len(args) != 0 {
				return d.Errf("https takes no value")
			}
			h.HTTPS = true
		default:
			return d.Errf("unknown subdirective %q", name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
	_ caddyfile.Unmarshaler       = (*Handler)(nil)
)

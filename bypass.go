package waitingroom

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/go-waitingroom/waitingroom/internal/request"
)

// Rule selects requests that skip the room: neither queued nor counted, and
// given no cookie. Rules are built with PathPrefix, Methods, Header, Cookie,
// ClientNetworks, Match and All, and listed in Config.Bypass, where the
// first rule that matches lets the request through. Rules are immutable and
// safe for concurrent use.
//
// Typical rules: static assets and health checks, which every visitor
// loads and which cost the application little.
//
//	Bypass: []waitingroom.Rule{
//		waitingroom.PathPrefix("/static/", "/favicon.ico", "/healthz"),
//	}
type Rule struct {
	desc  string
	match func(r *http.Request, client netip.Addr) bool
}

// String describes the rule, for logs.
func (r Rule) String() string { return r.desc }

// PathPrefix matches requests whose path starts with one of prefixes,
// ignoring ASCII case (so /STATIC/ cannot be used to reach the application
// around a case-sensitive rule; other letters compare exactly). Only
// canonical paths match: a path with dot segments, doubled or encoded
// slashes ("/static/../checkout", "/api%2F..%2Fstatic/x") goes through the
// room, whatever the application would make of it. So does a path that
// some servers resolve elsewhere: one with any percent-encoding that is
// not needed (as in "%2e%2e" for ".."), a ';' (a path parameter, which
// Tomcat and Jetty strip, so that "/static/..;/admin" is "/admin" to them),
// a '\' (a '/' to IIS and others), or a segment made only of dots and
// spaces ("...", ".. "). And what follows the prefix must be printable
// ASCII (bytes 0x20 to 0x7e, decoded): a control character ("..%09"), a
// byte of a non-ASCII character or an overlong encoding ("%C0%AE", a '.'
// to lax decoders; "%E2%80%A5", two dots once normalised) takes the path
// through the room. A prefix that itself holds non-ASCII characters asks
// for them, and matches them as they are. End a directory prefix with "/"
// so that "/static/" does not match "/staticky".
func PathPrefix(prefixes ...string) Rule {
	lower := make([]string, len(prefixes))
	for i, p := range prefixes {
		lower[i] = request.ASCIILower(p)
	}
	return Rule{
		desc: fmt.Sprintf("path prefix %q", prefixes),
		match: func(r *http.Request, _ netip.Addr) bool {
			p, ok := request.CanonicalPath(r)
			return ok && slices.ContainsFunc(lower, func(pre string) bool { return request.HasPathPrefix(p, pre, true) })
		},
	}
}

// PathPrefixCaseSensitive is PathPrefix comparing case exactly. Use it only
// when the application itself treats paths case-sensitively everywhere.
func PathPrefixCaseSensitive(prefixes ...string) Rule {
	ps := slices.Clone(prefixes)
	return Rule{
		desc: fmt.Sprintf("case-sensitive path prefix %q", prefixes),
		match: func(r *http.Request, _ netip.Addr) bool {
			p, ok := request.CanonicalPath(r)
			return ok && slices.ContainsFunc(ps, func(pre string) bool { return request.HasPathPrefix(p, pre, false) })
		},
	}
}

// Methods matches requests with one of the given methods (case-sensitive,
// as methods are).
func Methods(methods ...string) Rule {
	ms := slices.Clone(methods)
	return Rule{
		desc:  fmt.Sprintf("method %q", methods),
		match: func(r *http.Request, _ netip.Addr) bool { return slices.Contains(ms, r.Method) },
	}
}

// Header matches requests with a header name whose value satisfies match.
// A nil match matches any value of a present header. A client can send any
// header: match only on what a client cannot forge, such as a secret shared
// with a monitoring service or a header your own proxy sets and strips.
func Header(name string, match func(value string) bool) Rule {
	name = http.CanonicalHeaderKey(name)
	return Rule{
		desc: fmt.Sprintf("header %q", name),
		match: func(r *http.Request, _ netip.Addr) bool {
			vs, ok := r.Header[name]
			if !ok {
				return false
			}
			return match == nil || slices.ContainsFunc(vs, match)
		},
	}
}

// Cookie matches requests carrying a cookie name whose value satisfies
// match (nil: any value). Clients choose their cookies: match on a value
// they cannot forge, such as a session your application signs.
func Cookie(name string, match func(value string) bool) Rule {
	return Rule{
		desc: fmt.Sprintf("cookie %q", name),
		match: func(r *http.Request, _ netip.Addr) bool {
			v, ok := request.Cookie(r, name)
			return ok && (match == nil || match(v))
		},
	}
}

// ClientNetworks matches requests whose client address is in one of the
// networks (CIDR, e.g. "10.0.0.0/8", "2001:db8::/32"). The client address
// is the connection's remote address, or, when that is one of
// Config.TrustedProxies, the nearest untrusted address in
// X-Forwarded-For. It returns an error for a network that does not parse.
func ClientNetworks(cidrs ...string) (Rule, error) {
	nets := make([]netip.Prefix, 0, len(cidrs))
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil {
			return Rule{}, fmt.Errorf("waitingroom: bypass network: %w", err)
		}
		nets = append(nets, p.Masked())
	}
	return Rule{
		desc: fmt.Sprintf("client network %q", cidrs),
		match: func(_ *http.Request, client netip.Addr) bool {
			return client.IsValid() && slices.ContainsFunc(nets, func(p netip.Prefix) bool { return p.Contains(client) })
		},
	}, nil
}

// Match matches requests for which f returns true: the escape hatch for
// anything the other rules do not express. f must be safe for concurrent
// use and must not read the request body.
func Match(f func(*http.Request) bool) Rule {
	return Rule{
		desc:  "custom match",
		match: func(r *http.Request, _ netip.Addr) bool { return f(r) },
	}
}

// All matches requests that every one of rules matches, e.g. a path prefix
// for one method only.
func All(rules ...Rule) Rule {
	rs := slices.Clone(rules)
	descs := make([]string, len(rs))
	for i, r := range rs {
		descs[i] = r.desc
	}
	return Rule{
		desc: "all of (" + strings.Join(descs, ", ") + ")",
		match: func(r *http.Request, client netip.Addr) bool {
			for _, x := range rs {
				if !x.match(r, client) {
					return false
				}
			}
			return true
		},
	}
}

// bypassed reports whether a bypass rule matches r.
func (rm *Room) bypassed(r *http.Request) bool {
	if len(rm.cfg.Bypass) == 0 {
		return false
	}
	client := request.ClientAddr(r, rm.cfg.TrustedProxies)
	for _, rule := range rm.cfg.Bypass {
		if rule.match != nil && rule.match(r, client) {
			return true
		}
	}
	return false
}

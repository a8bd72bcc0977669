package waitingroom

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strings"
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
		lower[i] = asciiLower(p)
	}
	return Rule{
		desc: fmt.Sprintf("path prefix %q", prefixes),
		match: func(r *http.Request, _ netip.Addr) bool {
			p, ok := canonicalPath(r)
			return ok && slices.ContainsFunc(lower, func(pre string) bool { return hasPathPrefix(p, pre, true) })
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
			p, ok := canonicalPath(r)
			return ok && slices.ContainsFunc(ps, func(pre string) bool { return hasPathPrefix(p, pre, false) })
		},
	}
}

// hasPathPrefix reports whether path starts with prefix (with fold, ASCII
// letters of path compared in lower case, as prefix is given) and what
// follows it is printable ASCII.
func hasPathPrefix(path, prefix string, fold bool) bool {
	if len(path) < len(prefix) {
		return false
	}
	head := path[:len(prefix)]
	if fold {
		head = asciiLower(head)
	}
	if head != prefix {
		return false
	}
	for i := len(prefix); i < len(path); i++ {
		if c := path[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// asciiLower is s with its ASCII letters in lower case and every other
// byte as it is (strings.ToLower also folds letters such as the Kelvin
// sign into ASCII ones, and rewrites invalid UTF-8).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// canonicalPath returns the request's path and whether it is canonical:
// no dot segments, no empty segments, no escaped slashes, no percent-
// encoding beyond what the path needs (RawPath is set for any other), no
// path parameters (';'), no backslashes, and no segment made only of dots
// and spaces. A rule never matches any other path, so it cannot be matched
// by a path that the application, or a server in front of it, resolves
// elsewhere.
func canonicalPath(r *http.Request) (string, bool) {
	p := r.URL.Path
	if p == "" || p[0] != '/' || r.URL.RawPath != "" || strings.ContainsAny(p, `;\`) {
		return p, false
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg != "" && strings.Trim(seg, ". ") == "" {
			return p, false // ".", "..", "...", ".. " and the like
		}
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return p, c == p
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
			v, ok := cookieValue(r, name)
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
	client := clientAddr(r, rm.cfg.TrustedProxies)
	for _, rule := range rm.cfg.Bypass {
		if rule.match != nil && rule.match(r, client) {
			return true
		}
	}
	return false
}

// clientAddr is the request's client address: the remote address, unless
// that is a trusted proxy, in which case X-Forwarded-For is read from the
// right, skipping trusted proxies, to the first address that is not one.
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	addr := parseAddr(r.RemoteAddr)
	if len(trusted) == 0 {
		return addr
	}
	isTrusted := func(a netip.Addr) bool {
		return a.IsValid() && slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(a) })
	}
	if !isTrusted(addr) {
		return addr
	}
	xff := r.Header.Values("X-Forwarded-For")
	for i := len(xff) - 1; i >= 0; i-- {
		parts := strings.Split(xff[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a := parseAddr(strings.TrimSpace(parts[j]))
			if !a.IsValid() {
				return netip.Addr{} // garbage: trust nothing further
			}
			if !isTrusted(a) {
				return a
			}
			addr = a
		}
	}
	return addr
}

func parseAddr(s string) netip.Addr {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

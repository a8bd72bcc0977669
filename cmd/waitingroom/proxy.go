package main

import (
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"slices"
	"sync"
	"time"
)

// newProxy returns the reverse proxy to target, the application behind
// the room.
//
// The upstream gets X-Forwarded-For, X-Forwarded-Host and
// X-Forwarded-Proto. Those a client sent are dropped, unless the client
// connects from one of trusted (proxies in front of this one): then its
// X-Forwarded-For is extended and its X-Forwarded-Host and
// X-Forwarded-Proto are kept. With https, X-Forwarded-Proto is https
// whatever the connection, since TLS may end before this proxy. The Host
// header is the client's, or target's with upstreamHost.
//
// Responses are streamed: ReverseProxy flushes every write of a response
// without a Content-Length (a stream) or of type text/event-stream, so
// FlushInterval stays 0 and responses of a known length are copied through
// a buffer. Upgrades (WebSockets) pass through: the room's writer unwraps
// to the server's, which hijacks.
//
// An upstream that cannot be reached gives 502 with a plain body and no
// details; the error is logged, at most once a second (with the number of
// errors left out since).
func newProxy(target *url.URL, upstreamHost, https bool, trusted []netip.Prefix, log *slog.Logger) *httputil.ReverseProxy {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Every request goes to the one upstream: keep enough idle connections
	// to it that a busy proxy does not dial for most requests (the default
	// keeps 2).
	tr.MaxIdleConns = 512
	tr.MaxIdleConnsPerHost = 512
	errs := &upstreamErrors{log: log, every: time.Second, now: time.Now}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// ReverseProxy has removed the client's X-Forwarded-* headers
			// from pr.Out; put back those of a trusted proxy.
			fromProxy := trustedPeer(pr.In.RemoteAddr, trusted)
			if fromProxy {
				pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
			}
			pr.SetXForwarded()
			if fromProxy {
				if h := pr.In.Header.Get("X-Forwarded-Host"); h != "" {
					pr.Out.Header.Set("X-Forwarded-Host", h)
				}
				if p := pr.In.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
					pr.Out.Header.Set("X-Forwarded-Proto", p)
				}
			}
			if https {
				pr.Out.Header.Set("X-Forwarded-Proto", "https")
			}
			if !upstreamHost {
				pr.Out.Host = pr.In.Host
			}
		},
		Transport:    tr,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandler: errs.handle,
	}
}

// trustedPeer reports whether remoteAddr, a connection's remote address,
// is in one of the trusted networks.
func trustedPeer(remoteAddr string, trusted []netip.Prefix) bool {
	if len(trusted) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap()
	return slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(a) })
}

// upstreamErrors answers the requests the upstream could not serve and
// logs why, at most once per every.
type upstreamErrors struct {
	log   *slog.Logger
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	last    time.Time
	skipped int // errors not logged since last
}

func (u *upstreamErrors) handle(w http.ResponseWriter, r *http.Request, err error) {
	// A client that went away is no news.
	if r.Context().Err() == nil {
		u.report(r, err)
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, http.StatusText(http.StatusBadGateway), http.StatusBadGateway)
}

func (u *upstreamErrors) report(r *http.Request, err error) {
	now := u.now()
	u.mu.Lock()
	if !u.last.IsZero() && now.Sub(u.last) < u.every {
		u.skipped++
		u.mu.Unlock()
		return
	}
	skipped := u.skipped
	u.last, u.skipped = now, 0
	u.mu.Unlock()
	u.log.Error("waitingroom: upstream error; answered 502", "method", r.Method, "path", r.URL.Path, "err", err, "errors_not_logged", skipped)
}

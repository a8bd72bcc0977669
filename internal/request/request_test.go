package request

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClientAddr(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, tc := range []struct {
		name, remote string
		xff          []string
		trusted      []netip.Prefix
		want         string
	}{
		{"no proxies trusted", "192.0.2.1:1", []string{"198.51.100.7"}, nil, "192.0.2.1"},
		{"untrusted remote ignores header", "192.0.2.1:1", []string{"198.51.100.7"}, proxies, "192.0.2.1"},
		{"trusted proxy", "10.0.0.2:1", []string{"198.51.100.7"}, proxies, "198.51.100.7"},
		{"chain of proxies", "10.0.0.2:1", []string{"198.51.100.7, 10.0.0.9"}, proxies, "198.51.100.7"},
		{"spoofed left part ignored", "10.0.0.2:1", []string{"10.9.9.9, 203.0.113.5, 10.0.0.9"}, proxies, "203.0.113.5"},
		{"several headers", "10.0.0.2:1", []string{"203.0.113.5", "10.0.0.3"}, proxies, "203.0.113.5"},
		{"garbage", "10.0.0.2:1", []string{"not-an-ip"}, proxies, "invalid IP"},
		{"ipv6 loopback proxy", "[::1]:1", []string{"2001:db8::5"}, proxies, "2001:db8::5"},
		{"mapped v4", "[::ffff:192.0.2.1]:1", nil, nil, "192.0.2.1"},
		{"no port", "192.0.2.1", nil, nil, "192.0.2.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			assert.Equal(t, tc.want, ClientAddr(r, tc.trusted).String())
		})
	}
}

func FuzzClientAddr(f *testing.F) {
	f.Add("10.0.0.2:1", "198.51.100.7, 10.0.0.9")
	f.Add("[::1]:0", ",,,")
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	f.Fuzz(func(t *testing.T, remote, xff string) {
		r := &http.Request{RemoteAddr: remote, Header: http.Header{"X-Forwarded-For": strings.Split(xff, "\n")}}
		_ = ClientAddr(r, proxies)
	})
}

package request

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCookie(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers []string
		want    string
		ok      bool
	}{
		{"none", nil, "", false},
		{"single", []string{"a=1"}, "1", true},
		{"among others", []string{"x=y; a=2; b=3"}, "2", true},
		{"first of duplicates", []string{"a=first; a=second"}, "first", true},
		{"second header", []string{"x=1", "a=3"}, "3", true},
		{"quoted", []string{`a="4"`}, "4", true},
		{"prefix is not the name", []string{"aa=5; ba=6"}, "", false},
		{"no value", []string{"a"}, "", false},
		{"spaces", []string{"  a=7  ;b=8"}, "7", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			for _, h := range tc.headers {
				r.Header.Add("Cookie", h)
			}
			v, ok := Cookie(r, "a")
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, v)
		})
	}
}

// referenceCookieValues is the plain reading of Cookie headers that
// Cookies must agree with: split at ';', trim the spaces, the name is
// what comes before the first '='.
func referenceCookieValues(lines []string, name string, limit int) []string {
	var out []string
	for _, line := range lines {
		for len(line) > 0 {
			var part string
			part, line, _ = strings.Cut(line, ";")
			part = strings.TrimSpace(part)
			k, val, found := strings.Cut(part, "=")
			if !found || k != name {
				continue
			}
			if len(val) > 1 && val[0] == '"' && val[len(val)-1] == '"' {
				val = val[1 : len(val)-1]
			}
			if out = append(out, val); len(out) >= limit {
				return out
			}
		}
	}
	return out
}

func FuzzCookies(f *testing.F) {
	for _, tc := range []struct{ header, name string }{
		{"a=1; b=2", "a"},
		{"b=2;a=1 ; a=\"3\";a=", "a"},
		{" a = 1;\ta=2\u00a0; a=3\u0085", "a"},
		{"a=1\u00a0;a=2\u0085;\u00a0a=3;\u3000a=4", "a"},
		{"a=b=c; a =d; xa=e; a=x;a", "a"},
		{"a=b=c", "a=b"},
		{"=x; =y", ""},
		{"a=\"\"; a=\"; a=\"\"\"", "a"},
		{"__waitingroom_bench=AAAA;__waitingroom_bench=BBBB", "__waitingroom_bench"},
	} {
		f.Add(tc.header, tc.header, tc.name, uint8(8))
	}
	f.Fuzz(func(t *testing.T, line1, line2, name string, limit uint8) {
		lim := int(limit%10) + 1
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header["Cookie"] = []string{line1, line2}
		var got []string
		for v := range Cookies(r, name, lim) {
			got = append(got, v)
		}
		assert.Equal(t, referenceCookieValues(r.Header["Cookie"], name, lim), got)
	})
}

func FuzzCookieHeader(f *testing.F) {
	f.Add("a=1; b=2")
	f.Add(`a="`)
	f.Add(";;;=;=")
	f.Fuzz(func(t *testing.T, h string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Cookie", h)
		_, _ = Cookie(r, "a")
	})
}

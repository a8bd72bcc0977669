package waitingroom

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerifiedGrows(t *testing.T) {
	v := newVerified(10_000)
	entries := map[string]*verifiedEntry{}
	for i := range 5000 {
		var k string
		switch i % 3 {
		case 0:
			k = fmt.Sprintf("cookie-%d", i) // short: hashed whole
		case 1:
			k = fmt.Sprintf("cookie-%090d", i) // as long as a cookie: hashed by its end, kept inline
		case 2:
			k = fmt.Sprintf("cookie-%0200d", i) // longer than an entry holds inline
		}
		s := cookieState{id: uint64(i + 1), bucket: 1, acceptedAt: int64(i) * 1000, lastCheckIn: 5}
		e := v.put(k, s, 100)
		require.NotNil(t, e)
		assert.Equal(t, s, e.state)
		entries[k] = e
	}
	for k, want := range entries {
		got, ok := v.get(k)
		require.True(t, ok, k)
		assert.Same(t, want, got, "the entry remembered, not a copy")
	}
	again := v.put("cookie-9", cookieState{id: 99}, 100)
	assert.Same(t, entries["cookie-9"], again, "a cookie remembered twice has one entry")
	for _, k := range []string{"", "cookie-", "cookie-5001", fmt.Sprintf("cookie-%090d", 9), fmt.Sprintf("cookie-%091d", 7), fmt.Sprintf("Cookie-%090d", 7),
		fmt.Sprintf("cookie-%0200d", 5)[:200], fmt.Sprintf("cookie-%0199d", 5), fmt.Sprintf("cookie-%0200d", 3)} {
		_, ok := v.get(k)
		assert.False(t, ok, k)
	}

	v.put("next", cookieState{}, 101)
	e, ok := v.get("cookie-42")
	require.True(t, ok, "the previous minute's cookies are kept")
	assert.Same(t, entries["cookie-42"], e)
	long := fmt.Sprintf("cookie-%0200d", 44)
	e, ok = v.get(long)
	require.True(t, ok)
	assert.Same(t, entries[long], e)
	v.put("late", cookieState{}, 100) // a request that read the clock before the minute turned
	_, ok = v.get("cookie-42")
	assert.True(t, ok, "a request a minute late does not turn the generations back")
	_, ok = v.get("late")
	assert.True(t, ok)
	v.put("later", cookieState{}, 102)
	_, ok = v.get("cookie-42")
	assert.False(t, ok, "two minutes on, they are gone")
	_, ok = v.get("next")
	assert.True(t, ok)
}

// TestVerifiedConcurrent has readers look up cookies while writers
// remember new ones and turn the generations over (run with -race): a
// reader finds every cookie remembered in the current or previous minute
// before its lookup began, with the state it was remembered with.
func TestVerifiedConcurrent(t *testing.T) {
	v := newVerified(1 << 20)
	const writers, perWriter = 4, 2000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				k := fmt.Sprintf("w%d-%d", w, i)
				minute := int64(100 + i/1000) // one turnover half way
				e := v.put(k, cookieState{id: uint64(w*perWriter + i + 1)}, minute)
				if e == nil {
					t.Errorf("%s: not remembered", k)
					return
				}
				got, ok := v.get(k)
				if !ok || got != e {
					t.Errorf("%s: not found right after it was remembered", k)
					return
				}
				if i > 0 {
					p := fmt.Sprintf("w%d-%d", w, i-1)
					if got, ok := v.get(p); !ok || got.state.id != uint64(w*perWriter+i) {
						t.Errorf("%s: lost", p)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// referenceCookieValues is the plain reading of Cookie headers that
// cookieValues must agree with: split at ';', trim the spaces, the name is
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

func FuzzCookieValues(f *testing.F) {
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
		f.Add(tc.header, tc.header, tc.name, uint8(maxSameName))
	}
	f.Fuzz(func(t *testing.T, line1, line2, name string, limit uint8) {
		lim := int(limit%10) + 1
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header["Cookie"] = []string{line1, line2}
		var got []string
		for v := range cookieValues(r, name, lim) {
			got = append(got, v)
		}
		assert.Equal(t, referenceCookieValues(r.Header["Cookie"], name, lim), got)
	})
}

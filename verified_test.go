package waitingroom

import (
	"fmt"
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

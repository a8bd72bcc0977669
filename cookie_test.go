package waitingroom

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var otherKey = []byte("ffffffffffffffffffffffffffffffffffff")

func mustCodec(t testing.TB, name string, keys ...[]byte) *codec {
	c, err := newCodec(keys, name)
	require.NoError(t, err)
	return c
}

func TestCookieRoundTrip(t *testing.T) {
	c := mustCodec(t, "__waitingroom_launch", testKey)
	for _, s := range []cookieState{
		{id: 1, bucket: 1_790_000_000, lastCheckIn: 1_790_000_000_123, refresh: 19_500, pos: 1},
		{id: 2, bucket: 1_790_000_000, lastCheckIn: 1_790_000_000_123, refresh: 19_500, pos: 1_000_000_000},
		{id: 1<<64 - 1, bucket: 1_790_000_000, acceptedAt: 1_790_000_050_000, lastCheckIn: 1_790_000_060_000, chal: chalPassed},
		{id: 0x0123456789abcdef, bucket: -5, lastCheckIn: 1, chal: chalFailed},
	} {
		v := c.encode(s)
		assert.Less(t, len(v), 120, "cookie stays small")
		got, err := c.decode(v)
		require.NoError(t, err)
		assert.Equal(t, s, got)
		assert.NotEqual(t, v, c.encode(s), "every encoding uses a fresh nonce")
	}
}

func TestCookieRejects(t *testing.T) {
	s := cookieState{id: 5, bucket: 29_833_333, lastCheckIn: 1_790_000_000_123, refresh: 20_000}
	c := mustCodec(t, "__waitingroom_launch", testKey)
	good := c.encode(s)
	raw, err := base64.RawURLEncoding.DecodeString(good)
	require.NoError(t, err)

	cases := map[string]string{
		"empty":           "",
		"truncated":       good[:len(good)-4],
		"one char short":  good[:len(good)-1],
		"not base64":      strings.Repeat("*", len(good)),
		"padded base64":   padded(raw),
		"oversized":       strings.Repeat("A", 5000),
		"line breaks":     strings.Repeat("\n", 60) + "AAAA",
		"short in breaks": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" + strings.Repeat("\r\n", 20),
		"other room":      mustCodec(t, "__waitingroom_other", testKey).encode(s),
		"other name":      mustCodec(t, "session_launch", testKey).encode(s),
		"other key":       mustCodec(t, "__waitingroom_launch", otherKey).encode(s),
		"zero checkin":    c.encode(cookieState{id: 1, bucket: 1}),
		"negative":        c.encode(cookieState{id: 1, bucket: 1, lastCheckIn: 5, refresh: -1}),
		"zero identity":   c.encode(cookieState{bucket: 1, lastCheckIn: 5}),
		"bad challenge":   c.encode(cookieState{id: 1, bucket: 1, lastCheckIn: 5, chal: chalFailed + 1}),
		"negative place":  c.encode(cookieState{id: 1, bucket: 1, lastCheckIn: 5, pos: -1}),
		"other version":   sealVersion(c, 2, cookieState{id: 1, bucket: 1, lastCheckIn: 5}),
		"next version":    sealVersion(c, cookieVersion+1, cookieState{id: 1, bucket: 1, lastCheckIn: 5}),
	}
	for i := range raw {
		// Flip every byte in turn: nonce, ciphertext and tag.
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		cases["flip byte "+string(rune('A'+i%26))+strings.Repeat("'", i/26)] = base64.RawURLEncoding.EncodeToString(b)
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.decode(v)
			assert.ErrorIs(t, err, errBadCookie)
		})
	}
}

// padded encodes raw in base64 with padding. A length that needs none
// gets a padding quantum anyway, as some encoders write one.
func padded(raw []byte) string {
	v := base64.URLEncoding.EncodeToString(raw)
	if len(raw)%3 == 0 {
		v += "===="
	}
	return v
}

// sealVersion is codec.encode writing version as the cookie's version: a
// cookie of another release's format.
func sealVersion(c *codec, version byte, s cookieState) string {
	var buf [nonceLen + 64]byte
	b := buf[:nonceLen]
	_, _ = rand.Read(b)
	pt := []byte{version}
	pt = binary.LittleEndian.AppendUint64(pt, s.id)
	return c.seal(b, pt, s)
}

func TestCookieKeyRotation(t *testing.T) {
	s := cookieState{id: 99, bucket: 7, lastCheckIn: 1000, refresh: 20_000}
	old := mustCodec(t, "n", otherKey).encode(s)

	rotated := mustCodec(t, "n", testKey, otherKey) // new key first, old still reads
	got, err := rotated.decode(old)
	require.NoError(t, err, "a cookie written with a previous key still reads")
	assert.Equal(t, s, got)
	fresh := rotated.encode(s)
	_, err = mustCodec(t, "n", testKey).decode(fresh)
	require.NoError(t, err, "the first key encrypts")

	retired := mustCodec(t, "n", testKey) // old key dropped
	_, err = retired.decode(old)
	assert.ErrorIs(t, err, errBadCookie, "a retired key no longer reads")
}

func FuzzCookieDecode(f *testing.F) {
	c := mustCodec(f, "__waitingroom_launch", testKey)
	f.Add(c.encode(cookieState{bucket: 1, lastCheckIn: 2, refresh: 3}))
	f.Add(c.encode(cookieState{id: 7, bucket: 1, lastCheckIn: 2, refresh: 3}))
	f.Add("")
	f.Add(strings.Repeat("A", 300))
	f.Add("!!!!")
	f.Fuzz(func(t *testing.T, v string) {
		s, err := c.decode(v)
		if err != nil {
			assert.Equal(t, cookieState{}, s)
			return
		}
		// Only a cookie this codec wrote opens, and it re-encodes.
		again, err := c.decode(c.encode(s))
		require.NoError(t, err)
		assert.Equal(t, s, again)
	})
}

func TestVerifiedCookies(t *testing.T) {
	v := newVerified(2)
	a := cookieState{bucket: 1, acceptedAt: 5, lastCheckIn: 5}
	_, ok := v.get("a")
	assert.False(t, ok)

	v.put("a", a, 100)
	got, ok := v.get("a")
	require.True(t, ok)
	assert.Equal(t, a, got.state)

	v.put("b", a, 100)
	v.put("c", a, 100) // over the cap: not kept
	_, ok = v.get("c")
	assert.False(t, ok, "a generation holds at most max cookies")

	v.put("d", a, 101) // the next minute: a new generation, the old one kept
	for _, k := range []string{"a", "b", "d"} {
		_, ok = v.get(k)
		assert.True(t, ok, k)
	}
	v.put("e", a, 102) // two minutes on: the first generation is gone
	_, ok = v.get("a")
	assert.False(t, ok)
	_, ok = v.get("d")
	assert.True(t, ok)
}

func TestVerifiedCookiesOnlyAdmitted(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) { c.QueueAll = true })
	v := &visitor{}
	tr.get(v, "")
	_, ok := tr.verified.get(strings.TrimPrefix(v.cookie, tr.cookieName+"="))
	assert.False(t, ok, "queued cookies are not remembered: they change at every chance")
	tr.get(&visitor{cookie: tr.cookieName + "=not-a-cookie"}, "")
	_, ok = tr.verified.get("not-a-cookie")
	assert.False(t, ok, "what does not open is never remembered")
}

package admin

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionExpiry: a session lives until its expiry, which is at most
// SessionLifetime away (and a minute for clocks that differ), even under
// the right key.
func TestSessionExpiry(t *testing.T) {
	var o options
	require.NoError(t, SignIn("session-expiry-token-0123456789")(&o))
	now := time.Date(2026, 5, 27, 15, 54, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		exp  time.Time
		ok   bool
	}{
		{"a lifetime ahead", now.Add(SessionLifetime), true},
		{"a second ahead", now.Add(time.Second), true},
		{"now", now, false},
		{"past", now.Add(-time.Hour), false},
		{"a lifetime and a minute ahead", now.Add(SessionLifetime + time.Minute), true},
		{"beyond a lifetime and a minute", now.Add(SessionLifetime + time.Minute + time.Second), false},
		{"years ahead", now.AddDate(10, 0, 0), false},
		{"zero", time.Unix(0, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := o.signIn.session(tc.exp)
			assert.Len(t, v, sessionValueLen)
			assert.Equal(t, tc.ok, o.signIn.valid(v, now))
		})
	}
	var other options
	require.NoError(t, SignIn("session-expiry-token-0123456789x")(&other))
	assert.False(t, other.signIn.valid(o.signIn.session(now.Add(time.Hour)), now), "another token's session")
}

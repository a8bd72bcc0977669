package waitingroom

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ticket header reads back as the ticket; anything else is not one.
func TestParseTicket(t *testing.T) {
	tk := Ticket{ID: 0x00ab_cdef_0123_4567, Bucket: time.Unix(1_764_615_600, 0).UTC(), AcceptedAt: time.UnixMilli(1_764_615_723_123).UTC()}
	v := tk.String()
	assert.Equal(t, "id=00abcdef01234567; bucket=2025-12-01T19:00:00Z; accepted=2025-12-01T19:02:03.123Z", v)
	got, ok := ParseTicket(v)
	require.True(t, ok)
	assert.Equal(t, tk, got)
	for _, bad := range []string{"", "bypassed", "revoked", "id=00; bucket=x; accepted=y", "id=00abcdef01234567; bucket=2025-12-01T19:00:00Z",
		"id=zzzzzzzzzzzzzzzz; bucket=2025-12-01T19:00:00Z; accepted=2025-12-01T19:02:03.123Z"} {
		_, ok := ParseTicket(bad)
		assert.False(t, ok, "%q", bad)
	}
}

// ParseTicket never panics, and what it reads, String writes back.
func FuzzParseTicket(f *testing.F) {
	f.Add("id=00abcdef01234567; bucket=2025-12-01T19:00:00Z; accepted=2025-12-01T19:02:03.123Z")
	f.Add("bypassed")
	f.Add("id=; bucket=; accepted=")
	f.Add("id=0000000000000001; bucket=9999-12-31T23:00:00-05:00; accepted=0000-01-01T00:30:00+01:00")
	f.Fuzz(func(t *testing.T, v string) {
		tk, ok := ParseTicket(v)
		inRange := func(x time.Time) bool { y := x.UTC().Year(); return y >= 0 && y <= 9999 }
		if !ok || !inRange(tk.Bucket) || !inRange(tk.AcceptedAt) {
			return // an offset can move a time out of the years RFC 3339 writes
		}
		again, ok := ParseTicket(tk.String())
		require.True(t, ok, "%q", tk.String())
		require.Equal(t, tk.ID, again.ID)
		require.True(t, tk.Bucket.Truncate(time.Second).Equal(again.Bucket), "%v %v", tk.Bucket, again.Bucket)
	})
}

package waitingroom

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/go-waitingroom/waitingroom/store"
)

// Without renewal a session ends its length after its admission, rounded
// up to the second; with renewal, never by itself.
func TestSessionEnd(t *testing.T) {
	p := &policy{session: 300_000}
	assert.Equal(t, int64(1300), sessionEnd(p, 1_000_000))
	assert.Equal(t, int64(1301), sessionEnd(p, 1_000_001))
	assert.Equal(t, int64(1301), sessionEnd(p, 1_000_999))
	p.renew = true
	assert.Zero(t, sessionEnd(p, 1_000_000))
}

// A record is alive while seen within the session (to the second), not
// revoked, not past its end, and, without renewal, within its length of
// the admission.
func TestRecordAlive(t *testing.T) {
	const at = int64(1_000_000) // s
	renew := &policy{session: 60_000, renew: true}
	capped := &policy{session: 60_000}
	for _, tc := range []struct {
		name string
		x    store.Session
		p    *policy
		now  int64
		want bool
	}{
		{"seen now", store.Session{Admitted: at, Seen: at}, renew, at * 1000, true},
		{"the session's last ms", store.Session{Admitted: at, Seen: at}, renew, (at+1)*1000 + 60_000 - 1, true},
		{"past it", store.Session{Admitted: at, Seen: at}, renew, (at+1)*1000 + 60_000, false},
		{"renewed long after the admission", store.Session{Admitted: at, Seen: at + 600}, renew, (at + 600) * 1000, true},
		{"not renewed: its length after the admission", store.Session{Admitted: at, Seen: at + 59}, capped, at*1000 + 60_000, false},
		{"not renewed: before", store.Session{Admitted: at, Seen: at + 59}, capped, at*1000 + 59_999, true},
		{"revoked", store.Session{Admitted: at, Seen: at, Revoked: true}, renew, at * 1000, false},
		{"at its end", store.Session{Admitted: at, Seen: at, End: at + 10}, renew, (at + 10) * 1000, false},
		{"before its end", store.Session{Admitted: at, Seen: at, End: at + 10}, renew, (at+10)*1000 - 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, recordAlive(&tc.x, tc.p, tc.now))
		})
	}
}

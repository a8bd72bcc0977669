package share

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// An event's pre-queue, buckets [100, 103), competes as its first bucket;
// the others as themselves; with no pre-queue, every bucket as itself.
func TestRulesBucket(t *testing.T) {
	shuffled := Rules{Lottery: [2]int64{100, 103}}
	for b, want := range map[int64]int64{99: 99, 100: 100, 101: 100, 102: 100, 103: 103, 500: 500} {
		assert.Equal(t, want, shuffled.Bucket(b), "bucket %d", b)
	}
	none := Rules{Lottery: [2]int64{100, 0}}
	for _, b := range []int64{0, 99, 100, 101} {
		assert.Equal(t, b, none.Bucket(b), "no pre-queue: bucket %d", b)
	}
}

// A session without renewal ends its length after its admission, in the
// second that holds that ms or the next; with renewal, never by itself.
func TestRulesSessionEnd(t *testing.T) {
	for _, tc := range []struct {
		name       string
		r          Rules
		acceptedAt int64
		want       int64
	}{
		{"on a second", Rules{Session: 60_000}, 1_000_000, 1060},
		{"rounded up", Rules{Session: 60_000}, 1_000_001, 1061},
		{"rounded up, a ms short", Rules{Session: 60_000}, 1_000_999, 1061},
		{"renewed", Rules{Session: 60_000, Renew: true}, 1_000_000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.r.sessionEnd(tc.acceptedAt)
			assert.Equal(t, tc.want, got)
			if got != 0 {
				assert.GreaterOrEqual(t, got*1000, tc.acceptedAt+tc.r.Session, "never before its length")
			}
		})
	}
}

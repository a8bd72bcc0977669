package admin

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/go-waitingroom/waitingroom/store"
)

func TestDurationsOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cs     []store.Count
		maxSec int64
		want   Durations
	}{
		{"none", nil, 0, Durations{}},
		{"5 of 0 s, 4 of 60 s, 1 of 600 s", []store.Count{{Key: 0, N: 5}, {Key: 60, N: 4}, {Key: 600, N: 1}}, 612,
			Durations{Count: 10, P50: 0, P90: time.Minute, Max: 612 * time.Second}},
		{"a rounded value above the exact maximum is the maximum", []store.Count{{Key: 0, N: 4}, {Key: 60, N: 4}, {Key: 600, N: 2}}, 598,
			Durations{Count: 10, P50: time.Minute, P90: 598 * time.Second, Max: 598 * time.Second}},
	} {
		assert.Equal(t, tc.want, durationsOf(tc.cs, tc.maxSec), tc.name)
	}
}

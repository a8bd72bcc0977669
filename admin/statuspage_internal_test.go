package admin

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/go-waitingroom/waitingroom"
)

func TestQueueSummary(t *testing.T) {
	at := func(hm string) time.Time { tm, _ := time.Parse("15:04", hm); return tm }
	for _, tc := range []struct {
		name  string
		queue []adminBucket
		want  string
	}{
		{"none", nil, "Nobody is waiting."},
		{"only empty minutes", []adminBucket{{at("15:31"), 0}}, "Nobody is waiting."},
		{"one", []adminBucket{{at("15:31"), 1}}, "1 waiting, arrived 15:31 to 15:31 UTC (1 minute)."},
		{"several", []adminBucket{{at("15:31"), 55}, {at("15:40"), 3}, {at("15:45"), 0}, {at("15:59"), 10}},
			"68 waiting, arrived 15:31 to 15:59 UTC (3 minutes)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, queueSummary(tc.queue))
		})
	}
}

func TestParkedSummary(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    waitingroom.Counters
		want string
	}{
		{"none", waitingroom.Counters{ChallengesFailed: 4, ChallengesUnverified: 2}, ""},
		{"one", waitingroom.Counters{ChallengesParked: 1}, "1 visitor parked"},
		{"many", waitingroom.Counters{ChallengesParked: 12}, "12 visitors parked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parkedSummary(tc.c)
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tc.want)
		})
	}
}

package admin_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// TestLimitsAboveMaxLimit: limits up to MaxLimit are accepted and let
// visitors in; larger ones, which overflowed the room's arithmetic and
// admitted nobody, are refused with an error wrapping ErrInvalidConfig,
// whether they come in the Config given to New, through Room.Update or
// through the admin API's PATCH /settings, as the room's limits or as an
// event's.
func TestLimitsAboveMaxLimit(t *testing.T) {
	const maxLimit = 1<<31 - 1 // the largest limit a room takes
	over := maxLimit
	over++ // an int, so that this compiles everywhere; on 32-bit platforms it wraps, and is refused all the same
	start := testclock.Start
	event := func(total, perMinute int) []waitingroom.Event {
		return []waitingroom.Event{{Name: "drop", Start: start, End: start.Add(time.Hour), TotalActiveUsers: total, NewUsersPerMinute: perMinute}}
	}
	for _, tc := range []struct {
		name             string
		total, perMinute int
		events           []waitingroom.Event
		want             string // the error; "" for limits that must work
	}{
		{"at MaxLimit", maxLimit, maxLimit, nil, ""},
		{"rate below MaxLimit", maxLimit, 1, nil, ""},
		{"an event at MaxLimit", 10, 10, event(maxLimit, maxLimit), ""},
		{"total above", over, 10, nil, "TotalActiveUsers must be at most 2147483647, got 2147483648"},
		{"total at MaxInt", math.MaxInt, 10, nil, "TotalActiveUsers must be at most 2147483647"},
		{"both at MaxInt", math.MaxInt, math.MaxInt, nil, "TotalActiveUsers must be at most 2147483647"},
		{"rate above", maxLimit, over, nil, "NewUsersPerMinute must be at most 2147483647, got 2147483648"},
		{"event total above", 10, 10, event(over, 10), `event "drop": TotalActiveUsers must be at most 2147483647`},
		{"event at MaxInt", 10, 10, event(math.MaxInt, math.MaxInt), `event "drop": TotalActiveUsers must be at most 2147483647`},
		{"event rate above", 10, 10, event(maxLimit, over), `event "drop": NewUsersPerMinute must be at most 2147483647`},
	} {
		// admits reports whether a new visitor gets in after a sync.
		admits := func(f *adminFixture) bool {
			f.sync()
			var cookie string
			return f.visit(&cookie)
		}
		t.Run(tc.name+"/New", func(t *testing.T) {
			cfg := waitingroom.Config{
				Name: "launch",
				Settings: waitingroom.Settings{
					TotalActiveUsers:  tc.total,
					NewUsersPerMinute: tc.perMinute,
					Events:            tc.events,
				},
				Keys:         [][]byte{[]byte("0123456789abcdef0123456789abcdef")},
				SyncInterval: -1,
			}
			_, err := waitingroom.New(cfg, memstore.New())
			if tc.want != "" {
				require.ErrorIs(t, err, waitingroom.ErrInvalidConfig)
				assert.ErrorContains(t, err, "waitingroom: invalid config: ")
				assert.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			f := newAdminFixture(t, newAdminClock(), memstore.New(), func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute, c.Events = tc.total, tc.perMinute, tc.events
			})
			assert.True(t, admits(f), "a visitor gets in")
		})
		t.Run(tc.name+"/Update", func(t *testing.T) {
			f := newAdminFixture(t, newAdminClock(), memstore.New(), nil)
			f.sync()
			before := f.room.Stats().Settings
			err := f.room.Update(context.Background(), func(s *waitingroom.Settings) {
				s.TotalActiveUsers, s.NewUsersPerMinute, s.Events = tc.total, tc.perMinute, tc.events
			})
			if tc.want != "" {
				require.ErrorIs(t, err, waitingroom.ErrInvalidConfig)
				assert.ErrorContains(t, err, tc.want)
				f.sync()
				assert.Equal(t, before, f.room.Stats().Settings, "nothing changed")
				return
			}
			require.NoError(t, err)
			assert.True(t, admits(f), "a visitor gets in")
		})
		t.Run(tc.name+"/PATCH", func(t *testing.T) {
			f := newAdminFixture(t, newAdminClock(), memstore.New(), nil)
			f.sync()
			before := f.room.Stats().Settings
			patch := map[string]any{"totalActiveUsers": tc.total, "newUsersPerMinute": tc.perMinute}
			if tc.events != nil {
				patch["events"] = tc.events
			}
			body, err := json.Marshal(patch)
			require.NoError(t, err)
			w := f.do(http.MethodPatch, "/settings", string(body))
			if tc.want != "" {
				assert.Equal(t, http.StatusUnprocessableEntity, w.Code, w.Body.String())
				assert.Contains(t, errorMessage(t, w), tc.want)
				f.sync()
				assert.Equal(t, before, f.room.Stats().Settings, "nothing changed")
				return
			}
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			assert.True(t, admits(f), "a visitor gets in")
		})
	}
}

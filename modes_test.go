package waitingroom

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/share"
)

func TestSessionExpiryAndRenewal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		disable bool
		// the visitor requests every step for steps; then is it still in?
		step    time.Duration
		steps   int
		stillIn bool
	}{
		{"renewed by activity", false, 50 * time.Second, 12, true},
		{"idle past the session", false, 5*time.Minute + time.Second, 1, false},
		{"idle just within", false, 5*time.Minute - time.Second, 1, true},
		{"hard cap without renewal", true, 50 * time.Second, 7, false},
		{"within the cap", true, 50 * time.Second, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
				c.DisableSessionRenewal = tc.disable
			})
			v := &visitor{}
			require.True(t, admitted(tr.get(v, "")))
			var w = tr.get(v, "")
			for range tc.steps {
				tr.clk.Add(tc.step)
				w = tr.get(v, "")
			}
			assert.Equal(t, tc.stillIn, admitted(w))
		})
	}
}

func TestExpiredSessionQueuesAtTheBack(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
		c.RefreshJitter = -1
	})
	early := &visitor{}
	require.True(t, admitted(tr.get(early, "")))
	// Someone queues behind the admitted visitor and keeps refreshing.
	tr.clk.Add(30 * time.Second)
	patient := &visitor{}
	require.True(t, isWaiting(tr.get(patient, "")))
	for range 20 {
		tr.clk.Add(20 * time.Second)
		tr.sync()
		if admitted(tr.get(patient, "")) {
			break
		}
	}
	// The first visitor's session lapsed (no request for > 5 minutes); they
	// come back with their old cookie and must not jump the queue: their
	// old admission does not make them older than the patient visitor.
	w := tr.get(early, "")
	assert.True(t, isWaiting(w))
	tr.clk.Add(time.Second)
	d, err := tr.checkRequest(early.request(http.MethodGet, ""))
	require.NoError(t, err)
	assert.Equal(t, outcomeWaiting, d.Outcome)
}

func TestQueueHold(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.QueueAll = true
		c.RefreshJitter = -1
		c.QueueHold = 3 * time.Minute
	})
	v := &visitor{}
	require.True(t, isWaiting(tr.get(v, "")))
	bucket := tr.clk.Now().Unix()
	tr.sync()
	assert.Equal(t, 1, tr.Stats().Waiting)

	// The visitor abandons: they stop counting within two refresh
	// intervals and a slot, long before QueueHold.
	tr.clk.Add(40*time.Second + share.SlotSeconds*time.Second)
	tr.sync()
	assert.Equal(t, 0, tr.Stats().Waiting, "an abandoned visitor stops counting as waiting")

	// Back within QueueHold: same place (arrival minute), counted again.
	tr.clk.Add(2 * time.Minute)
	require.True(t, isWaiting(tr.get(v, "")))
	c, ok := tr.readState(v.request(http.MethodGet, ""), tr.now())
	require.True(t, ok)
	assert.Equal(t, bucket, c.bucket)
	tr.sync()
	assert.Equal(t, 1, tr.Stats().Waiting)

	// Back after QueueHold: a new visitor, at the back.
	tr.clk.Add(3*time.Minute + time.Second)
	require.True(t, isWaiting(tr.get(v, "")))
	c, ok = tr.readState(v.request(http.MethodGet, ""), tr.now())
	require.True(t, ok)
	assert.Greater(t, c.bucket, bucket)
}

func TestModes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mutate     func(*Config)
		newVisitor outcome
		cookie     bool
		refresh    bool
		contains   string
	}{
		{"fifo with room", nil, outcomeAdmitted, true, false, ""},
		{"queue all", func(c *Config) { c.QueueAll = true }, outcomeWaiting, true, true, "not admitting"},
		{"suspended", func(c *Config) { c.Suspended = true; c.QueueAll = true }, outcomeBypassed, false, false, ""},
		{"passthrough", func(c *Config) { c.QueueingMethod = Passthrough }, outcomeAdmitted, true, false, ""},
		{"reject", func(c *Config) { c.QueueingMethod = Reject }, outcomeRejected, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, tc.mutate)
			v := &visitor{}
			d, err := tr.checkRequest(v.request(http.MethodGet, ""))
			require.NoError(t, err)
			assert.Equal(t, tc.newVisitor, d.Outcome)
			w := tr.get(v, "")
			assert.Equal(t, tc.cookie, len(w.Result().Cookies()) == 1)
			assert.Equal(t, tc.refresh, w.Header().Get("Refresh") != "")
			assert.Equal(t, tc.refresh, strings.Contains(w.Body.String(), `http-equiv="refresh"`))
			if tc.contains != "" {
				assert.Contains(t, strings.ToLower(w.Body.String()), tc.contains)
			}
		})
	}
}

func TestPassthroughCounts(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) { c.QueueingMethod = Passthrough; c.TotalActiveUsers, c.NewUsersPerMinute = 2, 2 })
	for range 5 {
		require.True(t, admitted(tr.get(&visitor{}, "")), "passthrough lets everyone in, beyond the limits")
	}
	tr.sync()
	st := tr.Stats()
	assert.Equal(t, 5, st.Active)
	assert.Equal(t, 5, st.AdmittedThisMinute)
}

// What the room's switches do to admitted and new visitors, as the
// product we follow documents them: QueueAll queues new visitors and lets
// sessions go on; Reject closes the site to everyone but bypass rules,
// with a page that does not refresh, unless QueueAll (or a pre-queue)
// holds visitors in a queue, whose page refreshes. Once the switch is
// undone, the admitted visitor's session goes on.
func TestSwitchesAndSessions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		change    func(*Settings)
		admitted  string // what the admitted visitor gets: app, waiting, closed
		newcomer  string
		refreshes bool // the newcomer's page refreshes
	}{
		{"queue all", func(s *Settings) { s.QueueAll = true }, "app", "waiting", true},
		{"reject", func(s *Settings) { s.QueueingMethod = Reject }, "closed", "closed", false},
		{"reject and queue all", func(s *Settings) { s.QueueingMethod, s.QueueAll = Reject, true }, "waiting", "waiting", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) { c.Bypass = []Rule{PathPrefix("/static/")} })
			v := &visitor{}
			require.True(t, admitted(tr.get(v, "")))
			require.NoError(t, tr.Update(context.Background(), tc.change))
			kind := func(w *httptest.ResponseRecorder) string {
				switch {
				case admitted(w):
					return "app"
				case isWaiting(w):
					return "waiting"
				case isClosedPage(w):
					return "closed"
				}
				return fmt.Sprintf("neither: %d %q", w.Code, w.Body.String())
			}
			before := v.cookie
			assert.Equal(t, tc.admitted, kind(tr.get(v, "")), "the admitted visitor")
			assert.Equal(t, before, v.cookie, "the admitted visitor's cookie is left alone")
			w := tr.get(&visitor{}, "")
			assert.Equal(t, tc.newcomer, kind(w), "a new visitor")
			assert.Equal(t, tc.refreshes, w.Header().Get("Refresh") != "", "the new visitor's page refreshes")

			r := httptest.NewRequest(http.MethodGet, "http://example.com/static/app.js", nil)
			rec := httptest.NewRecorder()
			tr.app.ServeHTTP(rec, r)
			assert.True(t, admitted(rec), "bypass rules still pass")

			require.NoError(t, tr.Update(context.Background(), func(s *Settings) { s.QueueingMethod, s.QueueAll = FIFO, false }))
			assert.True(t, admitted(tr.get(v, "")), "the session goes on once the switch is undone")
		})
	}
}

func TestSuspendedLeavesNoTrace(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) { c.Suspended = true })
	var ok bool
	tr.app = tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ok = TicketFrom(w)
		_, _ = w.Write([]byte("app"))
	}))
	for range 50 {
		w := tr.get(&visitor{}, "")
		require.True(t, admitted(w))
		assert.Empty(t, w.Result().Cookies())
	}
	assert.False(t, ok, "a bypassed request carries no ticket")
	tr.sync()
	assert.Zero(t, tr.Stats().Active)
}

func TestClosedRoom(t *testing.T) {
	tr := newTestRoom(t, nil)
	require.NoError(t, tr.Close())
	require.NoError(t, tr.Close())
	_, err := tr.checkRequest((&visitor{}).request(http.MethodGet, ""))
	assert.ErrorIs(t, err, ErrClosed)
	w := tr.get(&visitor{}, "")
	assert.True(t, isErrorPage(w), "%d %v", w.Code, w.Header())
	assert.NotContains(t, w.Body.String(), "closed", "no internals in the body")
	assert.ErrorIs(t, tr.Sync(context.Background()), ErrClosed)
	assert.ErrorIs(t, tr.Update(context.Background(), func(*Settings) {}), ErrClosed)
}

func TestCustomTemplate(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.QueueAll = true
		c.Template = `<p>{{queueingMethod}} {{#queueAll}}all{{/queueAll}} {{refreshIntervalSeconds}}</p>`
		c.RefreshJitter = -1
	})
	w := tr.get(&visitor{}, "")
	assert.Equal(t, "<p>fifo all 20</p>", w.Body.String())
}

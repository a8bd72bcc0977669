package waitingroom

import (
	"context"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPolicyOf checks the policy check uses, worked out once per view and
// span between event boundaries, against policyAt worked out afresh: at
// every boundary of two events, a millisecond either side, and at random
// instants in random order (the cache is asked about earlier times too,
// as by requests racing across a boundary).
func TestPolicyOf(t *testing.T) {
	clk := newClock()
	t0 := clk.Now().Add(10 * time.Minute)
	yes := true
	events := []Event{
		{Name: "drop", PrequeueStart: t0, Start: t0.Add(5 * time.Minute), End: t0.Add(15 * time.Minute), ShuffleAtStart: true,
			TotalActiveUsers: 2, NewUsersPerMinute: 2, QueueingMethod: Random, SessionDuration: 2 * time.Minute, DisableSessionRenewal: &yes},
		{Name: "sale", Start: t0.Add(15 * time.Minute), End: t0.Add(20 * time.Minute), Template: "<p>sale</p>"},
	}
	tr := newTestRoomOn(t, clk, newMemStore(), func(c *Config) { c.Events = events })
	v := tr.syncer.Snapshot()

	var instants []int64
	for _, e := range v.Settings.Events {
		for _, b := range []time.Time{e.opens(), e.Start, e.End} {
			ms := b.UnixMilli()
			instants = append(instants, ms-1, ms, ms+1)
		}
	}
	from, to := clk.Now().UnixMilli(), t0.Add(30*time.Minute).UnixMilli()
	rnd := mrand.New(mrand.NewPCG(1, 2))
	for range 500 {
		instants = append(instants, from+rnd.Int64N(to-from))
	}
	for pass := range 2 {
		for _, now := range instants {
			want := tr.policyAt(&v.Settings, now)
			got := tr.policyOf(v, now)
			require.Equal(t, want, *got, "pass %d, at %v", pass, time.UnixMilli(now).UTC())
		}
		rnd.Shuffle(len(instants), func(i, j int) { instants[i], instants[j] = instants[j], instants[i] })
	}
}

// TestPolicyFollowsUpdate changes the settings between two requests: the
// second is decided under the new ones, however recently the policy was
// worked out.
func TestPolicyFollowsUpdate(t *testing.T) {
	tr := newTestRoom(t, nil)
	v := &visitor{}
	require.True(t, admitted(tr.get(v, "")))
	require.NoError(t, tr.Update(context.Background(), func(s *Settings) { s.QueueingMethod = Reject }))
	assert.False(t, admitted(tr.get(v, "")), "Reject shuts the admitted visitor out at once")
	require.NoError(t, tr.Update(context.Background(), func(s *Settings) { s.QueueingMethod = FIFO }))
	assert.True(t, admitted(tr.get(v, "")))
	tr.sync() // a new view, the same settings
	assert.True(t, admitted(tr.get(v, "")))
}

// TestPolicyEventStartsMidSecond has an event begin between two requests
// a millisecond apart, within one second: the first is decided under the
// room's settings, the second under the event's.
func TestPolicyEventStartsMidSecond(t *testing.T) {
	clk := newClock()
	start := clk.Now().Add(time.Minute)
	tr := newTestRoomOn(t, clk, newMemStore(), func(c *Config) {
		c.Events = []Event{{Name: "closed", Start: start, End: start.Add(time.Minute), QueueingMethod: Reject}}
	})
	v := &visitor{}
	require.True(t, admitted(tr.get(v, "")))
	clk.Set(start.Add(-time.Millisecond))
	tr.sync()
	clk.Set(start.Add(-time.Millisecond + 500*time.Microsecond))
	assert.True(t, admitted(tr.get(v, "")), "a millisecond before the event")
	clk.Set(start)
	assert.False(t, admitted(tr.get(v, "")), "from the event's first millisecond")
	clk.Set(start.Add(time.Minute - time.Millisecond))
	assert.False(t, admitted(tr.get(v, "")), "to its last")
	clk.Set(start.Add(time.Minute))
	assert.True(t, admitted(tr.get(v, "")), "and not after")
}

// TestRespondDecisionNotFromCheck: a decision made by hand carries no
// policy; respond writes it with the room's page all the same.
func TestRespondDecisionNotFromCheck(t *testing.T) {
	tr := newTestRoom(t, nil)
	for _, d := range []decision{{}, {Outcome: outcomeWaiting, RefreshAfter: time.Second}, {Outcome: outcomeRejected}, {Outcome: outcomeAdmitted}, {Outcome: outcomeBypassed}} {
		w := httptest.NewRecorder()
		pass := tr.respond(w, httptest.NewRequest(http.MethodGet, "/", nil), d)
		assert.Equal(t, d.pass(), pass, d.Outcome)
		if !pass {
			assert.Equal(t, tr.cfg.QueueingStatusCode, w.Code, d.Outcome)
			assert.NotEmpty(t, w.Body.String(), d.Outcome)
		}
	}
}

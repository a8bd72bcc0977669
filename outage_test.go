package waitingroom_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// flaky is a store that fails while down is set.
type flaky struct {
	store.Store
	down atomic.Bool
}

var errDown = fmt.Errorf("connection refused: %w", store.ErrUnavailable)

func (f *flaky) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	if f.down.Load() {
		return errDown
	}
	return f.Store.Update(ctx, room, fn)
}

func TestStoreOutage(t *testing.T) {
	for _, pc := range []struct {
		name   string
		policy waitingroom.StoreErrorPolicy
	}{{"fail-closed", waitingroom.FailClosed}, {"fail-open", waitingroom.FailOpen}} {
		policy := pc.policy
		t.Run(pc.name, func(t *testing.T) {
			var logs bytes.Buffer
			st := &flaky{Store: memstore.New()}
			tr := newTestRoomOn(t, newClock(), st, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 3, 3
				c.OnStoreError = policy
				c.RefreshJitter = -1
				c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			})
			// Another instance, in the same outage.
			other := newTestRoomOn(t, tr.clk, st, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 3, 3
				c.OnStoreError = policy
			})
			tr.sync()
			in := &visitor{}
			require.True(t, admitted(tr.get(in, "")))
			waiting := &visitor{}
			require.NoError(t, tr.Update(context.Background(), func(s *waitingroom.Settings) { s.QueueAll = true }))
			require.True(t, isWaiting(tr.get(waiting, "")))
			require.NoError(t, tr.Update(context.Background(), func(s *waitingroom.Settings) { s.QueueAll = false }))
			before, _ := tr.readState(waiting.request(http.MethodGet, ""), tr.now())

			st.down.Store(true)
			for i := range 30 {
				tr.clk.Add(time.Second)
				assert.Error(t, tr.Sync(context.Background()))
				assert.Error(t, other.Sync(context.Background()))
				for _, v := range []*visitor{in, waiting, {}} {
					w := tr.get(v, "")
					assert.Less(t, w.Code, 500, "no 5xx during an outage (request %d)", i)
				}
				assert.True(t, admitted(tr.get(in, "")), "admitted visitors keep passing")
				newcomer := tr.get(&visitor{}, "")
				if policy == waitingroom.FailClosed {
					assert.True(t, isWaiting(newcomer), "nobody new gets in without a grant")
				} else {
					assert.True(t, admitted(newcomer))
					assert.Empty(t, newcomer.Result().Cookies(), "fail-open passes visitors uncounted")
				}
			}
			assert.Equal(t, 1, strings.Count(logs.String(), "store unreachable"), "one log line per outage")
			assert.Equal(t, uint64(30), tr.Stats().Counters.SyncErrors)

			st.down.Store(false)
			tr.clk.Add(25 * time.Second)
			tr.sync()
			assert.Equal(t, 1, strings.Count(logs.String(), "store reachable again"))
			// Nobody is admitted until every instance had time to bring in
			// the counts it kept during the outage.
			assert.True(t, isWaiting(tr.get(&visitor{}, "")), "a newcomer waits out the grace")
			tr.clk.Add(share.GraceAfterGap(tr.cfg.SyncInterval))
			other.sync()
			tr.sync()
			after, ok := tr.readState(waiting.request(http.MethodGet, ""), tr.now())
			require.True(t, ok)
			assert.Equal(t, before.Bucket, after.Bucket, "the waiting visitor kept their place")
			assert.True(t, admitted(tr.get(waiting, "")), "after recovery the room admits again")
		})
	}
}

// A visitor queued before a sync that failed is still in line for the
// visitors who come after it: the instance counts what it sent to the
// store and the view does not show yet, as what it has not sent.
func TestPlaceInLineAcrossAFailedSync(t *testing.T) {
	f := &flaky{Store: memstore.New()}
	tr := newTestRoomOn(t, newClock(), f, func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute, c.SessionDuration = 1, 1, 5*time.Minute
	})
	require.True(t, admitted(tr.get(&visitor{}, "")))
	tr.sync()
	require.Equal(t, 1, roomData(t, tr.get(&visitor{}, "application/json")).PositionInLine)
	f.down.Store(true)
	require.Error(t, tr.Sync(context.Background()))
	tr.clk.Add(time.Second)
	got := roomData(t, tr.get(&visitor{}, "application/json"))
	assert.Equal(t, 2, got.PositionInLine, "the visitor queued before the failed sync is ahead")
	assert.Equal(t, 2, got.QueueLength)
}

// One instance of two cut off from the store for longer than a session,
// its admitted visitors still browsing there: the other counts their
// sessions for a session length after the latest sign of life it knows
// of, and then gives their slots to newcomers; the cut-off instance lets
// them pass as long, no longer, so that Total Active Users holds. A
// visitor it knows the others count as alive passes while they do.
func TestPartitionLongerThanASession(t *testing.T) {
	clk, cut, a, b := cutPair(t)
	inA := make([]visitor, 8)
	for i := range inA {
		for try := 0; !admitted(a.get(&inA[i], "")); try++ {
			require.Less(t, try, 120, "visitor %d", i)
			clk.Add(time.Second)
			for j := range i {
				a.get(&inA[j], "") // browsing meanwhile
			}
			a.sync() // a's share of the slots, paced over the minute
			b.sync()
		}
	}
	for i := range inA {
		require.True(t, admitted(a.get(&inA[i], "")), "visitor %d browses", i)
	}
	a.sync()
	b.sync()
	cut.down.Store(true)
	var inB []*visitor
	for step := range 24 { // 4 minutes
		clk.Add(10 * time.Second)
		assert.Error(t, a.Sync(context.Background()))
		b.sync()
		passing := 0
		for i := range inA {
			if admitted(a.get(&inA[i], "")) {
				passing++
			}
		}
		if v := (&visitor{}); admitted(b.get(v, "")) {
			inB = append(inB, v)
		}
		for _, v := range inB {
			assert.True(t, admitted(b.get(v, "")), "a newcomer let in at b browses on (step %d)", step)
		}
		assert.LessOrEqual(t, passing+len(inB), 10, "browsing at once, step %d (%d at the cut-off instance)", step, passing)
		if step == 2 {
			assert.Equal(t, len(inA), passing, "within the session, the cut-off instance's visitors pass")
		}
	}
	assert.NotEmpty(t, inB, "the other instance gave the slots to newcomers")
}

// An instance cut off from the store lets in a visitor who browses at
// another instance, whose cookie that one checked in since this one last
// reported them; one it refuses keeps their cookie, and their session at
// the others.
func TestCutOffInstanceAndOtherCheckIns(t *testing.T) {
	clk, cut, a, b := cutPair(t)
	var elsewhere, here visitor
	require.True(t, admitted(a.get(&elsewhere, "")))
	require.True(t, admitted(a.get(&here, "")))
	a.sync()
	b.sync()
	cut.down.Store(true)
	for range 9 { // 90 s at b, past the session after a's last report
		clk.Add(10 * time.Second)
		assert.Error(t, a.Sync(context.Background()))
		b.sync()
		require.True(t, admitted(b.get(&elsewhere, "")))
	}
	assert.True(t, admitted(a.get(&elsewhere, "")), "checked in at b since a last reported them")

	// here, idle since the cut: over as b counts it; a's waiting page,
	// the cookie kept.
	kept := here.cookie
	w := a.get(&here, "")
	assert.True(t, isWaiting(w))
	assert.Equal(t, kept, here.cookie, "the cookie kept")
}

// cutPair is two instances of a room of 10 slots and one-minute sessions
// that know of each other, a on a store that fails while cut.down is set.
func cutPair(t *testing.T) (*clock, *flaky, *testRoom, *testRoom) {
	clk, st := newClock(), memstore.New()
	cut := &flaky{Store: st}
	limits := func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute, c.SessionDuration = 10, 10, time.Minute
	}
	a := newTestRoomOn(t, clk, cut, limits)
	b := newTestRoomOn(t, clk, st, limits)
	for _, tr := range []*testRoom{a, b, a, b} {
		tr.sync()
	}
	return clk, cut, a, b
}

// An instance whose own syncs failed, while the others' went through,
// holds no grace when it answers again: the others' counts are in the
// state, and it brings its own. One in the same outage as another does.
func TestOwnFailedSyncsHoldNoGrace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		both  bool // the other instance is down too
		grace bool
		later bool // the other instance synced after this one before the outage
	}{
		{"its own failures", false, false, false},
		{"an outage of both", true, true, false},
		{"an outage of both, the other synced later", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk, mem := newClock(), memstore.New()
			mutate := func(c *waitingroom.Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1000, 1000 }
			fa, fb := &flaky{Store: mem}, &flaky{Store: mem}
			a, b := newTestRoomOn(t, clk, fa, mutate), newTestRoomOn(t, clk, fb, mutate)
			b.sync()
			a.sync()
			if tc.later {
				clk.Add(100 * time.Millisecond)
				b.sync()
			}
			require.True(t, admitted(a.get(&visitor{}, "")))
			fa.down.Store(true)
			fb.down.Store(tc.both)
			for range 3 {
				clk.Add(time.Second)
				assert.Error(t, a.Sync(context.Background()))
				assert.Equal(t, tc.both, b.Sync(context.Background()) != nil)
			}
			fa.down.Store(false)
			clk.Add(time.Second)
			a.sync()
			assert.Equal(t, tc.grace, isWaiting(a.get(&visitor{}, "")), "a newcomer waits out a grace: %v", tc.grace)
			fb.down.Store(false)
			b.sync()
			assert.Equal(t, tc.grace, isWaiting(b.get(&visitor{}, "")), "at the other instance too, once it syncs: %v", tc.grace)
		})
	}
}

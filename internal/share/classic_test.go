package share

import (
	"context"
	"testing"
	"time"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A sync installs the view it brings, with the host's settings, after
// telling the host; the instance's first grant is carved from it; a
// request's admission goes out with the next sync.
func TestSyncInstallsTheView(t *testing.T) {
	clk, st, h := testclock.New(testclock.Start), memstore.New(), &testHost{}
	s := newTestSyncer(t, clk, st, h)
	assert.Equal(t, "initial", s.Snapshot().Settings, "before the first sync")
	require.NoError(t, s.Ready(context.Background()), "Ready syncs when nobody else does")
	v := s.Snapshot()
	assert.Equal(t, "settings", v.Settings)
	assert.Equal(t, clk.Now().UnixMilli(), v.At)
	assert.Equal(t, int32(1), h.installed.Load())
	assert.Equal(t, "initial", h.lastOld.Load().Settings, "the host is told what the view replaces")
	assert.NotZero(t, s.Status().Epoch)
	assert.True(t, s.Status().Classic)

	l := s.Local()
	l.Lock()
	require.True(t, l.Take(AnyBucket, true), "the first grant")
	l.Report(store.Session{ID: 7, Admitted: clk.Now().Unix(), Seen: clk.Now().Unix()})
	l.Unlock()
	clk.Add(time.Second)
	require.NoError(t, s.Sync(context.Background()))
	assert.Equal(t, int64(1), s.Snapshot().Active, "the admission reached the state")
	assert.Equal(t, Counters{Syncs: 2, Last: s.Counters().Last}, s.Counters())
}

// A state lost (a store emptied) is rebuilt by the next sync: a new
// epoch, the settings the instance last knew written back (restore), the
// sessions it knows counted again.
func TestSyncRebuildsALostState(t *testing.T) {
	clk, h := testclock.New(testclock.Start), &testHost{}
	st := memstore.New()
	s := newTestSyncer(t, clk, st, h)
	require.NoError(t, s.Sync(context.Background()))
	l := s.Local()
	l.Lock()
	l.Report(store.Session{ID: 7, Admitted: clk.Now().Unix(), Seen: clk.Now().Unix()})
	l.Unlock()
	clk.Add(time.Second)
	require.NoError(t, s.Sync(context.Background()))
	old := s.Status().Epoch
	_, err := s.update(context.Background(), "room", func(x *store.State) bool {
		*x = store.State{}
		return true
	})
	require.NoError(t, err)
	clk.Add(time.Second)
	require.NoError(t, s.Sync(context.Background()))
	assert.NotEqual(t, old, s.Status().Epoch, "a new epoch")
	assert.Equal(t, int32(1), h.restored.Load(), "the settings it knew, restored")
	assert.Equal(t, int64(1), s.Snapshot().Active, "the session it knew, counted again")
}

// An epoch is never 0 (no state's) and a new one each time.
func TestNewEpoch(t *testing.T) {
	seen := map[uint64]bool{}
	for range 1000 {
		e := newEpoch()
		assert.NotZero(t, e)
		seen[e] = true
	}
	assert.Len(t, seen, 1000)
}

// keepApplied keeps the waiting counts and attempts of the batches
// applied, for a waiting window.
func TestKeepApplied(t *testing.T) {
	s := newTestSyncer(t, testclock.New(testclock.Start), memstore.New(), &testHost{})
	d := newDelta()
	d.waiting[cellKey{100, 1}] = 2
	d.attempts = 3
	d.session(store.Session{ID: 1})
	s.keepApplied([]batch{{seq: 1, d: d}}, 1000)
	s.keepApplied([]batch{{seq: 2, d: newDelta()}, {seq: 3, d: newDelta()}}, 1000+s.cfg.WaitWindow)
	require.Len(t, s.applied, 3)
	assert.Equal(t, map[cellKey]int64{{100, 1}: 2}, s.applied[0].d.waiting)
	assert.Equal(t, int64(3), s.applied[0].d.attempts)
	assert.Empty(t, s.applied[0].d.sessions, "the sessions are Local's to keep")
	s.keepApplied(nil, 1001+s.cfg.WaitWindow)
	require.Len(t, s.applied, 2, "older than a waiting window: forgotten")
	assert.Equal(t, uint64(2), s.applied[0].seq)
}

// An aggregator's word that the state lacks batches a classic sync has
// brought in again since (it found the state gone back itself) brings
// nothing in a second time: the waiting counts would count twice.
func TestResendAfterAClassicSyncBroughtThemIn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		brought uint64
		back    goneBack
		want    int64 // waiting counts brought in again, one per batch
	}{
		{"no classic sync since", 0, goneBack{had: 0, upto: 3}, 3},
		{"the lost batches brought in since", 3, goneBack{had: 0, upto: 3}, 0},
		{"some of them", 1, goneBack{had: 0, upto: 3}, 2},
		{"others lost after them", 2, goneBack{had: 2, upto: 3}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestSyncer(t, testclock.New(testclock.Start), memstore.New(), &testHost{})
			var sent []batch
			for seq := uint64(1); seq <= 3; seq++ {
				d := newDelta()
				d.waiting[cellKey{100, 1}] = 1
				sent = append(sent, batch{seq: seq, d: d})
			}
			s.keepApplied(sent, 1000)
			s.fleet.brought = tc.brought
			s.resend(&tc.back)
			assert.Equal(t, tc.want, s.local.pending.waiting[cellKey{100, 1}])
		})
	}
}

// A batch that carries earlier ones again, lost with them, is resent
// alone: the earlier ones' counts come once, within it.
func TestResendSkipsWhatABatchCarries(t *testing.T) {
	s := newTestSyncer(t, testclock.New(testclock.Start), memstore.New(), &testHost{})
	var sent []batch
	for seq := uint64(1); seq <= 4; seq++ {
		d := newDelta()
		d.waiting[cellKey{100, 1}] = 1
		b := batch{seq: seq, d: d}
		if seq == 4 {
			d.waiting[cellKey{100, 1}] = 3 // its own arrival, and those of 2 and 3 again
			b.carries = goneBack{had: 1, upto: 3}
		}
		sent = append(sent, b)
	}
	s.keepApplied(sent, 1000)
	s.resend(&goneBack{had: 0, upto: 4})
	assert.Equal(t, int64(4), s.local.pending.waiting[cellKey{100, 1}], "batches 1 and 4")
	assert.Equal(t, goneBack{had: 0, upto: 4}, s.carry, "the next batch carries them")
	s.sendBatches()
	assert.Equal(t, goneBack{had: 0, upto: 4}, s.unacked[len(s.unacked)-1].carries)
	assert.Zero(t, s.carry)
}

// A classic sync that finds the state gone back brings in again every
// batch up to its own, and says so (fleetState.brought), which the
// classic syncs after it keep; one that finds nothing wrong does not.
func TestClassicSyncBringsBackWhatWentBack(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	s := newTestSyncer(t, testclock.New(testclock.Start), st, &testHost{})
	require.NoError(t, s.Sync(ctx))
	var old store.State
	require.NoError(t, st.Update(ctx, "room", func(x *store.State) error { old = *x; return nil }))
	require.NoError(t, s.Sync(ctx))
	require.NoError(t, s.Sync(ctx))
	assert.Zero(t, s.fleet.brought, "nothing went back")

	require.NoError(t, st.Update(ctx, "room", func(x *store.State) error { *x = old; return nil }))
	require.NoError(t, s.Sync(ctx))
	brought := s.seq
	assert.Equal(t, brought, s.fleet.brought)
	require.NoError(t, s.Sync(ctx))
	assert.Equal(t, brought, s.fleet.brought, "kept by the classic syncs after it")
}

// The other order: told by the aggregator that the state lacks batches,
// the instance puts them into its next batch (resend); if a classic sync
// then finds the state gone back before that batch was applied, it brings
// them in once, with the batch that carries them, not once from each.
func TestClassicSyncAfterAResend(t *testing.T) {
	for _, tc := range []struct {
		name  string
		acked bool // the carrying batch was applied, and then lost too
	}{
		{"the carrying batch unacked", false},
		{"the carrying batch applied, then lost", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := memstore.New()
			clk := testclock.New(testclock.Start)
			s := newTestSyncer(t, clk, st, &testHost{})
			waiting := func() int64 {
				x, err := st.Read(ctx, "room")
				require.NoError(t, err)
				var n int64
				for _, c := range x.Waiting {
					n += c.N
				}
				return n
			}
			arrive := func(n int64) {
				now := clk.Now().UnixMilli()
				s.local.mu.Lock()
				s.local.pending.waiting[cellKey{now / 1000, SlotOf(now)}] += n
				s.local.mu.Unlock()
			}
			require.NoError(t, s.Sync(ctx))
			var old store.State
			require.NoError(t, st.Update(ctx, "room", func(x *store.State) error { old = *x; return nil }))
			had := s.seq
			for range 3 {
				arrive(1)
				require.NoError(t, s.Sync(ctx))
			}
			require.Equal(t, int64(3), waiting())

			goBack := func() {
				require.NoError(t, st.Update(ctx, "room", func(x *store.State) error { *x = old; return nil }))
			}
			// The state goes back, and the aggregator's word comes: it
			// lacks those three.
			goBack()
			s.resend(&goneBack{had: had, upto: s.seq})
			if tc.acked {
				require.NoError(t, s.Sync(ctx)) // the carrying batch applied
				require.Equal(t, int64(3), waiting(), "each arrival counted once")
				goBack()
			}
			require.NoError(t, s.Sync(ctx))
			assert.Equal(t, int64(3), waiting(), "each arrival counted once")
		})
	}
}

package share

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// listStore counts the Updates of shuffles' lists, and fails them while
// failing is set.
type listStore struct {
	store.Store
	failing atomic.Bool
	updates atomic.Int32
}

func (s *listStore) Update(ctx context.Context, key string, fn func(*store.State) error) error {
	if strings.Contains(key, "#places:") {
		s.updates.Add(1)
		if s.failing.Load() {
			return store.ErrUnavailable
		}
	}
	return s.Store.Update(ctx, key, fn)
}

// The list of a shuffle: each instance writes, from the event's start, the
// places of the pre-queued visitors it saw that the list lacks; the list
// is the union, sorted, each place once, whatever the instances' overlap;
// an instance does not write again what its latest write brought back; a
// failed write is tried again at the next sync, the identities kept.
func TestShuffleList(t *testing.T) {
	for _, fleet := range []bool{false, true} {
		t.Run(fmt.Sprintf("fleet %v", fleet), func(t *testing.T) {
			clk := testclock.New(time.Unix(1_790_002_800+600, 0))
			st := &listStore{Store: memstore.New()}
			t.Cleanup(func() { _ = st.Close() })
			syncers := sharingOn(t, clk, st, fleet, func(int) Host[string] { return (&testHost{}).host() })
			ctx := context.Background()
			syncAll := func() {
				for range 2 {
					for _, s := range syncers {
						require.NoError(t, s.Sync(ctx))
					}
				}
			}
			see := func(s *Syncer[string], start int64, ids ...uint64) {
				s.local.Lock()
				for _, id := range ids {
					s.local.Prequeued(id, start, seedOf(s.Snapshot().seeds, start*1000).Start) // the start's period
				}
				s.local.Unlock()
			}
			ids := func(from, to uint64) []uint64 {
				var out []uint64
				for id := from; id < to; id++ {
					out = append(out, id)
				}
				return out
			}
			syncAll()
			start := clk.Now().Unix() + 60
			x := seedOf(syncers[0].Snapshot().seeds, start*1000)
			require.NotNil(t, x)
			want := func(ids []uint64) []uint64 {
				var ps []uint64
				for _, id := range ids {
					ps = append(ps, place(x.Secret, id))
				}
				slices.Sort(ps)
				return ps
			}
			list := func() []uint64 { // not counted
				ps, err := New(Config{Name: "room", Store: st.Store}, "", Host[string]{}).Places(ctx, x.Start)
				require.NoError(t, err)
				return ps
			}

			see(syncers[0], start, ids(1, 101)...)
			see(syncers[1], start, ids(51, 151)...)
			syncAll()
			assert.Empty(t, list(), "nothing written before the event's start")
			assert.Zero(t, st.updates.Load())

			clk.Set(time.Unix(start, 0))
			syncAll()
			assert.Equal(t, want(ids(1, 151)), list(), "the union, sorted, each place once")
			assert.Equal(t, int32(2), st.updates.Load(), "one write an instance")
			assert.Less(t, x.Start, start, "the list of the period that holds the event")

			// An instance that saw only listed visitors reads the list
			// and writes nothing; one that wrote them before does not
			// even read it.
			before := st.updates.Load()
			see(syncers[2], start, ids(1, 11)...)
			see(syncers[0], start, ids(1, 101)...)
			syncAll()
			assert.Equal(t, before+1, st.updates.Load())
			assert.Equal(t, want(ids(1, 151)), list())

			// A failed write keeps the identities for the next sync.
			st.failing.Store(true)
			see(syncers[1], start, 500, 501)
			require.NoError(t, syncers[1].Sync(ctx))
			require.NoError(t, syncers[1].Sync(ctx))
			st.failing.Store(false)
			assert.Equal(t, want(ids(1, 151)), list())
			require.NoError(t, syncers[1].Sync(ctx))
			assert.Equal(t, want(append(ids(1, 151), 500, 501)), list())

			// A visitor whose place is drawn under the next period's
			// seed (an event that outlasts the hour its start fell in)
			// goes in that period's list, the others in theirs.
			next := seedOf(syncers[0].Snapshot().seeds, x.End*1000)
			require.NotNil(t, next)
			syncers[2].local.Lock()
			syncers[2].local.Prequeued(700, start, next.Start)
			syncers[2].local.Prequeued(701, start, x.Start)
			syncers[2].local.Unlock()
			syncAll()
			assert.Equal(t, want(append(ids(1, 151), 500, 501, 701)), list())
			other, err := New(Config{Name: "room", Store: st.Store}, "", Host[string]{}).Places(ctx, next.Start)
			require.NoError(t, err)
			assert.Equal(t, []uint64{place(next.Secret, 700)}, other, "the next period's list")

			// The next event's pre-queue replaces what was left of one
			// not written.
			st.failing.Store(true)
			see(syncers[0], start, 600)
			see(syncers[0], start+3600, 601)
			st.failing.Store(false)
			syncAll()
			assert.Equal(t, want(append(ids(1, 151), 500, 501, 701)), list())
		})
	}
}

func TestMergePlaces(t *testing.T) {
	for _, tc := range []struct{ a, b, want []uint64 }{
		{nil, nil, []uint64{}},
		{[]uint64{1, 3}, nil, []uint64{1, 3}},
		{nil, []uint64{2}, []uint64{2}},
		{[]uint64{1, 3, 5}, []uint64{2, 3, 6}, []uint64{1, 2, 3, 5, 6}},
		{[]uint64{1}, []uint64{1}, []uint64{1}},
	} {
		assert.Equal(t, tc.want, mergePlaces(tc.a, tc.b), "%v + %v", tc.a, tc.b)
	}
}

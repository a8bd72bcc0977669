package share

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
)

// A round's context outlives the sync's deadline, not its cancellation,
// and has a deadline of its own.
func TestRoundContext(t *testing.T) {
	t.Run("cancelled with the sync", func(t *testing.T) {
		sctx, cancel := context.WithCancel(context.Background())
		ctx, done := roundContext(sctx, time.Second)
		defer done()
		_, ok := ctx.Deadline()
		assert.True(t, ok, "a deadline of its own")
		require.NoError(t, ctx.Err())
		cancel()
		<-ctx.Done()
		assert.ErrorIs(t, ctx.Err(), context.Canceled)
	})
	t.Run("not ended by the sync's deadline", func(t *testing.T) {
		sctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		<-sctx.Done()
		ctx, done := roundContext(sctx, time.Second)
		assert.NoError(t, ctx.Err())
		done()
		assert.ErrorIs(t, ctx.Err(), context.Canceled, "ended by its own cancel")
	})
	t.Run("its deadline", func(t *testing.T) {
		before := time.Now()
		ctx, done := roundContext(context.Background(), 0)
		defer done()
		d, ok := ctx.Deadline()
		require.True(t, ok)
		assert.GreaterOrEqual(t, d.Sub(before), 2*SyncTimeout(time.Second), "at least twice a sync's timeout")
	})
}

// keepAlive brings each fleet record's Seen up to its mailbox's, never
// past now, never back.
func TestKeepAlive(t *testing.T) {
	const now = int64(10_000)
	st := &store.State{Instances: []store.Instance{
		{ID: "a", Seen: 5000}, {ID: "b", Seen: 5000}, {ID: "c", Seen: 5000}, {ID: "d", Seen: 5000},
	}}
	keepAlive(st, map[string]*store.Mailbox{
		"a": {Seen: 8000},
		"b": {Seen: 20_000},
		"c": {Seen: 1000},
	}, now)
	var seen []int64
	for _, in := range st.Instances {
		seen = append(seen, in.Seen)
	}
	assert.Equal(t, []int64{8000, now, 5000, 5000}, seen)
}

// newsOf is the batches of a mailbox after those applied, merged.
func TestNewsOf(t *testing.T) {
	mb := &store.Mailbox{Batches: []store.Batch{
		{Seq: 3, Attempts: 1, Waiting: []store.Cell{{Bucket: 100, Slot: 1, N: 1}}},
		{Seq: 4, Attempts: 2, Waiting: []store.Cell{{Bucket: 100, Slot: 1, N: 2}}, Sessions: []store.Session{{ID: 7, Seen: 3}}},
		{Seq: 5, Attempts: 4, Sessions: []store.Session{{ID: 7, Seen: 9}}},
	}}
	d := newsOf(mb, 3)
	assert.Equal(t, int64(6), d.attempts)
	assert.Equal(t, map[cellKey]int64{{100, 1}: 2}, d.waiting)
	assert.Equal(t, map[uint64]store.Session{7: {ID: 7, Seen: 9}}, d.sessions)
	none := newsOf(mb, 5)
	assert.Zero(t, none.attempts)
	assert.Empty(t, none.sessions)
	assert.Empty(t, none.waiting)
}

// deliverTo writes a round's grant into a mailbox its term read and no
// newer grant is in, and tells it what a state that went back lacks.
func TestDeliverTo(t *testing.T) {
	r := &round{term: 3, version: 50, epoch: 9}
	c := carved{g: Grant{{Bucket: 100, N: 2}, {Bucket: AnyBucket, N: 1}}, base: 7, applied: 6, fair: 2, scarce: true}
	mailbox := func(mb store.Mailbox) *store.State { return &store.State{Version: 1, Epoch: 1, Mailbox: &mb} }

	st := mailbox(store.Mailbox{Term: 3, Version: 40, Acked: 4})
	require.True(t, deliverTo(st, r, c, goneBack{}, false))
	mb := st.Mailbox
	assert.Equal(t, []store.Count{{Key: 100, N: 2}, {Key: AnyBucket, N: 1}}, mb.Grant)
	assert.Equal(t, uint64(50), mb.Version)
	assert.Equal(t, uint64(7), mb.Base)
	assert.Equal(t, uint64(9), mb.Epoch)
	assert.Equal(t, uint64(6), mb.Acked)
	assert.Equal(t, int64(2), mb.Fair)
	assert.True(t, mb.Scarce)
	assert.False(t, mb.Back)
	assert.Equal(t, uint64(2), st.Version, "written")

	st = mailbox(store.Mailbox{Term: 4, Version: 40})
	assert.False(t, deliverTo(st, r, c, goneBack{}, false), "a later term read it")
	assert.Equal(t, uint64(1), st.Version, "nothing written")
	st = mailbox(store.Mailbox{Term: 3, Version: 50})
	assert.False(t, deliverTo(st, r, c, goneBack{}, false), "a grant as new in it")

	st = mailbox(store.Mailbox{Term: 3, Version: 40, Acked: 8, Back: true, Had: 5, Upto: 6})
	require.True(t, deliverTo(st, r, carved{applied: 6}, goneBack{had: 6, upto: 9}, true))
	mb = st.Mailbox
	assert.True(t, mb.Back)
	assert.Equal(t, uint64(5), mb.Had, "the earliest batch lacked")
	assert.Equal(t, uint64(9), mb.Upto, "up to the latest")
	assert.Equal(t, uint64(8), mb.Acked, "never back")
	assert.Nil(t, mb.Grant, "no grant carved: none written")
	assert.Equal(t, uint64(40), mb.Version)
}

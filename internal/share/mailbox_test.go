package share

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
)

func TestFleetKeys(t *testing.T) {
	assert.Equal(t, "room#fleet:a", MailboxKey("room", "a"))
	assert.Equal(t, "room#fleet-view", ViewKey("room"))
	assert.Equal(t, "room#fleet-join:3", joinShard("room", 3))
	shards := map[string]bool{}
	for i := range joinShards {
		shards[joinShard("room", i)] = true
	}
	used := map[string]bool{}
	for i := range 1000 {
		id := "i" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		k := joinKey("room", id)
		assert.Equal(t, k, joinKey("room", id), "the same for the same instance")
		require.True(t, shards[k], "%s: one of the shards", k)
		used[k] = true
	}
	assert.Len(t, used, joinShards, "a thousand instances spread over every shard")
}

// mailboxOf is a copy: changing it changes the state only once written;
// writing counts a version and gives a state an epoch.
func TestMailboxOfAndWrite(t *testing.T) {
	assert.Equal(t, store.Mailbox{}, mailboxOf(&store.State{}))
	st := &store.State{Version: 4, Epoch: 9, Mailbox: &store.Mailbox{Seq: 3}}
	mb := mailboxOf(st)
	mb.Seq = 5
	assert.Equal(t, uint64(3), st.Mailbox.Seq, "a copy")
	writeMailbox(st, mb)
	assert.Equal(t, uint64(5), st.Mailbox.Seq)
	assert.Equal(t, uint64(5), st.Version)
	assert.Equal(t, uint64(9), st.Epoch, "an epoch kept")
	mb.Seq = 6
	assert.Equal(t, uint64(5), st.Mailbox.Seq, "written by value")

	fresh := &store.State{}
	writeMailbox(fresh, store.Mailbox{Seq: 1})
	assert.Equal(t, uint64(1), fresh.Version)
	assert.Equal(t, uint64(1), fresh.Epoch, "a new mailbox's epoch")
}

// pendingGrant is the grant carved and not adopted yet.
func TestPendingGrant(t *testing.T) {
	g := []store.Count{{Key: 100, N: 2}, {Key: AnyBucket, N: 1}}
	for _, tc := range []struct {
		name string
		mb   store.Mailbox
		want Grant
	}{
		{"carved, not adopted", store.Mailbox{Version: 5, Adopted: 4, Grant: g}, Grant{{Bucket: 100, N: 2}, {Bucket: AnyBucket, N: 1}}},
		{"adopted", store.Mailbox{Version: 5, Adopted: 5, Grant: g}, nil},
		{"no grant", store.Mailbox{Version: 5, Adopted: 4}, nil},
		{"an empty grant", store.Mailbox{Version: 5, Adopted: 4, Grant: []store.Count{}}, Grant{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, pendingGrant(&tc.mb))
		})
	}
}

// A batch goes into a mailbox and comes back the same, less the waiting
// counts that sum to nothing.
func TestBatchRoundTrip(t *testing.T) {
	d := newDelta()
	d.session(store.Session{ID: 9, Admitted: 10, Seen: 12})
	d.session(store.Session{ID: 3, Seen: 11, Revoked: true})
	d.waiting[cellKey{100, 5}] = 2
	d.waiting[cellKey{101, 5}] = 0
	d.waiting[cellKey{101, 6}] = -1
	d.attempts = 7
	d.wait(9, 4200)
	d.ask(4, 100, 9000)
	w := toBatch(batch{seq: 12, d: d})
	assert.Equal(t, uint64(12), w.Seq)
	assert.Equal(t, []store.Session{{ID: 3, Seen: 11, Revoked: true}, {ID: 9, Admitted: 10, Seen: 12}}, w.Sessions, "sorted by ID")
	assert.Len(t, w.Waiting, 2)

	back := batchDelta(&w)
	assert.Equal(t, d.sessions, back.sessions)
	assert.Equal(t, map[cellKey]int64{{100, 5}: 2, {101, 6}: -1}, back.waiting)
	assert.Equal(t, d.attempts, back.attempts)
	assert.Equal(t, d.waits, back.waits)
	assert.Equal(t, d.asks, back.asks)

	empty := toBatch(batch{seq: 1, d: newDelta()})
	assert.Equal(t, store.Batch{Seq: 1}, empty)
}

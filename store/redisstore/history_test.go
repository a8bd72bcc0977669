package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
	"github.com/go-waitingroom/waitingroom/store/storetest"
)

// A user whose ACL lacks the history's commands keeps the state; the
// history says which commands it lacks.
func TestHistoryWithoutItsACL(t *testing.T) {
	srv := setup(t)
	s := redisstore.New(newClient(t, srv.aclUser(t, "+get +eval +evalsha +getrange +set")), redisstore.Options{KeyPrefix: srv.prefix})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	room := storetest.RoomName("acl")
	require.NoError(t, s.Update(ctx, room, setEpoch(1)))
	err := s.AppendHistory(ctx, room, []store.Record{{Minute: 1, Data: []byte("x")}})
	require.ErrorIs(t, err, store.ErrAuth)
	assert.Contains(t, err.Error(), "ZADD, ZREMRANGEBYSCORE, PEXPIRE and ZRANGE")
	_, err = s.ReadHistory(ctx, room, 0, 2)
	require.ErrorIs(t, err, store.ErrAuth)
}

// The history key expires a day after the retention, and sits beside the
// state's key.
func TestHistoryKey(t *testing.T) {
	srv := setup(t)
	s := redisstore.New(newClient(t, srv.opts), redisstore.Options{KeyPrefix: srv.prefix})
	ctx := context.Background()
	room := storetest.RoomName("key")
	require.NoError(t, s.AppendHistory(ctx, room, []store.Record{{Minute: 1, Data: []byte("x")}}))
	ttl, err := srv.admin.PTTL(ctx, srv.prefix+room+"#history").Result()
	require.NoError(t, err)
	assert.InDelta(t, (31 * 24 * time.Hour).Seconds(), ttl.Seconds(), 60)
}

package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
	"github.com/go-waitingroom/waitingroom/store/storetest"
)

// server is one test's view of the Redis server: its connection options, a
// random key prefix of its own and an admin client to inspect keys.
type server struct {
	opts   *redis.Options
	prefix string
	admin  *redis.Client
}

// setup connects to Redis, or skips (fails in CI) when it is unreachable.
// Every key under the test's prefix is deleted at cleanup.
func setup(tb testing.TB) *server {
	tb.Helper()
	opts, err := redis.ParseURL(servicetest.Redis.URL())
	require.NoError(tb, err)
	admin := redis.NewClient(opts)
	if err := admin.Ping(context.Background()).Err(); err != nil {
		_ = admin.Close()
		servicetest.Unavailable(tb, servicetest.Redis, err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	srv := &server{opts: opts, prefix: "wrtest:" + hex.EncodeToString(b[:]) + ":", admin: admin}
	tb.Cleanup(func() {
		ctx := context.Background()
		iter := admin.Scan(ctx, 0, srv.prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			assert.NoError(tb, admin.Del(ctx, iter.Val()).Err())
		}
		assert.NoError(tb, iter.Err())
		_ = admin.Close()
	})
	return srv
}

// client returns a new client, with connections of its own, closed at
// cleanup.
func (srv *server) client(tb testing.TB) *redis.Client {
	c := redis.NewClient(srv.opts)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// store returns a Store on a new client with the test's prefix and ttl.
func (srv *server) store(tb testing.TB, ttl time.Duration) *redisstore.Store {
	s := redisstore.New(srv.client(tb), redisstore.Options{KeyPrefix: srv.prefix, TTL: ttl})
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func setEpoch(e uint64) func(*store.State) error {
	return func(st *store.State) error { st.Epoch = e; return nil }
}

func TestConformance(t *testing.T) {
	srv := setup(t)
	storetest.Run(t, func(tb testing.TB) store.Store {
		return redisstore.New(srv.client(tb), redisstore.Options{KeyPrefix: srv.prefix})
	})
}

func TestTTL(t *testing.T) {
	srv := setup(t)
	ctx := context.Background()
	tests := []struct {
		name string
		ttl  time.Duration
		want time.Duration // -1: no expiry
	}{
		{"default", 0, redisstore.DefaultTTL},
		{"custom", 90 * time.Second, 90 * time.Second},
		{"rounded up to a millisecond", 1500 * time.Microsecond, 2 * time.Millisecond},
		{"negative means no expiry", -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := srv.store(t, tt.ttl)
			room := storetest.RoomName("ttl")
			key := srv.prefix + room
			check := func() {
				t.Helper()
				got, err := srv.admin.PTTL(ctx, key).Result()
				require.NoError(t, err)
				if tt.want < 0 {
					assert.Equal(t, time.Duration(-1), got, "the key must not expire")
					return
				}
				assert.LessOrEqual(t, got, tt.want)
				if tt.want > time.Second {
					assert.Greater(t, got, tt.want-time.Second)
				}
			}
			require.NoError(t, s.Update(ctx, room, setEpoch(1)))
			check()
			// Shorten the expiry as if time had passed: the next Update
			// must set it again.
			require.NoError(t, srv.admin.PExpire(ctx, key, 10*time.Second).Err())
			require.NoError(t, s.Update(ctx, room, setEpoch(2)))
			check()
		})
	}
}

// TestTTLOfPlaces: the state holding a shuffle's list is kept as long as
// the history that keeps the rest of the event's lottery record, whatever
// shorter TTL the room's own state has; with no expiry, none.
func TestTTLOfPlaces(t *testing.T) {
	srv := setup(t)
	ctx := context.Background()
	history := time.Duration(store.HistoryMinutes+24*60) * time.Minute
	for _, tt := range []struct {
		name string
		ttl  time.Duration
		want time.Duration // -1: no expiry
	}{
		{"default", 0, history},
		{"shorter than the history's", time.Minute, history},
		{"longer than the history's", 2 * history, 2 * history},
		{"no expiry", -1, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := srv.store(t, tt.ttl)
			room := storetest.RoomName("places") + "#places:1800000000"
			require.NoError(t, s.Update(ctx, room, func(st *store.State) error {
				st.Places = append(st.Places, 1, 1<<40)
				return nil
			}))
			got, err := srv.admin.PTTL(ctx, srv.prefix+room).Result()
			require.NoError(t, err)
			if tt.want < 0 {
				assert.Equal(t, time.Duration(-1), got, "the key must not expire")
				return
			}
			assert.LessOrEqual(t, got, tt.want)
			assert.Greater(t, got, tt.want-time.Minute)
		})
	}
}

func TestKeyPrefix(t *testing.T) {
	srv := setup(t)
	ctx := context.Background()
	tests := []struct {
		name, prefix, want string
	}{
		{"default", "", redisstore.DefaultKeyPrefix},
		{"custom", srv.prefix, srv.prefix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := redisstore.New(srv.client(t), redisstore.Options{KeyPrefix: tt.prefix})
			t.Cleanup(func() { _ = s.Close() })
			room := storetest.RoomName("prefix")
			key := tt.want + room
			t.Cleanup(func() { _ = srv.admin.Del(ctx, key).Err() })
			require.NoError(t, s.Update(ctx, room, setEpoch(5)))
			n, err := srv.admin.Exists(ctx, key).Result()
			require.NoError(t, err)
			assert.Equal(t, int64(1), n, "state must be kept under %q", key)
		})
	}
}

func TestGarbageReadsAsZero(t *testing.T) {
	srv := setup(t)
	ctx := context.Background()
	tests := []struct {
		name, value string
	}{
		{"empty", ""},
		{"shorter than a tag", "junk"},
		{"tag only", "12345678"},
		{"tag and corrupt state", "12345678\x04\xff\x00garbage"},
		{"tag and truncated state", "12345678" + string(store.MarshalState(storetest.Sample())[:20])},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := srv.store(t, 0)
			room := storetest.RoomName("garbage")
			require.NoError(t, srv.admin.Set(ctx, srv.prefix+room, tt.value, 0).Err())
			got, err := s.Read(ctx, room)
			require.NoError(t, err)
			assert.Equal(t, store.State{}, *got, "garbage must be read as the zero State")
			require.NoError(t, s.Update(ctx, room, func(st *store.State) error {
				assert.Equal(t, store.State{}, *st, "garbage must read as the zero State")
				st.Epoch = 3
				return nil
			}))
			require.NoError(t, s.Update(ctx, room, func(st *store.State) error {
				assert.Equal(t, uint64(3), st.Epoch, "garbage must be replaced")
				return nil
			}))
		})
	}
}

// A state of another encoding version (another release's) is refused,
// never taken for a lost state and overwritten.
func TestOtherVersionRefused(t *testing.T) {
	srv := setup(t)
	ctx := context.Background()
	s := srv.store(t, 0)
	room := storetest.RoomName("version")
	value := "12345678" + string([]byte{store.EncodingVersion + 1}) + string(store.MarshalState(storetest.Sample())[1:])
	require.NoError(t, srv.admin.Set(ctx, srv.prefix+room, value, 0).Err())
	err := s.Update(ctx, room, func(*store.State) error {
		t.Error("fn called with a state of another version")
		return nil
	})
	require.ErrorIs(t, err, store.ErrVersion)
	_, err = s.Read(ctx, room)
	require.ErrorIs(t, err, store.ErrVersion)
	got, err := srv.admin.Get(ctx, srv.prefix+room).Result()
	require.NoError(t, err)
	assert.Equal(t, value, got, "the value is left as it was")
}

// TestConflictRetries forces a conflict: while fn runs the first time,
// another client updates the room. fn must run again on the fresh state and
// both updates must be kept.
func TestConflictRetries(t *testing.T) {
	srv := setup(t)
	ctx := context.Background()
	a, b := srv.store(t, 0), srv.store(t, 0)
	room := storetest.RoomName("conflict")
	calls := 0
	require.NoError(t, a.Update(ctx, room, func(st *store.State) error {
		calls++
		if calls == 1 {
			require.NoError(t, b.Update(ctx, room, func(st *store.State) error { st.Version += 10; return nil }))
		}
		st.Version++
		return nil
	}))
	assert.Equal(t, 2, calls, "fn must run again after a conflict")
	require.NoError(t, b.Update(ctx, room, func(st *store.State) error {
		assert.Equal(t, uint64(11), st.Version, "lost update")
		return nil
	}))
}

// A conflict's reply carries the value that won, and the next attempt
// starts from it: the winner's state, or an empty one when the winner was
// a deletion (the key expired or was removed), on either protocol.
func TestConflictCarriesTheWinner(t *testing.T) {
	for _, protocol := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(protocol), func(t *testing.T) {
			srv := setup(t)
			srv.opts.Protocol = protocol
			ctx := context.Background()
			a, b := srv.store(t, 0), srv.store(t, 0)
			room := storetest.RoomName("winner")
			require.NoError(t, a.Update(ctx, room, setEpoch(7)))
			var seen []uint64
			require.NoError(t, a.Update(ctx, room, func(st *store.State) error {
				seen = append(seen, st.Epoch)
				if len(seen) == 1 {
					require.NoError(t, b.Update(ctx, room, setEpoch(8)))
				}
				return nil
			}))
			assert.Equal(t, []uint64{7, 8}, seen, "the retry starts from the winner's state")

			seen = nil
			require.NoError(t, a.Update(ctx, room, func(st *store.State) error {
				seen = append(seen, st.Epoch)
				if len(seen) == 1 {
					require.NoError(t, srv.admin.Del(ctx, srv.prefix+room).Err())
				}
				st.Epoch = 9
				return nil
			}))
			assert.Equal(t, []uint64{8, 0}, seen, "after a deletion, from an empty state")
			require.NoError(t, b.Update(ctx, room, func(st *store.State) error {
				assert.Equal(t, uint64(9), st.Epoch)
				return nil
			}))
		})
	}
}

func TestErrors(t *testing.T) {
	srv := setup(t)
	ctx := context.Background()
	s := srv.store(t, 0)
	room := storetest.RoomName("wrongtype")
	// A key of another type is not a value Update can read.
	require.NoError(t, srv.admin.HSet(ctx, srv.prefix+room, "f", "v").Err())
	called := false
	err := s.Update(ctx, room, func(*store.State) error { called = true; return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "waitingroom/redisstore: ")
	assert.False(t, called)

	short, cancel := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel()
	<-short.Done()
	err = s.Update(short, storetest.RoomName("deadline"), setEpoch(1))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestCloseKeepsClient(t *testing.T) {
	srv := setup(t)
	ctx := context.Background()
	c := srv.client(t)
	s := redisstore.New(c, redisstore.Options{KeyPrefix: srv.prefix})
	room := storetest.RoomName("close")
	require.NoError(t, s.Update(ctx, room, setEpoch(1)))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close must be idempotent")
	err := s.Update(ctx, room, setEpoch(2))
	assert.True(t, errors.Is(err, store.ErrClosed), "got %v", err)
	assert.NoError(t, c.Ping(ctx).Err(), "Close must not close the caller's client")
	assert.NoError(t, c.Get(ctx, srv.prefix+room).Err(), "Close must not delete state")
}

func BenchmarkUpdate(b *testing.B) {
	srv := setup(b)
	storetest.Benchmark(b, func(tb testing.TB) store.Store {
		return redisstore.New(srv.client(tb), redisstore.Options{KeyPrefix: srv.prefix})
	})
}

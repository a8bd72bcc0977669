// Package redisstore keeps waiting-room state in Redis, shared by every
// process that uses the same server (single node, Cluster or Sentinel).
//
// # Key layout
//
// A room's state is one Redis string under KeyPrefix + room name, so every
// operation touches a single key. Its value is an 8-byte write tag followed
// by store.MarshalState of the state:
//
//	value = tag (8 random bytes, new on every write) || store.MarshalState(state)
//
// A room has other keys, each under a name that is the room's followed by
// '#' and a suffix: its history (below), and, in a large fleet, a mailbox
// per instance (room + "#fleet:" + the instance's ID) and a view
// (room + "#fleet-view"), each kept as a state of its own.
//
// # Redis Cluster
//
// Every operation touches one key, so the store works on Redis Cluster as
// on a single node. With a *redis.ClusterClient, the room's other keys
// also carry the state's key as a hash tag, so that all of a room's keys
// are in the state's slot, on one primary:
//
//	state     waitingroom:sale
//	history   waitingroom:sale#history{waitingroom:sale}
//	mailbox   waitingroom:sale#fleet:<id>{waitingroom:sale}
//	view      waitingroom:sale#fleet-view{waitingroom:sale}
//
// Rooms spread over the cluster's slots by name (and KeyPrefix). A
// KeyPrefix that holds '{' or '}' keeps every name as it is: one with a
// hash tag of its own, such as "{wr}:", puts every room in that tag's slot.
// With any other client the keys are the names above without the tags.
//
// Why one slot: Redis replicates asynchronously, so a primary that fails
// may take with it the writes it acknowledged last; its replica, promoted,
// holds every write up to some moment and none after. With all of a room's
// keys on that primary, what the room finds after a failover is the room
// as it was at one moment (state, mailboxes and view alike), never the
// state of one moment beside mailboxes of a later one. The room notices
// that its state went back (a lower version than the one it wrote last)
// and brings in again what the lost writes held, with a grace in which
// nobody new is let in (package waitingroom's docs/design.md, "Going
// back"), so the limits hold through a failover.
//
// Until the replica takes over (cluster-node-timeout, then an election: a
// second or two with a node timeout of one second) the rooms in the failed
// primary's slots cannot be reached, and for a moment, with
// cluster-require-full-coverage (the default), every node refuses commands
// (CLUSTERDOWN): syncs fail with store.ErrUnavailable and each room follows
// its OnStoreError policy until they succeed again. The client learns
// where the slots went from a MOVED reply, but not from a primary it
// cannot reach: after every error that says the server is unavailable,
// the store asks the client to reload the cluster's layout (ReloadState,
// in the background), so that it finds the promoted replica within a sync
// or two of the failover rather than at its periodic reload
// (ClusterStateReloadInterval, a minute by default).
//
// # Atomicity
//
// Update uses optimistic concurrency with two round trips: a GET reads the
// value, fn runs in the calling process, and a Lua script writes the new
// value only if the key's first 8 bytes still equal the tag that was read
// (compare-and-set). A script runs atomically on the server, so no other
// write can slip between the check and the write. When the tag has changed,
// another update won: Update sleeps a short jittered, growing backoff and
// starts again with a fresh read, until it commits or ctx is done. The
// script also reports success when the key already holds the very value
// being written, so a command that the client resends after losing its
// reply is not applied twice.
//
// # Deadlines
//
// Update returns as soon as its context is done, deadline or cancellation,
// even while a command waits for a stalled server. Create the client with
// ContextTimeoutEnabled: true all the same: without it go-redis does not
// apply the context's deadline to the connection, and the command left
// behind holds its connection until the client's own ReadTimeout. A write
// left behind may still be applied, as may a write whose reply a deadline
// cut off on any client: the waiting room numbers its syncs, so that one
// applied although it was reported failed counts once. The room never waits
// on the store while serving requests either way.
//
//	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
//
// # History
//
// The room's kept history (store.HistoryStore) is a sorted set under
// KeyPrefix + room name + "#history" (and its hash tag on a Cluster): one
// member a minute, scored by the minute, holding the minute in 8 bytes and
// its record. AppendHistory runs
// one script on that key (atomic, and a single key for Cluster); it drops
// what is older than store.HistoryMinutes and sets the key's expiry to the
// retention and a day. About 100 bytes a minute: some 5 MB a room for 30
// days. A release that keeps no history never reads that key.
//
// A missing key is a room without state. A value that is too short to hold
// a tag, or whose state does not decode, is presented to fn as a zero State
// and is replaced by fn's result. Every write sets the key's expiry again
// (Options.TTL), so a room in use never expires.
//
// # Errors
//
// Errors of Update that the store can classify wrap a sentinel of package
// store besides the client's error, and name the fix:
//
//   - store.ErrAuth: the server refused the credentials (NOAUTH, WRONGPASS)
//     or the user's ACL forbids a command the store runs (NOPERM). The user
//     needs GET, EVAL and EVALSHA, and for the script GETRANGE and SET, on
//     the keys under KeyPrefix; the history (below) ZADD, ZREMRANGEBYSCORE,
//     PEXPIRE and ZRANGE: "+get +eval +evalsha +getrange +set +zadd
//     +zremrangebyscore +pexpire +zrange ~prefix*". A user without the
//     history's commands keeps the state: the room logs that it cannot
//     write its history, and goes on.
//   - store.ErrUnavailable: the server could not be reached or did not
//     answer in time (connection refused or lost, a timeout, ctx's
//     deadline), or cannot serve for now (LOADING, READONLY, MASTERDOWN,
//     CLUSTERDOWN, TRYAGAIN, too many clients).
//
// Redis needs no schema: keys are created by the first write, so
// store.ErrNoSchema never comes from this store. A context cancelled by the
// caller is not classified.
package redisstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-waitingroom/waitingroom/store"
)

var (
	_ store.Store  = (*Store)(nil)
	_ store.Reader = (*Store)(nil)
)

// Defaults used for zero Options fields.
const (
	// DefaultKeyPrefix is the KeyPrefix used when Options.KeyPrefix is "".
	DefaultKeyPrefix = "waitingroom:"
	// DefaultTTL is the expiry used when Options.TTL is zero.
	DefaultTTL = 24 * time.Hour
)

// tagLen is the length in bytes of the write tag that starts every value.
const tagLen = 8

// Backoff between attempts after a conflict: a random duration up to a
// limit that starts at minBackoff and doubles up to maxBackoff.
const (
	minBackoff = 500 * time.Microsecond
	maxBackoff = 50 * time.Millisecond
)

// casScript writes ARGV[2] to KEYS[1] if the key's tag is still ARGV[1]
// ("" for a missing key), with an expiry of ARGV[3] milliseconds when
// positive and none otherwise. It returns 1 when the value is written, or
// was already written by an earlier run of the same command, and when
// another write changed the key, {0, the key's value} ({0} when the key
// is gone), so that the next attempt needs no read of its own: under
// contention on a slow link, each retry is one round trip, not two.
var casScript = redis.NewScript(`
local cur = redis.call('GETRANGE', KEYS[1], 0, 7)
if cur == string.sub(ARGV[2], 1, 8) then
	return 1
end
if cur ~= ARGV[1] then
	return {0, redis.call('GET', KEYS[1])}
end
local ms = tonumber(ARGV[3])
if ms > 0 then
	redis.call('SET', KEYS[1], ARGV[2], 'PX', ms)
else
	redis.call('SET', KEYS[1], ARGV[2])
end
return 1
`)

// Options configures a Store. The zero value uses the documented defaults.
type Options struct {
	// KeyPrefix starts the key of every room: a room's state is kept under
	// KeyPrefix + room name. Default DefaultKeyPrefix ("waitingroom:").
	KeyPrefix string
	// TTL is how long a room's state is kept after its latest update; every
	// Update sets it again, so the state of a room in use never expires.
	// It is rounded up to whole milliseconds. Zero means DefaultTTL (24h);
	// negative means the state never expires. A state holding the list of
	// an event's shuffle (store.State.Places) is kept at least as long as
	// the room's history (store.HistoryMinutes and a day), so that the
	// record of the event's lottery lists its places as long as it can be
	// read.
	TTL time.Duration
}

// Store is a store.Store kept in Redis. Create it with New. It is safe for
// concurrent use by many goroutines and by many processes sharing the
// server.
type Store struct {
	client redis.UniversalClient
	prefix string
	ttlMS  int64 // expiry in milliseconds; 0 for none
	tags   bool  // a room's other keys carry its state's key as a hash tag

	cluster *redis.ClusterClient // client, if it is one
	closed  atomic.Bool
}

// New returns a Store that keeps state through client, which may be a
// *redis.Client, *redis.ClusterClient or failover (Sentinel) client. With a
// *redis.ClusterClient, all of a room's keys are in one slot (see the
// package documentation). The caller keeps ownership of client: Close does
// not close it.
func New(client redis.UniversalClient, opts Options) *Store {
	s := &Store{client: client, prefix: opts.KeyPrefix}
	if s.prefix == "" {
		s.prefix = DefaultKeyPrefix
	}
	s.cluster, _ = client.(*redis.ClusterClient)
	s.tags = s.cluster != nil && !strings.ContainsAny(s.prefix, "{}")
	switch ttl := opts.TTL; {
	case ttl == 0:
		s.ttlMS = DefaultTTL.Milliseconds()
	case ttl > 0:
		s.ttlMS = ttl.Milliseconds()
		if ttl%time.Millisecond != 0 {
			s.ttlMS++
		}
	}
	return s
}

// Update implements store.Store with optimistic concurrency (see the
// package documentation): fn may be called more than once, each time with a
// freshly read state, and is retried until the write commits or ctx is
// done. If fn returns an error, nothing is written and that error is
// returned unchanged. After Close, Update returns store.ErrClosed. Other
// errors wrap store.ErrAuth or store.ErrUnavailable when the store can tell
// what is wrong (see the package documentation).
func (s *Store) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	key := s.key(room)
	backoff := minBackoff
	var cur *[]byte // the value the latest conflict returned, if any
	for {
		if s.closed.Load() {
			return store.ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("waitingroom/redisstore: update %q: %w", key, s.classify(err))
		}
		ok, latest, err := s.try(ctx, key, fn, cur)
		if err != nil || ok {
			return err
		}
		cur = latest
		t := time.NewTimer(rand.N(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waitingroom/redisstore: update %q: %w", key, s.classify(ctx.Err()))
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// key returns the key of name: a room's name, or a room's name followed by
// '#' and a suffix, one of the room's other keys. On a Cluster (s.tags),
// such a key ends in a hash tag of the room's state key, unless that key
// holds a brace of its own.
func (s *Store) key(name string) string {
	room, _, other := strings.Cut(name, "#")
	if !other || !s.tags || strings.ContainsAny(room, "{}") {
		return s.prefix + name
	}
	return s.prefix + name + "{" + s.prefix + room + "}"
}

// try makes one attempt at updating key, from its value cur when the
// previous attempt's conflict returned it (else read here). It reports
// whether the write committed; false with a nil error means another write
// won the race, and latest is then the key's value that won it (nil
// when the reply did not say).
func (s *Store) try(ctx context.Context, key string, fn func(*store.State) error, cur *[]byte) (ok bool, latest *[]byte, err error) {
	var val []byte
	if cur != nil {
		val = *cur
	} else {
		val, err = await(ctx, func() ([]byte, error) { return s.client.Get(ctx, key).Bytes() })
		if err != nil && !errors.Is(err, redis.Nil) {
			return false, nil, fmt.Errorf("waitingroom/redisstore: read %q: %w", key, s.classify(err))
		}
	}
	tag := val[:min(len(val), tagLen)]
	st := &store.State{}
	if len(val) > tagLen {
		if st, err = store.Decode(val[tagLen:]); err != nil {
			return false, nil, fmt.Errorf("waitingroom/redisstore: %q: %w", key, err)
		}
	}
	if err := fn(st); err != nil {
		return false, nil, err
	}
	enc := store.MarshalState(st)
	next := binary.LittleEndian.AppendUint64(make([]byte, 0, tagLen+len(enc)), rand.Uint64())
	next = append(next, enc...)
	ttl := s.ttlMS
	if len(st.Places) > 0 && ttl > 0 {
		ttl = max(ttl, historyTTL) // a shuffle's list: as long as the record it belongs to
	}
	res, err := await(ctx, func() (any, error) { return casScript.Run(ctx, s.client, []string{key}, tag, next, ttl).Result() })
	if err != nil {
		return false, nil, fmt.Errorf("waitingroom/redisstore: write %q: %w", key, s.classify(err))
	}
	return casResult(res)
}

// casResult reads casScript's reply: committed, or the value that won
// the race (an empty one for a key that is gone).
func casResult(res any) (ok bool, latest *[]byte, err error) {
	switch v := res.(type) {
	case int64:
		return v == 1, nil, nil
	case []any:
		var b []byte
		if len(v) > 1 {
			if s, isStr := v[1].(string); isStr {
				b = []byte(s)
			}
		}
		return false, &b, nil
	}
	return false, nil, fmt.Errorf("waitingroom/redisstore: unexpected reply %T from the write script", res)
}

// await returns the result of f, a call of one command, or ctx's error as
// soon as ctx is done. go-redis applies ctx's deadline to the connection
// (with ContextTimeoutEnabled) but not its cancellation: without this, an
// Update cancelled while a stalled server holds a command would wait until
// the deadline or the client's ReadTimeout. An abandoned command finishes or
// times out in the background, and its connection goes back to the pool.
func await[T any](ctx context.Context, f func() (T, error)) (T, error) {
	if ctx.Done() == nil {
		return f()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Read implements store.Reader with one GET: it takes no lock and
// contends with no write. A missing key, or a value that does not decode,
// is the zero State. Its errors are classified as Update's. With Redis
// Cluster or Sentinel, Read must reach the primary, as Update does: a
// client that routes reads to replicas (ReadOnly, RouteByLatency,
// RouteRandomly, ReplicaOnly) may return a state older than a write that
// finished.
func (s *Store) Read(ctx context.Context, room string) (*store.State, error) {
	key := s.prefix + room
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("waitingroom/redisstore: read %q: %w", key, s.classify(err))
	}
	val, err := await(ctx, func() ([]byte, error) { return s.client.Get(ctx, key).Bytes() })
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("waitingroom/redisstore: read %q: %w", key, s.classify(err))
	}
	if len(val) > tagLen {
		st, err := store.Decode(val[tagLen:])
		if err != nil {
			return nil, fmt.Errorf("waitingroom/redisstore: read %q: %w", key, err)
		}
		return st, nil
	}
	return &store.State{}, nil
}

// Close implements store.Store. It does not close the client given to New.
// Later calls of Update and Read return store.ErrClosed. Close is idempotent and
// always returns nil.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

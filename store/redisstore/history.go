package redisstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/go-waitingroom/waitingroom/store"
)

var _ store.HistoryStore = (*Store)(nil)

// historySuffix follows the room's name in the name of its history's key
// (see Store.key): a sorted set apart from the state's key. Rooms of
// package waitingroom have no '#' in their names, so no state key is ever
// one.
const historySuffix = "#history"

// historyTTL is the expiry of a room's history, set again at every write:
// the retention and a day, so the history of a room no longer used goes.
const historyTTL = (store.HistoryMinutes + 24*60) * 60_000

// appendScript stores minutes in the sorted set KEYS[1]: ARGV holds, after
// the expiry in ms and the oldest minute to keep, pairs of a minute and a
// member (the minute in 8 bytes, then the record), each replacing what the
// set held for that minute.
var appendScript = redis.NewScript(`
for i = 3, #ARGV, 2 do
	redis.call('ZREMRANGEBYSCORE', KEYS[1], ARGV[i], ARGV[i])
	redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i+1])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`)

// AppendHistory implements store.HistoryStore: one script, atomic, on the
// room's history key (one key, so it works on Redis Cluster). A room's
// history is at most store.HistoryMinutes members of at most
// store.MaxRecordBytes + 8 bytes (about 100 bytes usually: some 5 MB a
// room for 30 days); it expires a day after its retention when no longer
// written. The ACL must allow ZADD, ZREMRANGEBYSCORE, PEXPIRE and ZRANGE
// besides the commands of Update.
func (s *Store) AppendHistory(ctx context.Context, room string, recs []store.Record) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if len(recs) == 0 {
		return nil
	}
	key := s.key(room + historySuffix)
	newest := recs[0].Minute
	args := make([]any, 2, 2+2*len(recs))
	for _, r := range recs {
		if len(r.Data) > store.MaxRecordBytes {
			return fmt.Errorf("waitingroom/redisstore: history record of %d bytes, more than %d", len(r.Data), store.MaxRecordBytes)
		}
		newest = max(newest, r.Minute)
		m := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(r.Data)), uint64(r.Minute))
		args = append(args, r.Minute, append(m, r.Data...))
	}
	args[0], args[1] = historyTTL, newest-store.HistoryMinutes+1
	_, err := await(ctx, func() (any, error) { return appendScript.Run(ctx, s.client, []string{key}, args...).Result() })
	if err != nil {
		return fmt.Errorf("waitingroom/redisstore: append history %q: %w", key, s.classify(err))
	}
	return nil
}

// ReadHistory implements store.HistoryStore: one ZRANGE by score.
func (s *Store) ReadHistory(ctx context.Context, room string, from, to int64) ([]store.Record, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if to <= from {
		return nil, nil
	}
	return s.readHistory(ctx, s.key(room+historySuffix), from, to)
}

// readHistory reads the minutes from to to (excluded) of the history at
// key, in order.
func (s *Store) readHistory(ctx context.Context, key string, from, to int64) ([]store.Record, error) {
	zs, err := await(ctx, func() ([]redis.Z, error) {
		return s.client.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{
			Key: key, ByScore: true, Start: strconv.FormatInt(from, 10), Stop: "(" + strconv.FormatInt(to, 10),
		}).Result()
	})
	if err != nil {
		return nil, fmt.Errorf("waitingroom/redisstore: read history %q: %w", key, s.classify(err))
	}
	out := make([]store.Record, 0, len(zs))
	for _, z := range zs {
		m, _ := z.Member.(string)
		if len(m) < 8 {
			continue // not written by this store
		}
		out = append(out, store.Record{Minute: int64(binary.BigEndian.Uint64([]byte(m[:8]))), Data: []byte(m[8:])})
	}
	return out, nil
}

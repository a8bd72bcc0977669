package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/go-waitingroom/waitingroom/store"
)

// classify wraps err, an error of the client, with the store error that says
// what is wrong and how to fix it (store.ErrAuth, store.ErrUnavailable),
// keeping err in the chain. It returns err unchanged when it cannot tell,
// and for a cancelled context, which is the caller's doing.
func (s *Store) classify(err error) error {
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return err
	case redis.IsAuthError(err):
		return fmt.Errorf("%w: Redis refused the credentials; check the client's Username and Password: %w", store.ErrAuth, err)
	case redis.IsPermissionError(err), redis.HasErrorPrefix(err, "The user executing the script can't run"):
		// The second is a command of the script that the ACL forbids.
		return fmt.Errorf("%w: the Redis user lacks a permission; its ACL must allow GET, EVAL, EVALSHA, GETRANGE and SET on the keys %s* (and for the history ZADD, ZREMRANGEBYSCORE, PEXPIRE and ZRANGE): %w", store.ErrAuth, s.prefix, err)
	case unavailable(err):
		if s.cluster != nil {
			// The slots may have moved (a failover): go-redis learns so
			// from a MOVED reply, but not from a primary it cannot reach,
			// which it would try again until its next periodic reload
			// (ClusterStateReloadInterval, a minute by default). The
			// reload runs in the background, at most one at a time.
			s.cluster.ReloadState(context.Background())
		}
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// unavailable reports whether err means that the server could not be
// reached, did not answer in time, or cannot serve for now (loading its
// data, a replica that is read-only during a failover, a cluster that is
// down).
func unavailable(err error) bool {
	var ne net.Error // dial errors, resets, timeouts, context.DeadlineExceeded
	return errors.As(err, &ne) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, redis.ErrPoolTimeout) ||
		redis.IsLoadingError(err) || redis.IsReadOnlyError(err) ||
		redis.IsClusterDownError(err) || redis.IsTryAgainError(err) ||
		redis.IsMasterDownError(err) || redis.IsMaxClientsError(err)
}

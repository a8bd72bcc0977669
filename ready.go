package waitingroom

import (
	"context"
)

// Ready reports whether the room works with its store: it returns nil once
// the latest sync succeeded, and that sync's error otherwise. The error
// says what is wrong: it wraps store.ErrNoSchema (the store's table or keys
// do not exist) or store.ErrAuth (credentials or permissions refused), a
// misconfiguration that lasts until someone fixes it; or
// store.ErrUnavailable (the store cannot be reached or does not answer in
// time), an outage that may pass. Test them with errors.Is.
//
// Ready does no I/O of its own while the background sync runs: it returns
// the outcome of the latest sync at once, or, before the first sync has
// finished (New starts it at once), waits for it until ctx is done. With a
// negative SyncInterval, Ready runs a sync itself when none has finished
// yet. A sync cancelled by its caller does not count.
//
// Call it after New to make a misconfigured or unreachable store fail the
// start-up, or from a readiness probe. Ready is safe for concurrent use.
// After Close it returns ErrClosed.
func (rm *Room) Ready(ctx context.Context) error {
	if rm.closed.Load() {
		return ErrClosed
	}
	return rm.syncer.Ready(ctx)
}

package share

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-waitingroom/waitingroom/store"
)

// Ready reports whether the instance works with its store: it returns nil
// once the latest sync succeeded, and that sync's error otherwise (which
// wraps store.ErrNoSchema, store.ErrAuth, store.ErrVersion or
// store.ErrUnavailable, as the store said). It does no I/O of its own
// while the background loop runs: it returns the outcome of the latest
// sync at once, or, before the first sync has finished, waits for it
// until ctx is done. Without a loop (SyncInterval not positive), it syncs
// itself when no sync has finished yet. A sync cancelled by its caller
// does not count. Once the Syncer is closing, it returns Config.Closed.
func (s *Syncer[S]) Ready(ctx context.Context) error {
	if s.closed.Load() {
		return s.cfg.Closed
	}
	done, known, err := s.ready.get()
	switch {
	case done:
		return err
	case s.cfg.SyncInterval <= 0:
		return s.Sync(ctx)
	}
	select {
	case <-known:
		_, _, err = s.ready.get()
		return err
	case <-s.stop:
		return s.cfg.Closed
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("waitingroom: ready: no answer from the store yet: %w: %w", store.ErrUnavailable, ctx.Err())
		}
		return fmt.Errorf("waitingroom: ready: no answer from the store yet: %w", ctx.Err())
	}
}

// readiness is what Ready reads: the outcome of the latest sync that was
// not cancelled by its caller. Its zero value is ready to use.
type readiness struct {
	mu    sync.Mutex
	known chan struct{} // closed once a sync has finished; made on first use
	done  bool          // a sync has finished
	err   error         // the latest sync's error; nil after a success
}

// set records the outcome of a sync.
func (r *readiness) set(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
	if !r.done {
		r.done = true
		close(r.ch())
	}
}

// get returns whether there is an outcome yet, a channel closed once
// there is, and the latest outcome.
func (r *readiness) get() (done bool, known <-chan struct{}, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done, r.ch(), r.err
}

func (r *readiness) ch() chan struct{} {
	if r.known == nil {
		r.known = make(chan struct{})
	}
	return r.known
}

// failure is the kind of a failed sync, as the room logs it.
type failure int

const (
	failOther       failure = iota // an error the store did not classify
	failUnavailable                // store.ErrUnavailable
	failNoSchema                   // store.ErrNoSchema
	failAuth                       // store.ErrAuth
	failVersion                    // store.ErrVersion
)

func failureOf(err error) failure {
	switch {
	case errors.Is(err, store.ErrNoSchema):
		return failNoSchema
	case errors.Is(err, store.ErrAuth):
		return failAuth
	case errors.Is(err, store.ErrUnavailable):
		return failUnavailable
	case errors.Is(err, store.ErrVersion):
		return failVersion
	}
	return failOther
}

// misconfigured reports whether f lasts until someone fixes the store's
// configuration.
func (f failure) misconfigured() bool { return f == failNoSchema || f == failAuth || f == failVersion }

// message is the start of the line the room logs when a sync fails so.
func (f failure) message() string {
	switch f {
	case failNoSchema:
		return "waitingroom: store misconfigured: its table or keys do not exist (not an outage: it lasts until they are created)"
	case failAuth:
		return "waitingroom: store misconfigured: it refused the credentials or a permission (not an outage: it lasts until they are fixed)"
	case failUnavailable:
		return "waitingroom: store unreachable"
	case failVersion:
		return "waitingroom: the shared state is of another release's format (not an outage: it lasts until every instance of the room runs releases that read each other's formats)"
	}
	return "waitingroom: store failed"
}

// line is the start of the line the room logs when a sync fails so,
// with err, under ctx: a sync that got no answer within its deadline may
// have reached a store too slow to answer (a fleet starting at once on a
// loaded one), which the room cannot tell from one it cannot reach.
func (f failure) line(ctx context.Context, err error) string {
	if f == failUnavailable && (errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded)) {
		return "waitingroom: store unreachable or too slow: no answer within the sync's deadline"
	}
	return f.message()
}

// String names f in the room's log ("cause").
func (f failure) String() string {
	return [...]string{"other", "unavailable", "no_schema", "auth", "version"}[f]
}

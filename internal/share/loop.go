package share

import (
	"context"
	mrand "math/rand/v2"
	"time"
)

// loop syncs every SyncInterval (up to 10 % sooner, so instances do not
// sync in step), and sooner when woken (Wake), until the Syncer closes. A
// failing store is retried with backoff (maxBackoff); the sync logs the
// outage once when it begins and once when it ends. Closing cancels the
// sync in flight.
func (s *Syncer[S]) loop() {
	defer close(s.loopDone)
	base, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		select {
		case <-s.stop:
			stop()
		case <-base.Done():
		}
	}()
	interval := s.cfg.SyncInterval
	wait := time.Duration(0)
	failures := 0
	var began time.Time
	for {
		if !s.pause(wait, began, failures == 0) {
			return
		}
		began = time.Now()
		ctx, cancel := context.WithTimeout(base, SyncTimeout(interval))
		err := s.Sync(ctx)
		cancel()
		if err != nil {
			failures++
		} else {
			failures = 0
		}
		// Back off, but retry within the grace that follows an outage, so
		// that every instance brings its counts in before anyone admits.
		wait = interval << min(failures, 10)
		wait = min(wait, maxBackoff(interval))
		wait = time.Duration(float64(wait) * (0.9 + 0.1*mrand.Float64()))
	}
}

// pause waits wait before the loop's next sync, or less if wakeable and
// woken meanwhile: then until WakeGap after the previous sync began
// (began), at once if that is past. It reports false when the Syncer is
// closing.
func (s *Syncer[S]) pause(wait time.Duration, began time.Time, wakeable bool) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	var wake <-chan struct{}
	if wakeable {
		wake = s.wake
	}
	select {
	case <-s.stop:
		return false
	case <-t.C:
		return true
	case <-wake:
	}
	if d := time.Until(began.Add(WakeGap(s.cfg.SyncInterval))); d > 0 {
		t.Reset(d)
		select {
		case <-s.stop:
			return false
		case <-t.C:
		}
	}
	return true
}

// Close is Shutdown bounded by the time a sync is given (SyncTimeout).
func (s *Syncer[S]) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), SyncTimeout(s.cfg.SyncInterval))
	defer cancel()
	_ = s.Shutdown(ctx)
}

// Shutdown closes the Syncer: Sync, Update and Ready return Config.Closed
// from then on. It stops the background loop, cancelling the sync in
// flight, and then, if the instance's latest sync went through, makes its
// last sync: it brings in the admissions made since and takes the
// instance's record out of the shared state, its grant back to the pool
// (nobody is let in from the grant, or a pick, from its start). ctx
// bounds the wait, and the last sync: Shutdown returns ctx's error if it
// ends first, else the last sync's error (nil if it went through or none
// was due). An instance that stops without a last sync is dropped from
// the state an instance TTL later, and the grant it held counts as
// admitted then. Calls after the first wait for the first's last sync, as
// long as their ctx allows.
func (s *Syncer[S]) Shutdown(ctx context.Context) error {
	s.once.Do(func() {
		s.closed.Store(true)
		close(s.stop)
		if !s.started {
			close(s.loopDone)
		}
		go func() {
			defer close(s.left)
			select {
			case <-s.loopDone:
			case <-ctx.Done():
				s.leftErr = ctx.Err()
				return
			}
			s.leftErr = s.leave(ctx)
		}()
	})
	select {
	case <-s.left:
		return s.leftErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SyncTimeout bounds one background sync of a room syncing every
// interval, and Close's last sync.
func SyncTimeout(interval time.Duration) time.Duration { return max(2*interval, 2*time.Second) }

// maxBackoff is the longest wait between failed background syncs: long
// enough that instances contending on a slow store let it clear, short
// enough that every instance is back within graceAfterGap.
func maxBackoff(interval time.Duration) time.Duration { return max(2*interval, 2*time.Second) }

// WakeGap is the least time between the beginnings of two syncs of the
// background loop of a room syncing every interval when Wake wakes it: a
// tenth of the interval.
func WakeGap(interval time.Duration) time.Duration { return interval / 10 }

// GraceAfterGap is how long nobody is admitted after the shared state was
// lost or the store was unreachable, in a room syncing every interval:
// long enough for every live instance to sync, through its retry backoff,
// and bring its counts in. With interval not positive (the application
// syncs the room), two instance TTLs.
func GraceAfterGap(interval time.Duration) time.Duration {
	if interval <= 0 {
		return 2 * InstanceTTL(interval) // syncs are the caller's: assume a few seconds
	}
	return SyncTimeout(interval) + maxBackoff(interval) + interval
}

// InstanceTTL is how long an instance that stopped syncing keeps its share
// and grant, in a room syncing every interval: three intervals, three
// seconds at least.
func InstanceTTL(interval time.Duration) time.Duration {
	return max(3*interval, 3*time.Second)
}

// graceAfterGap is GraceAfterGap in ms.
func (s *Syncer[S]) graceAfterGap() int64 { return GraceAfterGap(s.cfg.SyncInterval).Milliseconds() }

// instanceTTL is InstanceTTL in ms.
func (s *Syncer[S]) instanceTTL() int64 { return InstanceTTL(s.cfg.SyncInterval).Milliseconds() }

// PickWait is how soon, in ms, a visitor of a bucket the fleet's reserve
// covers is told to come back after asking, in a room syncing every
// interval: the pick is in the view within three syncs (the instance's
// mailbox write, the round, the view read), a sync a second when the
// application syncs the room itself.
func PickWait(interval time.Duration) int64 {
	return 3 * SyncEvery(interval)
}

// SyncEvery is how often, in ms, a room syncing every interval syncs: a
// second when the application syncs it itself (interval not positive).
func SyncEvery(interval time.Duration) int64 { return syncEvery(interval.Milliseconds()) }

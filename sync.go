package waitingroom

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/go-waitingroom/waitingroom/internal/share"
	"github.com/go-waitingroom/waitingroom/store"
)

// The room's side of the sync (internal/share): the room calls its Syncer
// (Sync, Update, Ready, Shutdown) and answers it as its Host (settle,
// installed): the live settings and the rules they mean, and what the
// room learns from each view the sync installs.

// view is what the room knows of the whole room as of its latest sync:
// the shared state's view and the live settings. Requests read it
// without a lock (Syncer.Snapshot).
type view = share.Snapshot[Settings]

// Sync runs one sync with the store now: it merges this instance's counts
// since the previous sync, returns its unused grant and takes a new one.
// The background loop calls it every SyncInterval, and sooner after a
// revoke; with a negative SyncInterval, tests and simulators call it
// (under their own clock). Calls are serialized. On error nothing is lost:
// the counts are kept for the next sync. A failed sync's error wraps the
// store's (see Ready); one whose ctx's deadline passed wraps
// store.ErrUnavailable. The room logs the first failure of an outage at
// level ERROR, and the recovery. A cancelled sync is no failure of the
// store: it is neither logged as one nor counted in Counters.SyncErrors.
func (rm *Room) Sync(ctx context.Context) error {
	if rm.closed.Load() {
		return ErrClosed
	}
	return rm.syncer.Sync(ctx)
}

// Update changes the room's live settings: fn gets the current ones and
// changes them in place. The change goes into the shared state, so every
// instance follows it at its next sync; this instance follows at once.
// fn may be called more than once (stores may retry) and must only change
// its argument. Invalid settings make Update fail with an error wrapping
// ErrInvalidConfig, and nothing changes.
func (rm *Room) Update(ctx context.Context, fn func(*Settings)) error {
	if rm.closed.Load() {
		return ErrClosed
	}
	var (
		s              Settings
		epoch, version uint64
	)
	err := rm.syncer.Update(ctx, func(st *store.State, restore *Settings) error {
		now := rm.now()
		s = rm.liveSettings(st, restore, now)
		before, renewed := s.sessionAt(now)
		floors, flow, events := s.floors, s.flow(), slices.Clone(s.Events)
		s.floors = share.Floors{} // the caller's settings are the public fields
		fn(&s)
		s.floors = floors
		s.follow(before, renewed, flow, now)
		if s.QueueingMethod == "" {
			s.QueueingMethod = FIFO
		}
		if err := cmp.Or(s.Validate(), shuffleKept(events, s.Events, time.UnixMilli(now))); err != nil {
			return err
		}
		s.Challenge = cloneChallenge(s.Challenge) // the caller's stays theirs
		writeSettings(st, s)
		st.Version++
		epoch, version = st.Epoch, st.SettingsVersion
		return nil
	})
	if err != nil {
		return fmt.Errorf("waitingroom: update: %w", err)
	}
	rm.syncer.Updated(s, epoch, version)
	rm.log.Info("waitingroom: settings updated", "settings", loggable(s))
	return nil
}

// Close stops the background sync and makes Sync, Update and Ready return
// ErrClosed, and Handler answer with Config.ErrorHandler. It cancels the
// sync in flight, without logging an error for it, and waits for the
// background loop to stop (at once with the stores of this module).
//
// Then, if the instance's latest sync went through, Close makes its last
// one, waiting for it as long as a sync is given (2 s or two
// SyncIntervals; Shutdown: as long as its context allows): it brings in
// the admissions made since, and hands the instance's grant back to the
// pool. An instance that stops without it is dropped from the state an
// instance TTL later, its grant counted as admitted (docs/design.md,
// "Instances that stop"). It does not close the store, which the caller
// owns. Close is idempotent, and returns nil.
func (rm *Room) Close() error {
	rm.closed.Store(true)
	rm.syncer.Close()
	return nil
}

// Shutdown is Close bounded by ctx, as http.Server's Shutdown: it makes
// Sync, Update and Ready return ErrClosed and Handler answer with
// Config.ErrorHandler, stops the background sync, and makes the
// instance's last sync, which hands its grant back to the pool, waiting
// for it until ctx is done. It returns ctx's error if ctx ended first (the
// last sync is cancelled), the last sync's error if it failed, and nil if
// it went through or none was due (the instance never synced, or its
// latest sync failed). Calls after the first wait for the first one's
// last sync. It does not close the store.
func (rm *Room) Shutdown(ctx context.Context) error {
	rm.closed.Store(true)
	return rm.syncer.Shutdown(ctx)
}

// settle returns the live settings in st and the rules they mean at now
// (share.Host).
func (rm *Room) settle(st *store.State, now int64, restore *Settings) (Settings, share.Rules) {
	s := rm.liveSettings(st, restore, now)
	p := rm.policyAt(&s, now)
	r := rm.rules(&p, &s)
	r.Since, _ = eventSpan(s.Events, now)
	r.Since = max(r.Since, s.floors.Flow)
	return s, r
}

// installed learns what a new view v brings (share.Host): the revoked
// sessions, the chances remembered turned over, the history's sample, and
// the log lines of a change of settings or phase.
func (rm *Room) installed(old, v *view) {
	times := rm.sessionTimes(&v.Settings, share.Floors{})
	rm.learnRevoked(v.Revoked, v.At, times.Window+times.Hold+times.Margin)
	rm.local.Lock()
	// A chance is remembered while the count it left counts: a waiting
	// window after the end of its check-in slot.
	rm.chances.Turn(v.At, rm.waitWindow+1000*share.SlotSeconds)
	p := rm.policyAt(&v.Settings, v.At)
	if v.Instances > 1 && (p.TotalActiveUsers < rm.carved[0] || p.NewUsersPerMinute < rm.carved[1]) {
		rm.local.SetGrant(nil) // kept through this sync under higher limits, as others: none until the next's
	}
	rm.carved = [2]int{p.TotalActiveUsers, p.NewUsersPerMinute}
	rm.local.Unlock()
	if old.SettingsVersion != 0 && old.SettingsVersion != v.SettingsVersion {
		rm.log.Info("waitingroom: settings changed", "settings", loggable(v.Settings))
	}
	rm.logPhase(old, v)
	rm.history.observe(Sample{At: time.UnixMilli(v.At), Active: int(v.Active), Waiting: int(v.Waiting),
		AdmittedThisMinute: int(v.AdmittedThisMinute), OutflowPerMinute: v.PerMinute})
}

// liveSettings returns the room's live settings from st, first writing
// this instance's Config into it when st is new, or was initialised from
// a different Config (a deploy that changed it) and this instance has not
// synced yet: later, it follows another instance's, as every instance of
// the earlier deploy does (TestDeployOfAnotherConfig). A state recreated after a
// loss gets the settings this instance last knew (restore), so live
// changes survive.
func (rm *Room) liveSettings(st *store.State, restore *Settings, now int64) Settings {
	if restore != nil {
		writeSettings(st, *restore)
		st.ConfigHash = rm.configHash
		return *restore
	}
	var w storedSettings
	err := json.Unmarshal(st.Settings, &w)
	s := w.Settings
	// Floors an event's opening or end set are kept from then on, what
	// the events become (TestFloorsOutliveTheirEvents).
	s.floors = w.Floors
	s.floors = s.sessionFloors(now)
	valid := err == nil && s.QueueingMethod != "" && s.validateWith(rm.checkTemplate) == nil
	if deploy := st.ConfigHash != rm.configHash && rm.syncer.Snapshot().SettingsVersion == 0; deploy || !valid {
		c := rm.cfg.settings()
		if deploy && valid {
			rm.log.Warn("waitingroom: this instance's Config is not the one the room's live settings came from: they are replaced by its own, and changes made since through Update or the admin API are lost")
		}
		if valid {
			c.floors = s.floors
			before, renewed := s.sessionAt(now)
			c.follow(before, renewed, s.flow(), now)
		}
		writeSettings(st, c)
		if deploy {
			st.ConfigHash = rm.configHash
		}
		return c
	}
	if s.floors != w.Floors {
		writeSettings(st, s)
	}
	return s
}

// rules are what policy p of settings s means to the shared state's
// algorithm.
func (rm *Room) rules(p *policy, s *Settings) share.Rules {
	r := share.Rules{
		TotalActiveUsers:  int64(p.TotalActiveUsers),
		NewUsersPerMinute: int64(p.NewUsersPerMinute),
		Layout:            p.method.layout,
		Ordered:           p.method.ordered,
		Closed:            p.Suspended || p.QueueAll || p.prequeue,
		Lottery:           p.lottery,
		Session:           p.session,
		Renew:             p.renew,
		Times:             rm.sessionTimes(s, p.floors),
		Refresh:           rm.cfg.RefreshInterval.Milliseconds(),
	}
	if !p.method.ordered && !p.method.passes && p.method.layout != nil {
		r.Odds = func(v *share.View, now int64) float64 { return drawOdds(v, p, r.Refresh, now) }
	}
	if p.lottery[1] != 0 {
		r.Slots = func(v *share.View, now int64) float64 { return intervalSlots(v, p, r.Refresh, now) }
	}
	for _, e := range s.Events {
		if e.ShuffleAtStart && !e.Suspended {
			r.Shuffles = append(r.Shuffles, [2]int64{e.PrequeueStart.Unix(), e.End.Unix()})
		}
	}
	if p.event != nil {
		r.Event = p.event.Name
	}
	return r
}

// sessionTimes are the lengths that decide how long session records count
// and are kept under settings s. The margin covers the reports of other
// instances still on their way: a request one of them let in just before
// the session would have ended reaches the state within a sync interval
// and its round trip.
func (rm *Room) sessionTimes(s *Settings, floors share.Floors) share.SessionTimes {
	return share.SessionTimes{
		Window: rm.countWindow(s),
		Margin: max(rm.cfg.SyncInterval, 0).Milliseconds() + 1000,
		Hold:   rm.hold,
		Floors: floors,
	}
}

// now is the room's time in Unix ms: this instance's clock plus the offset
// that aligns it with the shared clock.
func (rm *Room) now() int64 { return rm.syncer.Now() }

// localNow is this instance's clock in Unix ms: Config.Now, or the wall
// clock read as time.Now reads it when Config.Now was left nil.
func (rm *Room) localNow() int64 {
	if rm.sysClock {
		return share.WallMillis()
	}
	return rm.cfg.Now().UnixMilli()
}

// loggable is s for a log line, by the names of its JSON (no Go structs
// or pointers): templates, the room's and its events', are given by their
// size rather than written out.
func loggable(s Settings) map[string]any {
	short := func(t string) string {
		if t == "" {
			return ""
		}
		return fmt.Sprintf("(%d bytes)", len(t))
	}
	s.Template, s.floors = short(s.Template), share.Floors{}
	s.Events = slices.Clone(s.Events)
	for i := range s.Events {
		s.Events[i].Template = short(s.Events[i].Template)
	}
	var m map[string]any
	b, _ := json.Marshal(s)
	_ = json.Unmarshal(b, &m)
	return m
}

func writeSettings(st *store.State, s Settings) {
	st.Settings, _ = json.Marshal(storedSettings{s, s.floors})
	st.SettingsVersion++
}

func policyEffect(p StoreErrorPolicy) string {
	if p == FailOpen {
		return "fail-open: everyone passes, uncounted, until it is back"
	}
	return "fail-closed: admitted visitors pass, everyone else waits until it is back"
}

// sameEvent reports whether a and b, events of two views' settings (so
// never the same pointer), are the same event: events do not overlap, so
// their names and starts tell them apart.
func sameEvent(a, b *Event) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Name == b.Name && a.Start.Equal(b.Start)
}

// logPhase logs the room's state changes between two views: queueing
// started or stopped, an event's pre-queue or start or end.
func (rm *Room) logPhase(old, v *view) {
	if old.At == 0 {
		return
	}
	was, is := rm.policyAt(&old.Settings, old.At), rm.policyAt(&v.Settings, v.At)
	switch {
	case old.Waiting == 0 && v.Waiting > 0:
		rm.log.Info("waitingroom: queueing started", "waiting", v.Waiting, "active", v.Active, "limit", is.TotalActiveUsers)
	case old.Waiting > 0 && v.Waiting == 0:
		// Not "stopped": a room still full (a limit lowered, or the
		// last ones waiting gave up) queues its next arrival.
		rm.log.Info("waitingroom: nobody waiting", "active", v.Active, "limit", is.TotalActiveUsers)
	}
	if !sameEvent(was.event, is.event) || was.prequeue != is.prequeue {
		switch {
		case is.event != nil && is.prequeue:
			rm.log.Info("waitingroom: event pre-queue opened", "event", is.event.Name, "start", is.event.Start)
		case is.event != nil:
			rm.log.Info("waitingroom: event started", "event", is.event.Name, "end", is.event.End, "shuffle", is.event.ShuffleAtStart)
		default:
			rm.log.Info("waitingroom: event ended", "event", was.event.Name)
		}
	}
}

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

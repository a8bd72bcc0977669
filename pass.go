package waitingroom

import (
	"net/http"
	"time"

	"github.com/go-waitingroom/waitingroom/internal/hook"
	"github.com/go-waitingroom/waitingroom/store"
)

// The room's side of forwardauth's passes, and the rest of what a
// forward-auth handler needs of a room (package internal/hook says why
// it goes through there).
func init() {
	hook.FrontOf = func(room any) hook.Front {
		rm := room.(*Room)
		return hook.Front{CookieName: rm.cookieName, CookieAttrs: rm.cookieAttrs, TrustedProxies: rm.cfg.TrustedProxies, Logger: rm.log}
	}
	hook.ExpectPasses = func(room any, d time.Duration) error { return room.(*Room).expectPasses(d) }
	hook.GivePass = givePass
	hook.PageHandler = func(room any, next http.Handler) http.Handler {
		return &handler{rm: room.(*Room), next: next, page: true}
	}
}

// expectPasses notes that a handler in front of the room gives passes
// that last up to d (hook.ExpectPasses): a revoke holds the slot until
// the passes any instance may still give have expired (passRevoke). It
// refuses a d whose hold could reach further ahead than the shared state
// believes a sign of life (maxClockLead).
func (rm *Room) expectPasses(d time.Duration) error {
	interval := rm.cfg.SyncInterval
	hold := time.Duration(revokeReach(interval))*time.Millisecond + d
	if hold > maxClockLead*time.Millisecond {
		return invalid("Pass.Duration %v and SyncInterval %v: a revoke would hold the visitor's slot for up to %v, longer than the %v ahead the shared state believes; shorten either",
			d, interval, hold, maxClockLead*time.Millisecond)
	}
	for {
		old := rm.passes.Load()
		if d.Milliseconds() <= old || rm.passes.CompareAndSwap(old, d.Milliseconds()) {
			return nil
		}
	}
}

// givePass is hook.GivePass: it counts a pass that lasts up to d, given
// now to the admitted visitor whose response w writes, as their
// session's sign of life until it expires. The pass ends before d has
// passed from now (at the end of the second before the one that holds
// now+d: nginx checks expiry by the second), and no later than the last
// whole second of a session that ends whatever the visitor does, nor
// than the end of the session's record: a revoke on another instance
// holds the slot only until the passes that any instance may have given
// before it learnt of the revoke have expired, and this instance lets
// the revoked cookie in until then (revokedFrom), but no longer on a
// pass.
func givePass(w http.ResponseWriter, d time.Duration) (last, now int64, ok bool) {
	tc := handlerWriter(w)
	if tc == nil {
		return 0, 0, false
	}
	rm := tc.rm
	now = rm.now()
	v := rm.syncer.Snapshot()
	p := rm.policyOf(v, now)
	last = floorDiv(now+d.Milliseconds(), 1000) - 1
	if !p.renew {
		last = min(last, floorDiv(tc.acceptedAt+p.session, 1000)-1)
	}
	if last < floorDiv(now, 1000) {
		return 0, 0, false
	}
	x := store.Session{ID: tc.id, Admitted: floorDiv(tc.acceptedAt, 1000), Seen: last, End: sessionEnd(p, tc.acceptedAt)}
	rm.local.Lock()
	defer rm.local.Unlock()
	if k, found := rm.local.Lookup(&v.View, tc.id); found && k.End != 0 && k.End-1 < last {
		if last = k.End - 1; last < floorDiv(now, 1000) {
			return 0, 0, false
		}
		x.Seen = last
	}
	rm.local.Report(x)
	return last, now, true
}

// passRevoke is the record of a revoke at now (Unix ms) of visitor id,
// admitted at Unix second admitted, while passes of up to d ms are given:
// the session seen through the last second of any pass that any instance
// may still give it, and ended just after. This instance's passes end
// within d of now; another instance gives passes until it learns of the
// revoke, within revokeReach of now, each good for d at most. The sync
// takes the record for a revoke (revokedFrom): every instance that learnt
// of it refuses the cookie from its end, and gives no pass good past it
// (givePass).
func (rm *Room) passRevoke(id uint64, admitted, now, d int64) store.Session {
	reach := revokeReach(rm.cfg.SyncInterval)
	last := floorDiv(now+reach+d, 1000) - 1
	return store.Session{ID: id, Admitted: admitted, Seen: last, End: last + 1}
}

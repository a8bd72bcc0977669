package waitingroom

import (
	"time"

	"github.com/go-waitingroom/waitingroom/internal/hook"
	"github.com/go-waitingroom/waitingroom/store"
)

// What package admin gets from a room through internal/hook: the parts of
// the room an operator's tools read and applications have no use for.
func init() {
	hook.HistoryStore = func(room any) store.HistoryStore {
		hs, _ := room.(*Room).store.(store.HistoryStore)
		return hs
	}
	hook.Unwritten = func(room any) []store.Tally { return room.(*Room).syncer.Unwritten() }
	hook.PreviewPage = func(room, settings any, now time.Time, est any, lang string) hook.Page {
		return room.(*Room).previewPage(settings.(*Settings), now.UnixMilli(), est.(Estimate), lang)
	}
}

// previewPage is the waiting page a waiting visitor would get at now under
// s, with the wait e: the page Respond writes for such a decision, neither
// counted nor cached (see hook.PreviewPage).
func (rm *Room) previewPage(s *Settings, now int64, e Estimate, lang string) hook.Page {
	if lang == "" {
		lang = rm.cfg.Page.Language
	}
	d := decision{Outcome: outcomeWaiting, Estimate: e, RefreshAfter: rm.cfg.RefreshInterval.Truncate(time.Second), at: now, now: now, last: now}
	if s.QueueingMethod == Reject {
		d.Outcome, d.RefreshAfter = outcomeRejected, 0
	}
	pol := rm.policyAt(s, now)
	d.policy = &pol
	return hook.Page{Status: pol.queueingStatusCode(), Data: *rm.pageData(d, lang), Template: pol.tmpl, Language: lang}
}

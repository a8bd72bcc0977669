package waitingroom

import (
	"github.com/go-waitingroom/waitingroom/internal/hook"
	"github.com/go-waitingroom/waitingroom/store"
)

// What package admin gets from a room through internal/hook: the parts of
// the room an operator's tools read and applications have no use for.
func init() {
	hook.HistoryStore = func(room any) store.HistoryStore { return room.(*Room).kept.store }
	hook.Unwritten = func(room any) []store.Tally {
		rm := room.(*Room)
		return append(rm.kept.pending(), cloneTallies(rm.view.Load().tallies)...)
	}
}

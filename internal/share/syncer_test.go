package share

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
)

// testHost is a Host whose settings are a name, with the rules of FIFO
// at 10 a minute, and which records what it is told.
type testHost struct {
	restored  atomic.Int32
	installed atomic.Int32
	lastOld   atomic.Pointer[Snapshot[string]]
}

func (h *testHost) host() Host[string] {
	return Host[string]{
		Settle: func(st *store.State, now int64, restore *string) (string, Rules) {
			if restore != nil {
				h.restored.Add(1)
			}
			st.ConfigHash = 1
			return "settings", limits(fifo, 10, 10)
		},
		Installed: func(old, _ *Snapshot[string]) {
			h.installed.Add(1)
			h.lastOld.Store(old)
		},
	}
}

func newTestSyncer(t *testing.T, clk *testclock.Clock, st store.Store, h *testHost) *Syncer[string] {
	s := New(Config{
		Name: "room", ID: "a", Store: st, Log: slog.New(slog.DiscardHandler),
		Clock: func() int64 { return clk.Now().UnixMilli() }, SyncInterval: -1, WaitWindow: 44_000,
		OutageEffect: "as the test says", Closed: errors.New("closed"),
	}, "initial", h.host())
	t.Cleanup(s.Close)
	return s
}

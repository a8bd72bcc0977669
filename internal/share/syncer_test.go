package share

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// Updated installs a settings transaction's settings unless the snapshot
// holds a later version of the same state already; a sync that read
// older ones than it installed keeps them, and drops its grant.
func TestUpdated(t *testing.T) {
	clk := testclock.New(time.UnixMilli(1_790_000_000_000))
	s := newTestSyncer(t, clk, memstore.New(), &testHost{})
	require.NoError(t, s.Sync(context.Background()))
	epoch, version := s.Snapshot().SettingsEpoch, s.Snapshot().SettingsVersion
	require.NotZero(t, epoch)

	for _, tc := range []struct {
		name           string
		epoch, version uint64
		want           string
	}{
		{"a later version", epoch, version + 2, "a later version"},
		{"an earlier one, after it", epoch, version + 1, "a later version"},
		{"the same one again", epoch, version + 2, "a later version"},
		{"another epoch's", epoch + 1, 1, "another epoch's"},
	} {
		s.Updated(tc.name, tc.epoch, tc.version)
		assert.Equal(t, tc.want, s.Snapshot().Settings, tc.name)
	}

	// A sync begun after the transaction that still reads an earlier
	// version (a store that lost the write) installs the store's
	// settings, with its grant.
	s.Updated("lost", epoch, 1<<40)
	require.NoError(t, s.Sync(context.Background()))
	assert.Equal(t, "settings", s.Snapshot().Settings)
	assert.Equal(t, version, s.Snapshot().SettingsVersion)
	assert.NotZero(t, s.Local().Grant().Total())
}

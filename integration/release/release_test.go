package release

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
)

// settle bounds how long the processes may take to agree on the room:
// many syncs of 200 ms, on a loaded machine.
const settle = 20 * time.Second

// binary is a build of cmd/waitingroom.
type binary struct {
	name string // "v0.1.0", "current"
	path string
}

// TestPrevious builds the previous release's cmd/waitingroom and the
// checkout's, and hands a room over from one to the other, both ways: an
// upgrade (the previous release first) and a rollback (the current code
// first).
func TestPrevious(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: builds the previous release and runs four processes")
	}
	version, commit := previousRelease(t)
	root := checkout(t, version, commit)

	opts, err := redis.ParseURL(servicetest.Redis.URL())
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		servicetest.Unavailable(t, servicetest.Redis, err)
	}

	dir := t.TempDir()
	start := time.Now()
	previous := binary{version, buildPrevious(t, root, commit, dir)}
	t.Logf("built %s (commit %s) in %v", version, commit, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	current := binary{"current", buildCurrent(t, dir)}
	t.Logf("built the checkout's in %v", time.Since(start).Round(time.Millisecond))

	t.Run("upgrade", func(t *testing.T) {
		t.Parallel()
		rollover(t, rdb, previous, current)
	})
	t.Run("rollback", func(t *testing.T) {
		t.Parallel()
		rollover(t, rdb, current, previous)
	})
}

// rollover runs a room on first, lets one visitor in and queues two, then
// starts second beside it on the same store, and stops first: every
// visitor keeps what first gave it, as second sees it.
func rollover(t *testing.T, rdb *redis.Client, first, second binary) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	room := "release-" + hex.EncodeToString(b[:])
	prefix := "wrrelease:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		keys, err := rdb.Keys(context.Background(), prefix+"*").Result()
		assert.NoError(t, err)
		if len(keys) > 0 {
			assert.NoError(t, rdb.Del(context.Background(), keys...).Err())
		}
	})
	// The room's settings in a config file, the rest as flags: both
	// releases read both. One visitor at a time, so that a visitor the
	// second process took for a new one would wait.
	config := filepath.Join(t.TempDir(), "room.yaml")
	require.NoError(t, os.WriteFile(config, fmt.Appendf(nil, `demo: true
name: %s
totalActiveUsers: 1
newUsersPerMinute: 1
refreshInterval: 1s
syncInterval: 200ms
store: %s
storePrefix: %q
`, room, servicetest.Redis.URL(), prefix), 0o600))
	args := []string{"-config", config, "-key", hexKey}

	p1 := startProc(t, first.name, first.path, args...)
	in, wait1, wait2 := newVisitor(t, "the admitted visitor"), newVisitor(t, "the first waiting"), newVisitor(t, "the second waiting")
	expectIn(t, in, p1)
	expectWaiting(t, wait1, p1, 200)
	expectWaiting(t, wait2, p1, 200)
	eventually(t, p1, "the room in the store", func(s status) bool { return s.Active == 1 && s.Waiting == 2 })

	// The second process joins: each reads the state the other writes.
	p2 := startProc(t, second.name, second.path, args...)
	for _, p := range []*proc{p1, p2} {
		eventually(t, p, "both processes in the room", func(s status) bool {
			return s.Instances == 2 && s.Active == 1 && s.Waiting == 2
		})
	}
	// Its visitors keep what the first process gave them: the cookie
	// reads, the admitted visitor is not let in (counted) again, and the
	// waiting ones keep their tickets, not queued again: the room still
	// counts one active and two waiting, and the second process counts
	// neither an admission nor a visitor queued.
	expectIn(t, in, p2)
	expectWaiting(t, wait1, p2, 200)
	expectWaiting(t, wait2, p2, 200)
	for _, p := range []*proc{p1, p2} {
		s := afterSyncs(t, p)
		assert.Equal(t, [3]int{2, 1, 2}, [3]int{s.Instances, s.Active, s.Waiting}, "%s: instances, active, waiting", p.name)
	}
	s2 := afterSyncs(t, p2)
	assert.Zero(t, s2.Counters.Admitted, "%s let a visitor in (again)", second.name)
	assert.Zero(t, s2.Counters.Queued, "%s queued a visitor (again)", second.name)

	// The settings the admin API of one changes, the other follows.
	var patched map[string]any
	require.NoError(t, p2.adminDo("PATCH", "/settings", []byte(`{"queueingStatusCode":202}`), &patched))
	eventually(t, p1, "the settings changed on "+second.name, func(s status) bool { return s.Settings.QueueingStatusCode == 202 })
	expectWaiting(t, wait1, p1, 202)

	// The first process goes, as in a rolling restart.
	p1.stop()
	expectIn(t, in, p2)
	expectWaiting(t, wait1, p2, 202)
	expectWaiting(t, wait2, p2, 202)
	s2 = afterSyncs(t, p2)
	assert.Equal(t, [2]int{1, 2}, [2]int{s2.Active, s2.Waiting}, "%s: active, waiting", second.name)
	assert.Zero(t, s2.Counters.Admitted, "%s let a visitor in (again)", second.name)
	assert.Zero(t, s2.Counters.Queued, "%s queued a visitor (again)", second.name)

	// Neither refused the other's state.
	for _, p := range []*proc{p1, p2} {
		out := p.out.String()
		assert.False(t, strings.Contains(out, "cause=version") || strings.Contains(out, "encoding version"),
			"%s refused the state the other release wrote:\n%s", p.name, out)
	}
}

// expectIn has v visit p and checks that it is let in.
func expectIn(t *testing.T, v *visitor, p *proc) {
	t.Helper()
	got, err := v.visit(p)
	require.NoError(t, err)
	require.Equal(t, page{status: 200, in: true}, got, "%s at %s", v.name, p.name)
}

// expectWaiting has v visit p and checks that it waits, with code and a
// place in line. (The place is only accurate to the minute of arrival:
// whether it is the one v had, the room's counts tell.)
func expectWaiting(t *testing.T, v *visitor, p *proc, code int) {
	t.Helper()
	got, err := v.visit(p)
	require.NoError(t, err)
	require.False(t, got.in, "%s at %s: let in", v.name, p.name)
	require.Equal(t, code, got.status, "%s at %s", v.name, p.name)
	require.Positive(t, got.position, "%s at %s: no place in line", v.name, p.name)
}

// afterSyncs returns p's status once p has synced twice more: the
// visits before it are in the figures.
func afterSyncs(t *testing.T, p *proc) status {
	t.Helper()
	s, err := p.status()
	require.NoError(t, err)
	syncs := s.Counters.Syncs
	eventually(t, p, "two syncs", func(s status) bool { return s.Counters.Syncs >= syncs+2 })
	s, err = p.status()
	require.NoError(t, err)
	return s
}

// eventually polls p's status until ok holds, for at most settle.
func eventually(t *testing.T, p *proc, what string, ok func(status) bool) {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		s, err := p.status()
		if err == nil && ok(s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s not seen within %v: last status %+v, error %v", p.name, what, settle, s, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

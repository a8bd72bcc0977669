package waitingroom

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestMain fails the package's tests when a goroutine outlives them: every
// Room started with a background sync (SyncInterval ≥ 0) must be closed,
// and every test server shut down.
func TestMain(m *testing.M) {
	before := goroutineIDs()
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(before, leakWait); len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "%d goroutine(s) outlived the tests:\n\n%s\n", len(leaked), strings.Join(leaked, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// leakWait bounds how long leakedGoroutines waits for goroutines that are
// on their way out (a server's connection closing, a sync loop returning).
// It waits only while some remain.
const leakWait = 2 * time.Second

// goroutineIDs returns the IDs of the goroutines alive now.
func goroutineIDs() map[string]bool {
	ids := map[string]bool{}
	for _, g := range goroutineStacks() {
		ids[goroutineID(g)] = true
	}
	return ids
}

// leakedGoroutines returns the stacks of the goroutines alive that were not
// in before, other than the caller and those the runtime and the testing
// package keep; it polls, with growing pauses, until there are none or wait
// has passed.
func leakedGoroutines(before map[string]bool, wait time.Duration) []string {
	deadline := time.Now().Add(wait)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		var leaked []string
		for i, g := range goroutineStacks() {
			if i == 0 || before[goroutineID(g)] || expectedGoroutine(g) {
				continue // the first is the caller's own
			}
			leaked = append(leaked, g)
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(pause)
	}
}

// goroutineStacks returns the stack of every goroutine, the caller's first,
// as runtime.Stack prints them: "goroutine 7 [chan receive]:\n" followed by
// the frames, innermost first.
func goroutineStacks() []string {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(bytes.TrimSpace(buf[:n])), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// goroutineID returns the ID in the header of a goroutine's stack.
func goroutineID(stack string) string {
	id, _, _ := strings.Cut(strings.TrimPrefix(stack, "goroutine "), " ")
	return id
}

// expectedGoroutine reports whether the goroutine is one the runtime or the
// testing package keeps running whatever the tests do: the testing
// package's goroutines waiting for tests (parallel ones, fuzzing), the
// os/signal loop, and goroutines blocked in a system call on behalf of the
// runtime.
func expectedGoroutine(stack string) bool {
	header, frames, _ := strings.Cut(stack, "\n")
	top, _, _ := strings.Cut(frames, "(")
	switch top {
	case "testing.RunTests", "testing.(*T).Run", "testing.(*T).Parallel", "testing.runFuzzing", "testing.runFuzzTests":
		return strings.Contains(header, "[chan receive")
	case "os/signal.signal_recv", "os/signal.loop":
		return true
	}
	return strings.Contains(stack, "runtime.ensureSigM") ||
		strings.Contains(stack, "runtime.ReadTrace") ||
		(strings.Contains(header, "[syscall") && strings.Contains(stack, "runtime.goexit"))
}

// TestLeakedGoroutines checks the check TestMain runs: a goroutine started
// after the snapshot and still blocked is reported, with its function, and
// no longer once it has returned.
func TestLeakedGoroutines(t *testing.T) {
	before := goroutineIDs()
	stop := make(chan struct{})
	started, done := make(chan struct{}), make(chan struct{})
	go blockedUntilClosed(started, stop, done)
	<-started // scheduled, on its way to block: a slow machine cannot hide it

	leaked := leakedGoroutines(before, 20*time.Millisecond)
	assert.True(t, containsFunc(leaked, "blockedUntilClosed"), "a blocked goroutine is reported: %q", leaked)
	assert.False(t, containsFunc(leaked, "TestLeakedGoroutines("), "the caller is not reported")

	close(stop)
	<-done
	leaked = leakedGoroutines(before, leakWait)
	assert.False(t, containsFunc(leaked, "blockedUntilClosed"), "a goroutine that returned is not: %q", leaked)
	for _, g := range leaked {
		assert.False(t, before[goroutineID(g)], "goroutines alive at the snapshot are not reported: %q", g)
	}
}

func blockedUntilClosed(started chan<- struct{}, stop <-chan struct{}, done chan<- struct{}) {
	close(started)
	<-stop
	close(done)
}

func containsFunc(stacks []string, s string) bool {
	for _, g := range stacks {
		if strings.Contains(g, s) {
			return true
		}
	}
	return false
}

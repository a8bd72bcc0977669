package waitingroom

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: every
// Room started with a background sync (SyncInterval ≥ 0) must be closed,
// and every test server shut down.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

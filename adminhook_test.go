package waitingroom

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/hook"
	"github.com/go-waitingroom/waitingroom/template"
)

// The preview's page is the one a waiting visitor would get under the
// settings given, and nothing in the room changes: nothing counted, no
// page cached.
func TestPreviewPage(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) { c.RefreshJitter = -1; c.Page.Language = "fr" })
	require.True(t, admitted(tr.get(&visitor{}, "")))
	stats, counters := tr.Stats(), tr.Stats().Counters
	tr.pages.mu.Lock()
	cached := len(tr.pages.pages)
	tr.pages.mu.Unlock()
	now := tr.clk.Now()
	for _, tc := range []struct {
		name    string
		s       Settings
		est     Estimate
		lang    string
		want    string // the page's language
		status  int
		refresh int
		wait    int
	}{
		{"waiting, a known wait", Settings{QueueingMethod: FIFO}, Estimate{Known: true, Wait: 12 * time.Minute}, "", "fr", http.StatusOK, 20, 12},
		{"the status code", Settings{QueueingMethod: FIFO, QueueingStatusCode: http.StatusTooManyRequests}, Estimate{}, "de", "de", http.StatusTooManyRequests, 20, 0},
		{"closed", Settings{QueueingMethod: Reject}, Estimate{}, "", "fr", http.StatusOK, 20, 0}, // the room's refresh interval, no loop
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := hook.PreviewPage(tr.Room, &tc.s, now, tc.est, tc.lang)
			assert.Equal(t, tc.status, p.Status)
			assert.Equal(t, tc.refresh, p.Data.RefreshIntervalSeconds)
			assert.Equal(t, tc.wait, p.Data.WaitTime)
			assert.Equal(t, tc.s.QueueingMethod == Reject, p.Data.IsRejectQueue)
			assert.Equal(t, tc.want, p.Language, "lang, else Config.Page.Language")
			assert.Same(t, template.Default(), p.Template, "no Template: the default page")
		})
	}
	assert.Equal(t, stats, tr.Stats(), "the room is as it was")
	assert.Equal(t, counters, tr.Stats().Counters)
	tr.pages.mu.Lock()
	assert.Equal(t, cached, len(tr.pages.pages), "no cached page replaced")
	tr.pages.mu.Unlock()
}

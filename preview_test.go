package waitingroom

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/template"
)

// Preview renders every state a visitor can see, from the live template
// or another, and leaves the room as it was.
func TestPreview(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) {
		c.RefreshJitter = -1
		c.Template = `<p>{{queueingMethod}}|{{#queueAll}}all{{/queueAll}}|{{#isEventPrequeueing}}pre {{timeUntilEventStart}}{{/isEventPrequeueing}}|` +
			`{{#isRejectQueue}}closed{{/isRejectQueue}}|{{#waitTimeKnown}}{{waitTime}}{{/waitTimeKnown}}{{^waitTimeKnown}}unknown{{/waitTimeKnown}}|{{refreshIntervalSeconds}}</p>`
	})
	v := &visitor{}
	require.True(t, admitted(tr.get(v, "")))
	stats, counters := tr.Stats(), tr.Counters()
	tr.pages.mu.Lock()
	cached := len(tr.pages.pages)
	tr.pages.mu.Unlock()

	pages := tr.Preview(nil, "")
	require.Len(t, pages, len(PreviewStates()))
	want := map[PreviewState]string{
		PreviewQueueing:      "<p>fifo||||12|20</p>",
		PreviewQueueAll:      "<p>fifo|all|||unknown|20</p>",
		PreviewEventPrequeue: "<p>fifo||pre 15||unknown|20</p>",
		PreviewReject:        "<p>reject|||closed|unknown|0</p>",
		PreviewUnknownWait:   "<p>fifo||||unknown|20</p>",
	}
	for i, p := range pages {
		assert.Equal(t, PreviewStates()[i], p.State)
		assert.Equal(t, want[p.State], p.HTML, p.State)
		assert.Empty(t, p.Error)
		assert.Equal(t, http.StatusOK, p.Status)
	}
	assert.True(t, pages[2].Data.IsEventActive, "the pre-queue is part of the event")
	assert.True(t, pages[2].Data.ShuffleAtEventStart)

	assert.Equal(t, stats, tr.Stats(), "the room is as it was")
	assert.Equal(t, counters, tr.Counters())
	tr.pages.mu.Lock()
	assert.Equal(t, cached, len(tr.pages.pages), "no cached page replaced")
	tr.pages.mu.Unlock()

	// The live settings show: random queueing, the status code, a
	// template changed live; another template and language on request.
	require.NoError(t, tr.Update(t.Context(), func(s *Settings) {
		s.QueueingMethod, s.QueueingStatusCode, s.Template = Random, http.StatusTooManyRequests, "<b>{{waitTimeFormatted}}</b>"
	}))
	pages = tr.Preview(nil, "")
	assert.Equal(t, "<b>5 minutes to 15 minutes</b>", pages[0].HTML)
	assert.Equal(t, http.StatusTooManyRequests, pages[0].Status)
	other, err := template.Parse("<i>{{waitTimeFormatted}}</i>")
	require.NoError(t, err)
	assert.Equal(t, "<i>od 5 minut do 15 minut</i>", tr.Preview(other, "pl")[0].HTML)
	for _, p := range tr.Preview(template.Default(), "de") {
		assert.Contains(t, p.HTML, `<html lang="de"`, p.State)
	}
	assert.Equal(t, Random, tr.Stats().Settings.QueueingMethod)
	tr.clk.Add(time.Second)
	tr.sync()
	assert.True(t, admitted(tr.get(v, "")), "the admitted visitor is still in")
}

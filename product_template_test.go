package waitingroom_test

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"github.com/go-waitingroom/waitingroom"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/template"
)

// productTemplate is a page written for the commercial product: its
// documented wait-time sample (a <noscript> heading choosing between a
// known wait, a full queue and an unknown wait, and a script reading
// waitTime and waitTimeKnown) with the other variables its reference lists,
// turnstile included (which this room does not have: it renders empty).
//
//go:embed testdata/product_template.html
var productTemplate string

// productDecisions are the parts of productTemplate that the product's
// reference says a visitor sees for d, and those they do not. A wait longer
// than a day is, in the product, an unknown wait with queueIsFull set: the
// "[full]" branch follows from the data as the room gives it.
func productDecisions(d *template.Data) (shown, hidden []string) {
	branch := func(on bool, text string) {
		if on {
			shown = append(shown, text)
		} else {
			hidden = append(hidden, text)
		}
	}
	if d.IsRejectQueue {
		// Reject: the closed page, which does not refresh.
		return []string{"The shop is closed right now."}, []string{`http-equiv="refresh"`, "[known]", "[unknown]", "[full]", "You are in line"}
	}
	hidden = append(hidden, "The shop is closed")
	branch(true, fmt.Sprintf(`<meta http-equiv="refresh" content="%d">`, d.RefreshIntervalSeconds))
	branch(d.WaitTimeKnown, fmt.Sprintf("[known] Expected wait: %s (%d h %d min).", d.WaitTimeFormatted, d.WaitTimeHours, d.WaitTimeHourMinutes))
	branch(!d.WaitTimeKnown && d.QueueIsFull, "[full]")
	branch(!d.WaitTimeKnown && !d.QueueIsFull, "[unknown] No estimate available.")
	branch(d.QueueAll, "[queue-all]")
	branch(d.IsFIFOQueue, "[fifo]")
	branch(d.IsRandomQueue, fmt.Sprintf("[random] Spots are drawn at random: %d/%d/%d min.", d.WaitTime25Percentile, d.WaitTime50Percentile, d.WaitTime75Percentile))
	branch(d.IsPassthroughQueue, "[passthrough]")
	shuffle := ""
	if d.ShuffleAtEventStart {
		shuffle = ", then places are shuffled"
	}
	branch(d.IsEventActive && d.IsEventPrequeueing, fmt.Sprintf("[prequeue] Opens in %s (%d min)%s.", d.TimeUntilEventStartFormatted, d.TimeUntilEventStart, shuffle))
	branch(d.IsEventActive && !d.IsEventPrequeueing, fmt.Sprintf("[event] The sale ends in %s (%d min).", d.TimeUntilEventEndFormatted, d.TimeUntilEventEnd))
	branch(true, fmt.Sprintf("Method %s; checked %s; next try in %d s.", d.QueueingMethod, d.LastUpdated, d.RefreshIntervalSeconds))
	branch(true, fmt.Sprintf("var waitTime = %d;", d.WaitTime))
	branch(true, fmt.Sprintf("var waitTimeKnown = %t;", d.WaitTimeKnown))
	return shown, hidden
}

// A template written for the product renders here the decisions the
// product's reference describes, in every state a visitor can be in: the
// same variables, with the same meanings.
func TestProductTemplate(t *testing.T) {
	_, err := template.Parse(productTemplate)
	require.NoError(t, err, "it parses as it is")
	for _, tc := range []struct {
		name   string
		config func(*waitingroom.Config)
		// setup brings the room into the state; the next new visitor is
		// the one looked at.
		setup func(tr *testRoom)
		// hit is the branch the state must reach, so that each case tests
		// what it says.
		hit func(d *template.Data) bool
	}{
		{"FIFO, a known wait", func(c *waitingroom.Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 100, 10 }, fill(10, 30),
			func(d *template.Data) bool { return d.WaitTimeKnown && d.IsFIFOQueue && d.WaitTime > 0 }},
		{"FIFO, a wait over an hour", func(c *waitingroom.Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 100, 10 }, fill(10, 900),
			func(d *template.Data) bool { return d.WaitTimeKnown && d.WaitTimeHours >= 1 }},
		{"random", func(c *waitingroom.Config) {
			c.TotalActiveUsers, c.NewUsersPerMinute = 100, 10
			c.QueueingMethod = waitingroom.Random
		}, fill(10, 30),
			func(d *template.Data) bool {
				return d.WaitTimeKnown && d.IsRandomQueue && d.WaitTime75Percentile > d.WaitTime25Percentile
			}},
		{"queue all", func(c *waitingroom.Config) { c.QueueAll = true }, nil,
			func(d *template.Data) bool { return d.QueueAll && !d.WaitTimeKnown }},
		{"passthrough, queue all", func(c *waitingroom.Config) { c.QueueAll = true; c.QueueingMethod = waitingroom.Passthrough }, nil,
			func(d *template.Data) bool { return d.IsPassthroughQueue && d.QueueAll }},
		{"event pre-queue", func(c *waitingroom.Config) {
			start := newClock().Now().Add(10 * time.Minute).Truncate(time.Minute)
			c.Events = []waitingroom.Event{{Name: "sale", PrequeueStart: start.Add(-30 * time.Minute), Start: start, End: start.Add(time.Hour), ShuffleAtStart: true}}
		}, nil, func(d *template.Data) bool { return d.IsEventActive && d.IsEventPrequeueing && d.ShuffleAtEventStart }},
		{"event running", func(c *waitingroom.Config) {
			start := newClock().Now().Truncate(time.Minute)
			c.Events = []waitingroom.Event{{Name: "sale", Start: start, End: start.Add(time.Hour), TotalActiveUsers: 1, NewUsersPerMinute: 1}}
		}, fill(1, 0), func(d *template.Data) bool {
			return d.IsEventActive && !d.IsEventPrequeueing && d.TimeUntilEventEnd > 0
		}},
		{"reject", func(c *waitingroom.Config) { c.QueueingMethod = waitingroom.Reject }, nil,
			func(d *template.Data) bool { return d.IsRejectQueue }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *waitingroom.Config) {
				c.Template = productTemplate
				c.RefreshJitter = -1 // both visitors of a case get the same interval
				if tc.config != nil {
					tc.config(c)
				}
			})
			if tc.setup != nil {
				tc.setup(tr)
			}
			// Two new visitors in the same state: one asks for JSON (the
			// data), the other for the page.
			var body map[string]template.Data
			require.NoError(t, json.Unmarshal(tr.get(&visitor{}, "application/json").Body.Bytes(), &body))
			d := body["waitingRoom"]
			require.True(t, tc.hit(&d), "the state is reached: %+v", d)
			html := tr.get(&visitor{}, "").Body.String()
			shown, hidden := productDecisions(&d)
			for _, s := range shown {
				assert.Contains(t, html, s)
			}
			for _, s := range hidden {
				assert.NotContains(t, html, s)
			}
		})
	}
}

// fill admits n visitors, queues waiting more, and syncs 45 seconds later:
// the room has a rate of admissions to estimate from.
func fill(n, waiting int) func(*testRoom) {
	return func(tr *testRoom) {
		for range n {
			require.True(tr.t, admitted(tr.get(&visitor{}, "")))
		}
		for range waiting {
			tr.get(&visitor{}, "")
		}
		tr.clk.Add(45 * time.Second)
		tr.sync()
	}
}

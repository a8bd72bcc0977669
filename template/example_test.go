package template_test

import (
	"fmt"
	"os"

	"github.com/go-waitingroom/waitingroom/template"
)

func ExampleParse() {
	tmpl, err := template.Parse(`<p>
{{#waitTimeKnown}}
Estimated wait: {{waitTimeFormatted}} ({{waitTimeHours}} h {{waitTimeHourMinutes}} min).
{{/waitTimeKnown}}
{{^waitTimeKnown}}
We cannot estimate your wait yet.
{{/waitTimeKnown}}
{{#queueIsFull}}
The queue is full.
{{/queueIsFull}}
</p>
<meta http-equiv="refresh" content="{{refreshIntervalSeconds}}">
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	d := &template.Data{
		InWaitingRoom:          true,
		WaitTimeKnown:          true,
		WaitTime:               75,
		WaitTimeHours:          1,
		WaitTimeHourMinutes:    15,
		WaitTimeFormatted:      "1 hour 15 minutes",
		RefreshIntervalSeconds: 30,
		QueueingMethod:         "fifo",
		IsFIFOQueue:            true,
	}
	if err := tmpl.Render(os.Stdout, d, "en"); err != nil {
		fmt.Println(err)
	}

	_, err = template.Parse("{{#waitTimeKnown}} never closed")
	fmt.Println(err)
	// Output:
	// <p>
	// Estimated wait: 1 hour 15 minutes (1 h 15 min).
	// </p>
	// <meta http-equiv="refresh" content="30">
	// waitingroom/template: line 1: Section waitTimeKnown has no closing tag
}

func ExampleWriteJSON() {
	d := &template.Data{
		InWaitingRoom:          true,
		WaitTimeKnown:          true,
		WaitTime:               10,
		WaitTimeHourMinutes:    10,
		WaitTimeFormatted:      "10 minutes",
		LastUpdated:            "2020-08-03T23:46:00.000Z",
		RefreshIntervalSeconds: 20,
		QueueingMethod:         "fifo",
		IsFIFOQueue:            true,
	}
	if err := template.WriteJSON(os.Stdout, "cfWaitingRoom", d); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"cfWaitingRoom":{"inWaitingRoom":true,"waitTimeKnown":true,"waitTime":10,"waitTimeHours":0,"waitTimeHourMinutes":10,"waitTime25Percentile":0,"waitTime50Percentile":0,"waitTime75Percentile":0,"waitTimeFormatted":"10 minutes","queueIsFull":false,"queueAll":false,"lastUpdated":"2020-08-03T23:46:00.000Z","refreshIntervalSeconds":20,"queueingMethod":"fifo","isFIFOQueue":true,"isRandomQueue":false,"isPassthroughQueue":false,"isRejectQueue":false}}
}

func ExampleWantsJSON() {
	for _, accept := range []string{
		"application/json",
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
		"*/*",
	} {
		fmt.Println(template.WantsJSON(accept))
	}
	// Output:
	// true
	// false
	// false
}

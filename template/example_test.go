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
	// {"cfWaitingRoom":{"inWaitingRoom":true,"waitTimeKnown":true,"waitTime":10,"waitTimeHours":0,"waitTimeHourMinutes":10,"waitTime25Percentile":0,"waitTime50Percentile":0,"waitTime75Percentile":0,"waitTimeFormatted":"10 minutes","queueIsFull":false,"queueAll":false,"lastUpdated":"2020-08-03T23:46:00.000Z","refreshIntervalSeconds":20,"queueingMethod":"fifo","isFIFOQueue":true,"isRandomQueue":false,"isPassthroughQueue":false,"isRejectQueue":false,"isEventActive":false,"isEventPrequeueing":false,"timeUntilEventStart":0,"timeUntilEventStartFormatted":"","timeUntilEventEnd":0,"timeUntilEventEndFormatted":"","shuffleAtEventStart":false,"positionInLine":0,"queueLength":0,"chancePerRefreshOneIn":0}}
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

func ExampleFormatWait() {
	for _, lang := range []string{"en", "fr", "pl", "ja"} {
		fmt.Printf("%s: %s | %s | %s\n", lang,
			template.FormatWait(lang, 22), template.FormatWait(lang, 125), template.FormatWaitRange(lang, 5, 15))
	}
	// Output:
	// en: 22 minutes | 2 hours 5 minutes | 5 minutes to 15 minutes
	// fr: 22 minutes | 2 heures et 5 minutes | de 5 minutes à 15 minutes
	// pl: 22 minuty | 2 godziny 5 minut | od 5 minut do 15 minut
	// ja: 22分 | 2時間5分 | 5分から15分
}

func ExampleNegotiate() {
	for _, header := range []string{
		"de-CH,de;q=0.9,en;q=0.8",
		"pt-PT,pt;q=0.9",
		"zh-HK,zh;q=0.8",
		"sv-SE,sv;q=0.9",
		"",
	} {
		fmt.Printf("%q → %s\n", header, template.Negotiate(header, "en"))
	}
	// Output:
	// "de-CH,de;q=0.9,en;q=0.8" → de
	// "pt-PT,pt;q=0.9" → pt-BR
	// "zh-HK,zh;q=0.8" → zh-TW
	// "sv-SE,sv;q=0.9" → en
	// "" → en
}

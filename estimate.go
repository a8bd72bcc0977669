package waitingroom

import (
	"math"
	"time"

	"github.com/go-waitingroom/waitingroom/page"
)

// Percentiles of the random-queue estimate shown to visitors.
var randomPercentiles = [3]float64{0.25, 0.5, 0.75}

// maxEstimate is the longest wait shown; beyond it the queue reads as full.
const maxEstimate = 24 * time.Hour

// Estimate is a wait-time estimate. Durations are rounded up to whole
// minutes, the unit visitors see.
type Estimate struct {
	// Known is false when nothing flows (no admissions lately, QueueAll,
	// Reject) and so no honest estimate exists.
	Known bool
	// Wait is the expected wait: FIFO, visitors ahead divided by recent
	// admissions per minute; random, the median (P50).
	Wait time.Duration
	// P25, P50 and P75 are, for random queueing, the waits within which a
	// visitor gets in with probability 0.25, 0.5 and 0.75. Zero for FIFO.
	P25, P50, P75 time.Duration
	// Full reports an estimate longer than a day (the queue is full).
	Full bool
}

// fifoEstimate is the wait of a visitor with ahead visitors in front of them
// when perMinute visitors are admitted each minute.
func fifoEstimate(ahead, perMinute float64) Estimate {
	if perMinute <= 0 || math.IsNaN(perMinute) || math.IsNaN(ahead) {
		return Estimate{}
	}
	return capEstimate(Estimate{Known: true, Wait: minutes(math.Max(ahead, 0) / perMinute)})
}

// randomMinutes is the number of minutes n after which a visitor has been
// let in with probability p, when each minute lets in a share P of the
// visitors waiting: p = 1 − (1 − P)ⁿ, so n = log(1 − p) / log(1 − P).
func randomMinutes(P, p float64) float64 {
	switch {
	case P >= 1:
		return 0
	case P <= 0:
		return math.Inf(1)
	}
	return math.Log(1-p) / math.Log(1-P)
}

// randomEstimate is the wait range when perMinute of waiting visitors are
// let in each minute, every one with the same chance.
func randomEstimate(perMinute, waiting float64) Estimate {
	if perMinute <= 0 || math.IsNaN(perMinute) {
		return Estimate{}
	}
	if waiting <= 0 {
		return Estimate{Known: true}
	}
	P := perMinute / waiting
	e := Estimate{
		Known: true,
		P25:   minutes(randomMinutes(P, randomPercentiles[0])),
		P50:   minutes(randomMinutes(P, randomPercentiles[1])),
		P75:   minutes(randomMinutes(P, randomPercentiles[2])),
	}
	e.Wait = e.P50
	return capEstimate(e)
}

func capEstimate(e Estimate) Estimate {
	if e.Wait > maxEstimate || e.P75 > maxEstimate {
		e.Full = true
	}
	return e
}

// minutes converts fractional minutes to a duration rounded up to a whole
// minute, saturating far beyond maxEstimate.
func minutes(m float64) time.Duration {
	if math.IsNaN(m) || m > 1e6 {
		return 1e6 * time.Minute
	}
	return time.Duration(math.Ceil(m)) * time.Minute
}

// Formatted is the estimate in English as the waiting page shows it: FIFO
// "10 minutes", random "5 minutes to 15 minutes", "less than a minute",
// empty when unknown.
func (e Estimate) Formatted() string { return e.FormattedIn(DefaultLanguage) }

// FormattedIn is Formatted in the language lang (page.Languages).
func (e Estimate) FormattedIn(lang string) string {
	switch {
	case !e.Known:
		return ""
	case e.P75 > 0 && e.P25 != e.P75:
		return page.FormatWaitRange(lang, int(e.P25/time.Minute), int(e.P75/time.Minute))
	}
	return page.FormatWait(lang, int(e.Wait/time.Minute))
}

package waitingroom

import (
	"math"
	"time"

	"github.com/go-waitingroom/waitingroom/template"
)

// Percentiles of the random-queue estimate shown to visitors.
var randomPercentiles = [3]float64{0.25, 0.5, 0.75}

// maxEstimate is the longest wait shown; a longer one is unknown.
const maxEstimate = 24 * time.Hour

// Estimate is a wait-time estimate. Durations are rounded up to whole
// minutes, the unit visitors see.
type Estimate struct {
	// Known is false when no honest estimate exists: nothing flows
	// (QueueAll, Reject, a pre-queue, or every slot held by visitors who
	// keep their session alive while nobody was let in lately), or the
	// wait comes out longer than a day (Full).
	Known bool
	// Wait is the expected wait: FIFO, the time until the visitors ahead
	// and then this one are let in; random, the median (P50).
	Wait time.Duration
	// P25, P50 and P75 are, for random queueing, the waits within which a
	// visitor gets in with probability 0.25, 0.5 and 0.75. Zero for FIFO.
	P25, P50, P75 time.Duration
	// Full reports that the wait came out longer than a day, too far to
	// estimate: Known is false and the durations zero. Nobody is turned
	// away for it (the page's queueIsFull stays false).
	Full bool
	// Position is, for FIFO queueing, about where the visitor is in line:
	// 1 + the visitors ahead, who are everyone waiting in an older
	// arrival minute and half of the visitor's own minute (everyone
	// waiting, for a visitor who just arrived). It is known from the
	// counts even when the wait is not. 0 when not known or not FIFO.
	Position int
	// ChancePerMinute is, for random queueing, the chance, in [0, 1], that
	// a visitor who keeps refreshing is let in within the next minute,
	// as P50 implies (the chance each minute that gives one half by P50):
	// the page turns it into a chance per refresh. 0 when not known or
	// not random.
	ChancePerMinute float64
}

// fifoEstimate is the wait, as of view v under policy p, of a visitor with
// ahead visitors in front of them (view.waitAfter).
func fifoEstimate(v *view, p *policy, ahead float64) Estimate {
	byRate := math.NaN()
	if v.perMinute > 0 {
		byRate = ahead / v.perMinute
	}
	pos := int(min(math.Round(max(ahead, 0)), 1e9)) + 1
	m, ok := v.waitAfter(p, ahead, byRate)
	if !ok {
		if math.IsNaN(ahead) {
			return Estimate{}
		}
		return Estimate{Position: pos}
	}
	e := capEstimate(Estimate{Known: true, Wait: minutes(m)})
	e.Position = pos
	return e
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

// randomAdmissions is the number of admissions after which one of waiting
// visitors, each as likely as the others to take each slot, has been let
// in with probability p: p = 1 − (1 − 1/waiting)ᵏ.
func randomAdmissions(waiting, p float64) float64 {
	if waiting <= 1 {
		return 1
	}
	return max(1, math.Ceil(math.Log(1-p)/math.Log(1-1/waiting)))
}

// randomEstimate is the wait range, as of view v under policy p, of one of
// waiting visitors who all have the same chance at every slot. For each
// percentile it is the time the room takes to let in as many visitors as
// that chance needs (view.waitAfter), the recent admission rate giving
// the minutes that chance takes.
func randomEstimate(v *view, p *policy, waiting float64) Estimate {
	if waiting <= 0 {
		return Estimate{Known: true, ChancePerMinute: 1}
	}
	var e Estimate
	var median float64 // minutes, not rounded
	out := [...]*time.Duration{&e.P25, &e.P50, &e.P75}
	for i, pct := range randomPercentiles {
		byRate := math.NaN()
		if v.perMinute > 0 {
			byRate = randomMinutes(v.perMinute/waiting, pct)
		}
		m, ok := v.waitAfter(p, randomAdmissions(waiting, pct)-1, byRate)
		if !ok {
			return Estimate{}
		}
		*out[i] = minutes(m)
		if pct == 0.5 {
			median = m
		}
	}
	e.Known, e.Wait = true, e.P50
	e = capEstimate(e)
	e.ChancePerMinute = 1
	if median > 0 {
		e.ChancePerMinute = 1 - math.Pow(0.5, 1/median)
	}
	return e
}

// capEstimate makes an estimate beyond maxEstimate unknown.
func capEstimate(e Estimate) Estimate {
	if e.Wait > maxEstimate || e.P75 > maxEstimate {
		return Estimate{Full: true}
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
// "unavailable" when unknown (as the commercial product writes it).
func (e Estimate) Formatted() string { return e.FormattedIn(DefaultLanguage) }

// FormattedIn is Formatted in the language lang (template.Languages).
func (e Estimate) FormattedIn(lang string) string {
	switch {
	case !e.Known:
		return template.FormatUnavailable(lang)
	case e.P75 > 0 && e.P25 != e.P75:
		return template.FormatWaitRange(lang, int(e.P25/time.Minute), int(e.P75/time.Minute))
	}
	return template.FormatWait(lang, int(e.Wait/time.Minute))
}

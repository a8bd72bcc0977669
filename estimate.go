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
	// (and half of the others of the same second) and then this one are
	// let in; random, the median (P50).
	Wait time.Duration
	// P25, P50 and P75 are, for random queueing, the waits within which a
	// visitor gets in with probability 0.25, 0.5 and 0.75. Zero for FIFO.
	P25, P50, P75 time.Duration
	// Full reports that the wait came out longer than a day, too far to
	// estimate: Known is false and the durations zero. Nobody is turned
	// away for it (the page's queueIsFull stays false).
	Full bool
	// Position is, for FIFO queueing, the visitor's place in line, 1 being
	// next: 1 + everyone waiting who arrived in an earlier second
	// (everyone, for a visitor who just arrived; half of an event's
	// shuffled pre-queue for those in it), as of the latest sync, never
	// above the place the cookie was shown before (one ahead who came back
	// within QueueHold is not counted again). Known from the counts even
	// when the wait is not; 0 when not known or not FIFO.
	Position int
	// Waiting is the number of visitors in line, this one included, as
	// of the latest sync: the queue's length. 0 when nobody waits for a
	// slot (passthrough, QueueAll, a pre-queue) or not known.
	Waiting int
	// ChancePerMinute is, for random queueing, the chance, in [0, 1], that
	// a visitor who keeps refreshing is let in within the next minute,
	// as P50 implies (the chance each minute that gives one half by P50):
	// the page turns it into a chance per refresh. 0 when not known, not
	// random, for a winner of the draw waiting for a free slot, or behind
	// a random event's shuffled pre-queue (which goes first).
	ChancePerMinute float64
}

// fifoEstimate is the wait, as of view v under policy p, of a visitor with
// ahead visitors in front of them in line, and tied more expected ahead
// (waitAfter; a second's stampede was told the next slot's wait).
func fifoEstimate(v *view, p *policy, ahead, tied float64) Estimate {
	pos := int(min(math.Round(max(ahead, 0)), 1e9)) + 1
	byRate := math.NaN()
	if ahead += tied; v.PerMinute > 0 {
		byRate = ahead / v.PerMinute
	}
	m, ok := waitAfter(v, p, ahead, byRate)
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
// waiting visitors who all have the same chance at every slot once the
// first of them (a random event's shuffled pre-queue) are in. For each
// percentile it is the time the room takes to let in as many visitors as
// that chance needs (waitAfter), the recent admission rate giving
// the minutes that chance takes. Behind the first, the chance now is
// nought (ChancePerMinute 0).
func randomEstimate(v *view, p *policy, waiting, first float64) Estimate {
	if waiting <= 0 {
		return Estimate{Known: true, ChancePerMinute: 1}
	}
	waiting = max(waiting-first, 1)
	var e Estimate
	var median float64 // minutes, not rounded
	out := [...]*time.Duration{&e.P25, &e.P50, &e.P75}
	for i, pct := range randomPercentiles {
		byRate := math.NaN()
		if v.PerMinute > 0 {
			byRate = first/v.PerMinute + randomMinutes(v.PerMinute/waiting, pct)
		}
		m, ok := waitAfter(v, p, first+randomAdmissions(waiting, pct)-1, byRate)
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
	if first == 0 {
		e.ChancePerMinute = 1 - math.Pow(0.5, 1/median) // 1 for a median of 0
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

// Formatted is the estimate as the waiting page shows it, in the language
// lang (template.Languages; "" is English): FIFO "10 minutes", random
// "5 minutes to 15 minutes", "less than a minute", "unavailable" when
// unknown (as the commercial product writes it).
func (e Estimate) Formatted(lang string) string {
	switch {
	case !e.Known:
		return template.FormatUnavailable(lang)
	case e.P75 > 0 && e.P25 != e.P75:
		return template.FormatWaitRange(lang, int(e.P25/time.Minute), int(e.P75/time.Minute))
	}
	return template.FormatWait(lang, int(e.Wait/time.Minute))
}

// waitAfter is the wait, in minutes, for the admission that follows ahead
// other visitors', as of view v under policy p, and whether it is known.
// byRate is the wait the recent admission rate gives (minutes, no more
// than ahead ÷ rate for FIFO), or NaN when nothing was let in lately. The
// wait is the latest of: NewUsersPerMinute's pace over the minute, those
// admitted this minute counted (the room's own after an event's end);
// while TotalActiveUsers binds, the k-th session end (the state knows when
// each live session ends unless renewed; beyond them, slots come round
// once per session hold: the session duration, or the active over the
// observed outflow when longer); and byRate, where the slots do not bind
// or the slot waited for is held by a session seen within the last minute
// (its end is then only the earliest). Known ends beat the rate: slots
// freed in bursts make a rate wrong at every moment. Unknown when such a
// slot is waited for and nothing was let in lately. byRate only raises the
// wait (k ÷ rate would lengthen every flowing room's estimate).
func waitAfter(v *view, p *policy, ahead, byRate float64) (float64, bool) {
	if math.IsNaN(ahead) || v.At == 0 {
		return 0, false // a view before the first sync knows nothing
	}
	ahead = min(max(ahead, 0), 1e12)
	k := int64(ahead) + 1 // this visitor's admission, counted from the view's
	var wait float64      // ms
	rated := !math.IsNaN(byRate)
	byRate *= 60_000

	// New Users Per Minute, spread over each minute.
	if nupm := int64(p.NewUsersPerMinute); nupm > 0 {
		at := float64(minuteOf(v.At)*60_000) + float64(v.AdmittedThisMinute+k-1)*60_000/float64(nupm)
		if e, n := p.event, float64(v.Settings.NewUsersPerMinute); e != nil && at > float64(e.End.UnixMilli()) && n > 0 {
			at += (at - float64(e.End.UnixMilli())) * (float64(nupm)/n - 1) // after the end, the room's own pace
		}
		wait = max(wait, at-float64(v.At))
	}

	// Total Active Users: the k-th slot to free, as the sessions end.
	tau := int64(p.TotalActiveUsers)
	if tau <= 0 || k <= tau-v.Active {
		if rated {
			wait = max(wait, byRate)
		}
		return wait / 60_000, true
	}
	free := tau - v.Active // negative while more are active than the limit
	round, i := (k-1)/tau, (k-1)%tau
	at := v.At
	renewing := false
	if i >= free {
		var ok bool
		at, renewing, ok = v.Ends.End(i - free + 1)
		if !ok { // fewer session records than active visitors: a legacy count
			at, renewing = v.At+p.session, true
		}
	}
	hold := float64(p.session)
	if v.PerMinute > 0 {
		hold = max(hold, float64(v.Active)/v.PerMinute*60_000)
	}
	wait = max(wait, float64(at-v.At)+float64(round)*hold)
	if renewing {
		if !rated {
			return 0, false
		}
		wait = max(wait, byRate)
	}
	return wait / 60_000, true
}

package sim

import (
	"math"
	"slices"
	"time"

	"github.com/go-waitingroom/waitingroom"
)

// finish computes the figures of the run from the visitors' records. The
// Result it returns holds nothing of the run but the records.
func (r *run) finish() *Result {
	res := r.counts()
	kinds := r.waits(res)
	kinds.figures(res)
	r.bots(res)
	r.cohort(res)
	r.saturation(res)
	switch r.method {
	case waitingroom.FIFO:
		res.EstimateError = r.estimateError()
		res.PositionError = r.positionError()
	case waitingroom.Random:
		res.Calibration = r.calibration()
	}
	return res
}

// counts returns the Result of the run's counts: the figures it kept as
// it went, the room's limits, the visitors and their records, those who
// never got in and the abandoned visitors the room still counted.
func (r *run) counts() *Result {
	res := new(Result)
	*res = r.res
	res.Method = string(r.method)
	res.Instances = len(r.rooms)
	res.TotalActiveUsers, res.NewUsersPerMinute = r.total, r.per
	res.Visitors = len(r.vs)
	res.StillWaiting = r.waiting
	res.NotArrived = len(r.vs) - r.next
	res.Minutes = r.minutes
	res.VisitorRecords = r.vs
	if r.abandoned != nil {
		res.AbandonedCountedMaxSeconds = float64(r.ghostMax) / 1000
		res.AbandonedCountedMeanSeconds = r.ghostSum / float64(len(r.abandoned))
	}
	res.undercount = r.undercount
	return res
}

// kindWaits sums, by kind of visitor, the waits and the admissions.
type kindWaits [kindCount]struct {
	sum   float64 // waits, seconds: of those let in, and of dishonest ones still waiting
	n     int     // the visitors in sum
	max   int     // most admissions
	extra int     // admissions beyond one each
}

// waits sets the write-up's data (the arrival minute and wait of everyone
// let in), the mean wait and the order of admission, judged on honest
// visitors; it returns the waits and admissions by kind.
func (r *run) waits(res *Result) *kindWaits {
	res.ArrivalMinutes = make([]int, 0, res.Admitted)
	res.WaitTimeSeconds = make([]float64, 0, res.Admitted)
	bucket := make([]int64, 0, res.Admitted)
	admittedAt := make([]int64, 0, res.Admitted)
	var sum float64
	kinds := new(kindWaits)
	end := time.Duration(r.sec) * time.Second
	for i := range r.vs {
		v := &r.vs[i]
		k := &kinds[v.Kind]
		k.max = max(k.max, int(v.Admissions))
		k.extra += max(int(v.Admissions)-1, 0)
		if !v.WasAdmitted {
			if !v.Kind.honest() && r.lv[i].waiting {
				// Still waiting: it waited at least until the end.
				k.sum += (end - v.Arrival).Seconds()
				k.n++
			}
			continue
		}
		m := int(v.Arrival / time.Minute)
		w := v.Wait().Seconds()
		res.ArrivalMinutes = append(res.ArrivalMinutes, m)
		res.WaitTimeSeconds = append(res.WaitTimeSeconds, w)
		if v.Kind.honest() {
			bucket = append(bucket, int64(v.Arrival/time.Second))
			admittedAt = append(admittedAt, v.Admitted.Milliseconds())
		}
		sum += w
		k.sum += w
		k.n++
	}
	if len(bucket) >= 2 {
		tau, ceiling := kendall(bucket, admittedAt)
		res.KendallTau, res.KendallTauMax = nanToZero(tau), nanToZero(ceiling)
	}
	if n := len(res.WaitTimeSeconds); n > 0 {
		res.MeanWaitSeconds = sum / float64(n)
	}
	return kinds
}

// mean is the mean wait of the visitors of kind k, seconds.
func (kw *kindWaits) mean(k Kind) float64 {
	if kw[k].n == 0 {
		return 0
	}
	return kw[k].sum / float64(kw[k].n)
}

// ratio is the mean wait of the visitors of kind k over polite visitors'.
func (kw *kindWaits) ratio(k Kind) float64 {
	polite := kw.mean(Polite)
	if polite <= 0 || kw[k].n == 0 {
		return 0
	}
	return kw.mean(k) / polite
}

// figures sets the mean waits of each kind, their ratio to polite
// visitors' and the admissions of replayers and cloners.
func (kw *kindWaits) figures(res *Result) {
	res.MeanWaitPoliteSeconds = kw.mean(Polite)
	res.MeanWaitSpammerSeconds, res.SpammerWaitRatio = kw.mean(Spammer), kw.ratio(Spammer)
	res.MeanWaitReplayerSeconds, res.ReplayerWaitRatio = kw.mean(Replayer), kw.ratio(Replayer)
	res.MeanWaitClonerSeconds, res.ClonerWaitRatio = kw.mean(Cloner), kw.ratio(Cloner)
	res.ReplayerMaxAdmissions, res.ReplayerExtraAdmissions = kw[Replayer].max, kw[Replayer].extra
	res.ClonerMaxAdmissions, res.ClonerExtraAdmissions = kw[Cloner].max, kw[Cloner].extra
}

// bots sets the bots' figures: their identities, requests, admissions and
// share of everyone let in.
func (r *run) bots(res *Result) {
	for i := range r.vs {
		if v := &r.vs[i]; v.Kind == Bot {
			res.BotVisitors++
			res.BotRequests += int(v.Requests)
			if v.WasAdmitted {
				res.BotAdmitted++
			}
		}
	}
	if res.Admitted > 0 {
		res.BotShare = float64(res.BotAdmitted) / float64(res.Admitted)
	}
}

// saturation sets the figures of the minutes: the most admissions and
// active sessions in one, the saturated minutes and the share of their
// capacity used.
func (r *run) saturation(res *Result) {
	var admitted, capacity int
	for _, m := range res.Minutes {
		res.MaxAdmittedPerMinute = max(res.MaxAdmittedPerMinute, m.Admissions)
		res.PeakActive = max(res.PeakActive, m.PeakActive)
		if m.Saturated {
			res.SaturatedMinutes++
			admitted += m.Admissions
			capacity += m.Capacity
		}
	}
	if capacity > 0 {
		res.Utilization = float64(admitted) / float64(capacity)
	}
}

func nanToZero(f float64) float64 {
	if math.IsNaN(f) {
		return 0
	}
	return f
}

// cohort compares, among the honest visitors waiting at Options.CohortAt
// who were let in later, the order of arrival with the order of admission.
func (r *run) cohort(res *Result) {
	at := r.o.CohortAt
	res.CohortSeconds = at.Seconds()
	var arrival, admitted []int64
	for i := range r.vs {
		v := &r.vs[i]
		if v.WasAdmitted && v.Kind.honest() && v.Arrival <= at && v.Admitted > at {
			arrival = append(arrival, v.Arrival.Milliseconds())
			admitted = append(admitted, v.Admitted.Milliseconds())
		}
	}
	res.CohortSize = len(arrival)
	res.ChiSquare = chiSquareDeciles(arrival, admitted, 10)
	res.ChiSquare.Statistic = nanToZero(res.ChiSquare.Statistic)
	res.ChiSquare.PValue = nanToZero(res.ChiSquare.PValue)
	if len(arrival) >= 2 {
		res.CohortTau = nanToZero(KendallTau(arrival, admitted))
	}
}

// measured calls f for every visitor whose estimates are judged: honest,
// arrived within [MeasureFrom, MeasureUntil), let in, shown a known
// estimate. It passes the estimate and the wait from the response that
// showed it.
func (r *run) measured(f func(e Shown, actual time.Duration)) {
	until := time.Duration(math.MaxInt64)
	if r.o.MeasureUntil > 0 {
		until = r.o.MeasureUntil
	}
	for i := range r.vs {
		v := &r.vs[i]
		if !v.Kind.honest() || v.Arrival < r.o.MeasureFrom || v.Arrival >= until || !v.WasAdmitted || !v.FirstEstimate.Known {
			continue
		}
		f(v.FirstEstimate, v.Admitted-v.FirstEstimate.At)
	}
}

func (r *run) estimateError() *EstimateError {
	var rel, signed []float64
	r.measured(func(e Shown, actual time.Duration) {
		d := (e.Wait - actual).Seconds() / actual.Seconds()
		signed = append(signed, d)
		rel = append(rel, math.Abs(d))
	})
	ee := &EstimateError{N: len(rel)}
	if len(rel) == 0 {
		return ee
	}
	slices.Sort(rel)
	slices.Sort(signed)
	ee.Median, ee.P90, ee.Bias = quantile(rel, 0.5), quantile(rel, 0.9), quantile(signed, 0.5)
	return ee
}

// positionError compares the position in line shown with each measured
// visitor's first known estimate with the true one: 1 + the admissions
// between that response and the visitor's own.
func (r *run) positionError() *EstimateError {
	var admissions []time.Duration
	for i := range r.vs {
		if v := &r.vs[i]; v.WasAdmitted {
			admissions = append(admissions, v.Admitted)
		}
	}
	slices.Sort(admissions)
	var rel, signed []float64
	r.measured(func(e Shown, actual time.Duration) {
		if e.Position <= 0 {
			return
		}
		admitted := e.At + actual
		from, _ := slices.BinarySearch(admissions, e.At+1)
		to, _ := slices.BinarySearch(admissions, admitted)
		truth := float64(to-from) + 1
		d := (float64(e.Position) - truth) / truth
		signed = append(signed, d)
		rel = append(rel, math.Abs(d))
	})
	pe := &EstimateError{N: len(rel)}
	if len(rel) == 0 {
		return pe
	}
	slices.Sort(rel)
	slices.Sort(signed)
	pe.Median, pe.P90, pe.Bias = quantile(rel, 0.5), quantile(rel, 0.9), quantile(signed, 0.5)
	return pe
}

func (r *run) calibration() *Calibration {
	var n, p25, p50, p75 int
	r.measured(func(e Shown, actual time.Duration) {
		n++
		if actual <= e.P25 {
			p25++
		}
		if actual <= e.P50 {
			p50++
		}
		if actual <= e.P75 {
			p75++
		}
	})
	c := &Calibration{N: n}
	if n > 0 {
		c.WithinP25 = float64(p25) / float64(n)
		c.WithinP50 = float64(p50) / float64(n)
		c.WithinP75 = float64(p75) / float64(n)
	}
	return c
}

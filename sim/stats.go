package sim

import (
	"cmp"
	"math"
	"slices"
)

// KendallTau returns Kendall's tau-b between x and y, which must have the
// same length: the normalized difference between concordant and
// discordant pairs, corrected for ties in either. It is 1 when y orders
// the pairs as x does, −1 when it reverses them, near 0 when they are
// independent, and NaN when either has fewer than two distinct values.
// It takes O(n log n) time (Knight's algorithm) and O(n) memory, and is
// safe for concurrent use.
func KendallTau(x, y []int64) float64 {
	tau, _ := kendall(x, y)
	return tau
}

// kendall returns Kendall's tau-b between x and y and its ceiling: the
// tau-b of the same ties with no discordant pair, below 1 when x and y tie
// differently (as arrival minutes, shared by many visitors, and admission
// instants do).
func kendall(x, y []int64) (tau, ceiling float64) {
	n := len(x)
	if n != len(y) {
		panic("sim: KendallTau of slices of different lengths")
	}
	if n < 2 {
		return math.NaN(), math.NaN()
	}
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		return cmp.Or(cmp.Compare(x[a], x[b]), cmp.Compare(y[a], y[b]))
	})
	ys := make([]int64, n)
	var tiesX, tiesXY int64 // pairs tied in x, and in both
	runX, runXY := int64(1), int64(1)
	for i, k := range idx {
		ys[i] = y[k]
		if i == 0 {
			continue
		}
		p := idx[i-1]
		if x[k] == x[p] {
			runX++
			if y[k] == y[p] {
				runXY++
			} else {
				tiesXY += runXY * (runXY - 1) / 2
				runXY = 1
			}
		} else {
			tiesX += runX * (runX - 1) / 2
			tiesXY += runXY * (runXY - 1) / 2
			runX, runXY = 1, 1
		}
	}
	tiesX += runX * (runX - 1) / 2
	tiesXY += runXY * (runXY - 1) / 2

	// Pairs ordered by x (ties broken by y) whose y are in reverse order
	// are exactly the discordant pairs: count them while sorting by y.
	discordant := mergeCount(ys, make([]int64, n))
	var tiesY int64
	run := int64(1)
	for i := 1; i < n; i++ {
		if ys[i] == ys[i-1] {
			run++
		} else {
			tiesY += run * (run - 1) / 2
			run = 1
		}
	}
	tiesY += run * (run - 1) / 2

	pairs := int64(n) * int64(n-1) / 2
	untied := float64(pairs - tiesX - tiesY + tiesXY)
	den := math.Sqrt(float64(pairs-tiesX)) * math.Sqrt(float64(pairs-tiesY))
	if den == 0 {
		return math.NaN(), math.NaN()
	}
	return (untied - 2*float64(discordant)) / den, untied / den
}

// mergeCount sorts a (using buf, of the same length) and returns the number
// of pairs i < j with a[i] > a[j].
func mergeCount(a, buf []int64) int64 {
	n := len(a)
	var swaps int64
	// Bottom-up: sort runs of 16 by insertion, then merge.
	const run = 16
	for lo := 0; lo < n; lo += run {
		hi := min(lo+run, n)
		for i := lo + 1; i < hi; i++ {
			v := a[i]
			j := i
			for j > lo && a[j-1] > v {
				a[j] = a[j-1]
				j--
			}
			swaps += int64(i - j)
			a[j] = v
		}
	}
	src, dst := a, buf
	for width := run; width < n; width *= 2 {
		for lo := 0; lo < n; lo += 2 * width {
			mid := min(lo+width, n)
			hi := min(lo+2*width, n)
			i, j, k := lo, mid, lo
			for i < mid && j < hi {
				if src[j] < src[i] {
					dst[k] = src[j]
					swaps += int64(mid - i)
					j++
				} else {
					dst[k] = src[i]
					i++
				}
				k++
			}
			k += copy(dst[k:], src[i:mid])
			copy(dst[k:], src[j:hi])
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
	return swaps
}

// ChiSquareSurvival returns the probability that a chi-square variable
// with dof degrees of freedom exceeds x: the p-value of a chi-square
// statistic x. It is the regularized upper incomplete gamma function
// Q(dof/2, x/2).
func ChiSquareSurvival(x float64, dof int) float64 {
	if dof <= 0 || math.IsNaN(x) {
		return math.NaN()
	}
	if x <= 0 {
		return 1
	}
	return gammaQ(float64(dof)/2, x/2)
}

// gammaQ is the regularized upper incomplete gamma function Q(a, x) =
// Γ(a, x) / Γ(a), for a > 0 and x ≥ 0: by its series when x < a + 1, by
// its continued fraction otherwise, each where it converges fast.
func gammaQ(a, x float64) float64 {
	if x < a+1 {
		return 1 - gammaPSeries(a, x)
	}
	return gammaQFraction(a, x)
}

const (
	gammaEps   = 1e-15
	gammaIters = 10_000
)

// gammaLogPrefix is log(x^a e^−x / Γ(a)).
func gammaLogPrefix(a, x float64) float64 {
	lg, _ := math.Lgamma(a)
	return a*math.Log(x) - x - lg
}

// gammaPSeries is P(a, x) = x^a e^−x / Γ(a) · Σ xⁿ / (a (a+1) … (a+n)).
func gammaPSeries(a, x float64) float64 {
	if x == 0 {
		return 0
	}
	term := 1 / a
	sum := term
	for n := 1; n < gammaIters; n++ {
		term *= x / (a + float64(n))
		sum += term
		if math.Abs(term) < math.Abs(sum)*gammaEps {
			break
		}
	}
	return sum * math.Exp(gammaLogPrefix(a, x))
}

// gammaQFraction is Q(a, x) by the continued fraction
// x^a e^−x / Γ(a) · 1/(x+1−a− 1(1−a)/(x+3−a− 2(2−a)/(x+5−a− …))),
// evaluated with the modified Lentz method.
func gammaQFraction(a, x float64) float64 {
	const tiny = 1e-300
	b := x + 1 - a
	c := 1 / tiny
	d := 1 / b
	h := d
	for i := 1; i < gammaIters; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < gammaEps {
			break
		}
	}
	return math.Exp(gammaLogPrefix(a, x)) * h
}

// quantile returns the q-quantile of sorted (linear interpolation between
// order statistics); NaN when it is empty.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	f := pos - float64(i)
	return sorted[i]*(1-f) + sorted[i+1]*f
}

// chiSquareDeciles builds the k × k table of x deciles against y deciles
// (by rank, ties broken by index) and tests it for independence.
func chiSquareDeciles(x, y []int64, k int) ChiSquare {
	n := len(x)
	cs := ChiSquare{N: n, DoF: (k - 1) * (k - 1)}
	if n < k {
		cs.Statistic, cs.PValue = math.NaN(), math.NaN()
		return cs
	}
	rx, ry := ranks(x), ranks(y)
	table := make([]float64, k*k)
	for i := range n {
		table[rx[i]*k/n*k+ry[i]*k/n]++
	}
	// Decile sizes differ by at most one, so the expected count of each
	// cell is the product of its margins over n.
	rows := make([]float64, k)
	cols := make([]float64, k)
	for i := range k {
		for j := range k {
			rows[i] += table[i*k+j]
			cols[j] += table[i*k+j]
		}
	}
	for i := range k {
		for j := range k {
			e := rows[i] * cols[j] / float64(n)
			d := table[i*k+j] - e
			cs.Statistic += d * d / e
		}
	}
	cs.PValue = ChiSquareSurvival(cs.Statistic, cs.DoF)
	return cs
}

// ranks returns the rank of each element of v (0-based; ties by index).
func ranks(v []int64) []int {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(v[a], v[b]) })
	r := make([]int, len(v))
	for rank, i := range idx {
		r[i] = rank
	}
	return r
}

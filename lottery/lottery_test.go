package lottery_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/lottery"
)

// An hour of random queueing with 30-second intervals, and its first
// interval's number.
const (
	hourStart  = 1764853200 // 2025-12-04 13:00 UTC
	intervalMS = 30_000
	firstW     = hourStart * 1000 / intervalMS
)

var hour = lottery.Period{Start: hourStart, End: hourStart + 3600}

// testSeed returns a fixed seed whose bytes start at b.
func testSeed(b byte) lottery.Seed {
	var s lottery.Seed
	for i := range s {
		s[i] = b + byte(i)
	}
	return s
}

// honest returns the record an honest room publishes for the hour: odds p
// for its first n intervals and the seed revealed.
func honest(seed lottery.Seed, p float64, n int) *lottery.Record {
	r := &lottery.Record{Period: hour, Commitment: lottery.Commit(seed, hour), Seed: seed, IntervalMS: intervalMS}
	for k := range int64(n) {
		r.Odds = append(r.Odds, lottery.Odds{Interval: firstW + k, Odds: p})
	}
	return r
}

// cuts returns the cuts cs of the intervals from firstW+from on, one an
// interval, leaving out the intervals whose cut in cs is negative.
func cuts(from int64, cs ...float64) []lottery.Odds {
	var os []lottery.Odds
	for k, c := range cs {
		if c >= 0 {
			os = append(os, lottery.Odds{Interval: firstW + from + int64(k), Odds: c})
		}
	}
	return os
}

// placesOf returns the list of places a room publishes for seed's
// shuffle when its pre-queue held identities 1 to n and those of more:
// sorted, one each.
func placesOf(seed lottery.Seed, n int, more ...uint64) []float64 {
	var ps []float64
	for id := uint64(1); id <= uint64(n); id++ {
		ps = append(ps, lottery.Place(seed, id))
	}
	for _, id := range more {
		ps = append(ps, lottery.Place(seed, id))
	}
	slices.Sort(ps)
	return slices.Compact(ps)
}

// rankIn returns 1 + the number of places below p.
func rankIn(places []float64, p float64) int {
	k := 1
	for _, q := range places {
		if q < p {
			k++
		}
	}
	return k
}

// placed returns an identity whose place in seed's shuffle is in [lo, hi).
func placed(t *testing.T, seed lottery.Seed, lo, hi float64) uint64 {
	for id := uint64(1); id < 10_000; id++ {
		if p := lottery.Place(seed, id); p >= lo && p < hi {
			return id
		}
	}
	t.Fatal("no place found")
	return 0
}

// firstWin returns the first interval, from firstW on, where id's draw
// falls under p, or 0.
func firstWin(seed lottery.Seed, id uint64, p float64, n int) int64 {
	for k := range int64(n) {
		if lottery.Draw(seed, id, firstW+k) < p {
			return firstW + k
		}
	}
	return 0
}

// loser returns an identity that wins none of the first n draws at p.
func loser(t *testing.T, seed lottery.Seed, p float64, n int) uint64 {
	for id := uint64(1); id < 10_000; id++ {
		if firstWin(seed, id, p, n) == 0 {
			return id
		}
	}
	t.Fatal("no loser found")
	return 0
}

func TestVerify(t *testing.T) {
	seed := testSeed(1)
	const p, n = 0.2, 20
	const winner = 7
	won := firstWin(seed, winner, p, n)
	require.NotZero(t, won)
	lose := loser(t, seed, p, n)
	// A pre-queued visitor, and a shuffle let in from interval firstW+30
	// (which has no odds): its cut below their place at first, none in
	// the next interval, above it in the one after, then everyone.
	pre := placed(t, seed, 0.3, 0.7)
	place := lottery.Place(seed, pre)
	const w0 = firstW + 30
	shuffle := func(cs ...float64) func() *lottery.Record {
		return func() *lottery.Record {
			r := honest(seed, p, n)
			r.Cuts = cuts(30, cs...)
			r.Places = placesOf(seed, 50, pre)
			return r
		}
	}
	inTurn := shuffle(place/2, -1, (place+1)/2, 1)
	admitted := func(w int64) func(*lottery.Record) lottery.Claim {
		return func(*lottery.Record) lottery.Claim { return lottery.Claim{Shuffled: true, Admitted: w} }
	}
	// A visitor whose draw two intervals before firstW+5 is under one half,
	// and whose draws since are not: let in at firstW+5 if the odds of that
	// interval, or of the earlier one's own (a win holds), are one half;
	// not by a later interval's.
	at := int64(firstW + 5)
	held := uint64(1)
	for ; lottery.Draw(seed, held, at) < 0.5 || lottery.Draw(seed, held, at-1) < 0.5 || lottery.Draw(seed, held, at-2) >= 0.5; held++ {
	}
	oddsOnly := func(w int64, o float64) func() *lottery.Record {
		return func() *lottery.Record {
			r := honest(seed, p, n)
			for i := range r.Odds {
				r.Odds[i].Odds = 0
				if r.Odds[i].Interval == w {
					r.Odds[i].Odds = o
				}
			}
			return r
		}
	}
	waited := func(to int64) []int64 {
		var ws []int64
		for w := int64(firstW); w < to; w++ {
			ws = append(ws, w)
		}
		return ws
	}
	// The room, after the period, looks for a seed under which the loser
	// won, and publishes it with a commitment to it.
	shown := lottery.Commit(seed, hour)
	var forged lottery.Seed
	var forgedWin int64
	for b := byte(2); forgedWin == 0; b++ {
		forged = testSeed(b)
		forgedWin = firstWin(forged, lose, p, n)
	}
	recommitted := func() *lottery.Record {
		r := honest(forged, p, n)
		r.Commitment = lottery.Commit(forged, hour)
		return r
	}
	for _, tc := range []struct {
		name   string
		id     uint64
		record func() *lottery.Record
		claim  func(r *lottery.Record) lottery.Claim
		want   error
	}{
		{"honest admission", winner, func() *lottery.Record { return honest(seed, p, n) },
			func(*lottery.Record) lottery.Claim { return lottery.Claim{Waited: waited(won), Admitted: won} }, nil},
		{"the commitment shown", winner, func() *lottery.Record { return honest(seed, p, n) },
			func(*lottery.Record) lottery.Claim { return lottery.Claim{Commitment: shown, Admitted: won} }, nil},
		{"a seed chosen after the fact, with a commitment to it", lose, recommitted,
			func(*lottery.Record) lottery.Claim { return lottery.Claim{Commitment: shown, Admitted: forgedWin} }, lottery.ErrCommitmentChanged},
		{"a commitment changed before the seed is revealed", lose, func() *lottery.Record {
			r := recommitted()
			r.Seed = lottery.Seed{}
			return r
		}, func(*lottery.Record) lottery.Claim { return lottery.Claim{Commitment: shown} }, lottery.ErrCommitmentChanged},
		{"the same, the commitment shown not given: unchecked", lose, recommitted,
			func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: forgedWin} }, nil},
		{"admission held two intervals after the win", winner, func() *lottery.Record { return honest(seed, p, n) },
			func(*lottery.Record) lottery.Claim { return lottery.Claim{Waited: waited(won + 2), Admitted: won + 2} }, nil},
		{"admission three intervals after the last win", winner, func() *lottery.Record {
			r := honest(seed, p, n)
			for i := range r.Odds {
				if r.Odds[i].Interval > won {
					r.Odds[i].Odds = 0
				}
			}
			return r
		}, func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: won + 3} }, lottery.ErrNotDrawn},
		{"an earlier draw under the odds of the interval let in", held, oddsOnly(at, 0.5),
			func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: at} }, nil},
		{"an earlier draw under its own interval's odds only", held, oddsOnly(at-2, 0.5),
			func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: at} }, nil},
		{"an earlier draw under a later interval's odds only", held, oddsOnly(at+1, 0.5),
			func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: at} }, lottery.ErrNotDrawn},
		{"an earlier draw under the odds of the interval before the one let in", held, oddsOnly(at-1, 0.5),
			func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: at} }, nil},
		{"let in where neither the interval nor the one before has odds", held, func() *lottery.Record {
			r := honest(seed, p, n)
			r.Odds = slices.DeleteFunc(r.Odds, func(o lottery.Odds) bool { return o.Interval == at || o.Interval == at-1 })
			return r
		}, func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: at} }, lottery.ErrMissingOdds},
		{"a visitor still waiting", lose, func() *lottery.Record { return honest(seed, p, n) },
			func(*lottery.Record) lottery.Claim {
				return lottery.Claim{Waited: waited(firstW + n), Shown: []lottery.Odds{{Interval: firstW, Odds: p}}}
			}, nil},
		{"let in without a win", lose, func() *lottery.Record { return honest(seed, p, n) },
			func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: firstW + 5} }, lottery.ErrNotDrawn},
		{"tampered seed", winner, func() *lottery.Record {
			r := honest(seed, p, n)
			r.Seed[0] ^= 1
			return r
		}, func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: won} }, lottery.ErrSeed},
		{"seed of another period", winner, func() *lottery.Record {
			r := honest(seed, p, n)
			r.Commitment = lottery.Commit(seed, lottery.Period{Start: hourStart - 3600, End: hourStart})
			return r
		}, func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: won} }, lottery.ErrSeed},
		{"another period's record for this seed", winner, func() *lottery.Record {
			r := honest(seed, p, n)
			r.Period = lottery.Period{Start: hourStart, End: hourStart + 7200}
			return r
		}, func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: won} }, lottery.ErrSeed},
		{"seed not revealed", winner, func() *lottery.Record {
			r := honest(seed, p, n)
			r.Seed = lottery.Seed{}
			return r
		}, func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: won} }, lottery.ErrNotRevealed},
		{"odds lowered after the fact", winner, func() *lottery.Record {
			r := honest(seed, p, n)
			for i := range r.Odds {
				r.Odds[i].Odds = lottery.Draw(seed, winner, r.Odds[i].Interval) / 2
			}
			return r
		}, func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: won} }, lottery.ErrNotDrawn},
		{"odds raised after the fact", lose, func() *lottery.Record {
			r := honest(seed, p, n)
			r.Odds[5].Odds = 1
			return r
		}, func(*lottery.Record) lottery.Claim {
			return lottery.Claim{Shown: []lottery.Odds{{Interval: firstW + 5, Odds: p}}, Admitted: firstW + 5}
		}, lottery.ErrOddsChanged},
		{"odds not published", winner, func() *lottery.Record {
			r := honest(seed, p, n)
			r.Odds = r.Odds[:max(0, won-1-firstW)] // neither the interval nor the one before
			return r
		}, func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: won} }, lottery.ErrMissingOdds},
		{"let in in turn, after waiting in intervals without odds", pre, inTurn, func(*lottery.Record) lottery.Claim {
			return lottery.Claim{Shuffled: true, Waited: []int64{w0, w0 + 1}, Admitted: w0 + 2}
		}, nil},
		{"let in in turn under the cut of the interval before", pre, inTurn, admitted(w0 + 4), nil},
		{"let in when everyone is", pre, shuffle(0, 0, 1), admitted(w0 + 2), nil},
		{"let in out of turn", pre, inTurn, admitted(w0), lottery.ErrOutOfTurn},
		{"let in out of turn under the cut of the interval before", pre, inTurn, admitted(w0 + 1), lottery.ErrOutOfTurn},
		{"let in at a cut equal to the place", pre, shuffle(place, 1), admitted(w0), lottery.ErrOutOfTurn},
		{"let in at a cut just above the place", pre, shuffle(math.Nextafter(place, 1), 1), admitted(w0), nil},
		{"let in under the latest cut, two intervals before", pre, inTurn, admitted(w0 + 5), nil},
		{"let in before the first cut", pre, inTurn, admitted(w0 - 1), lottery.ErrMissingOdds},
		{"a shuffled admission is not held to the odds", winner, func() *lottery.Record {
			r := honest(seed, p, n)
			r.Places = placesOf(seed, 50, winner)
			return r
		}, admitted(won), lottery.ErrMissingOdds},
		{"a drawn admission is not held to the cuts", pre, inTurn,
			func(*lottery.Record) lottery.Claim { return lottery.Claim{Admitted: w0 + 2} }, lottery.ErrMissingOdds},
		{"a shuffled visitor's shown cuts, as recorded", pre, inTurn, func(*lottery.Record) lottery.Claim {
			return lottery.Claim{Shuffled: true, Shown: []lottery.Odds{{Interval: w0, Odds: place / 2}, {Interval: w0 + 2, Odds: (place + 1) / 2}}, Admitted: w0 + 2}
		}, nil},
		{"a shuffled visitor shown a cut the record has not fixed in that interval", pre, inTurn, func(*lottery.Record) lottery.Claim {
			return lottery.Claim{Shuffled: true, Shown: []lottery.Odds{{Interval: w0 + 1, Odds: place / 2}}}
		}, lottery.ErrMissingOdds},
		{"a shuffled visitor's shown cut raised after the fact, to let them in out of turn", pre, shuffle(1), func(*lottery.Record) lottery.Claim {
			return lottery.Claim{Shuffled: true, Shown: []lottery.Odds{{Interval: w0, Odds: place / 2}}, Admitted: w0}
		}, lottery.ErrOddsChanged},
		{"a shuffled visitor shown a cut before the first recorded", pre, inTurn, func(*lottery.Record) lottery.Claim {
			return lottery.Claim{Shuffled: true, Shown: []lottery.Odds{{Interval: w0 - 1, Odds: 0.1}}}
		}, lottery.ErrMissingOdds},
		{"a shuffled visitor is not held to the odds they were not shown", pre, inTurn, func(*lottery.Record) lottery.Claim {
			return lottery.Claim{Shuffled: true, Shown: []lottery.Odds{{Interval: firstW, Odds: p / 2}}, Admitted: w0 + 2}
		}, lottery.ErrMissingOdds},
		{"a cut decreasing", pre, shuffle((place+1)/2, place/2, 1), admitted(w0 + 2), lottery.ErrRecord},
		{"a shuffle's tampered seed", pre, func() *lottery.Record {
			r := inTurn()
			r.Seed[31] ^= 1
			return r
		}, admitted(w0 + 2), lottery.ErrSeed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.record()
			c := tc.claim(r)
			rep, err := lottery.Verify(r, tc.id, c)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			if !c.Shuffled {
				assert.NotEmpty(t, rep.Draws)
				return
			}
			assert.Equal(t, lottery.Place(seed, tc.id), rep.Place)
			assert.Greater(t, rep.Cut, rep.Place)
			assert.Equal(t, rankIn(r.Places, rep.Place), rep.Rank)
			assert.Equal(t, len(r.Places), rep.Listed)
		})
	}

	// A claim of the wrong interval, next to one where the draw held: the
	// room broke no word there, and the error says which to claim.
	r := honest(seed, p, n)
	for i := range r.Odds {
		if r.Odds[i].Interval > won {
			r.Odds[i].Odds = 0
		}
	}
	_, err := lottery.Verify(r, winner, lottery.Claim{Admitted: won + 3})
	require.ErrorIs(t, err, lottery.ErrNotDrawn)
	assert.Contains(t, err.Error(), fmt.Sprintf("it held at interval %d:", won+2))
	_, err = lottery.Verify(r, winner, lottery.Claim{Admitted: won + 4})
	require.ErrorIs(t, err, lottery.ErrNotDrawn)
	assert.NotContains(t, err.Error(), "it held", "two intervals off")
}

// The report lists each draw named, with its odds, whether won, and the
// visitor's place when the record has cuts.
func TestVerifyReport(t *testing.T) {
	seed := testSeed(2)
	r := honest(seed, 0.5, 10)
	rep, err := lottery.Verify(r, 2, lottery.Claim{Waited: []int64{firstW + 3, firstW + 1, firstW + 1}})
	require.NoError(t, err)
	require.Len(t, rep.Draws, 2)
	for i, w := range []int64{firstW + 1, firstW + 3} {
		d := lottery.Draw(seed, 2, w)
		assert.Equal(t, lottery.Drawn{Interval: w, Draw: d, Odds: 0.5, Won: d < 0.5}, rep.Draws[i])
	}
	assert.Zero(t, rep.Place)
	assert.Zero(t, rep.Cut)

	// With cuts, the place; with a shuffled admission, the cut it is held
	// to (the greater of its interval's and the one before's), and no
	// draws of the intervals before it.
	r.Cuts = cuts(12, 0.25, 0.5, -1, 1)
	rep, err = lottery.Verify(r, 2, lottery.Claim{Waited: []int64{firstW + 1}})
	require.NoError(t, err)
	assert.Equal(t, lottery.Place(seed, 2), rep.Place)
	assert.Zero(t, rep.Cut)
	id := placed(t, seed, 0, 0.5)
	r.Places = placesOf(seed, 40, id)
	rep, err = lottery.Verify(r, id, lottery.Claim{Shuffled: true, Admitted: firstW + 14})
	require.NoError(t, err)
	place := lottery.Place(seed, id)
	assert.Equal(t, lottery.Report{Place: place, Cut: 0.5, Rank: rankIn(r.Places, place), Listed: len(r.Places)}, rep)

	// Not let in: the rank all the same; not shuffled: no rank, though
	// the record lists the place.
	rep, err = lottery.Verify(r, id, lottery.Claim{Shuffled: true})
	require.NoError(t, err)
	assert.Equal(t, lottery.Report{Place: place, Rank: rankIn(r.Places, place), Listed: len(r.Places)}, rep)
	rep, err = lottery.Verify(r, id, lottery.Claim{})
	require.NoError(t, err)
	assert.Equal(t, lottery.Report{Place: place}, rep)
}

// boundaryCase is a period and a refresh interval of it, and whether the
// interval belongs to the period: whether its last millisecond lies in
// it.
type boundaryCase struct {
	name       string
	period     lottery.Period
	intervalMS int64
	w          int64
	holds      bool
}

// boundaryCases are the intervals at the edges of periods: aligned hours,
// a period that starts a second after a state was made, one cut short,
// and intervals that do not divide an hour.
func boundaryCases() []boundaryCase {
	const odd = 13_000 // intervals straddle the starts of this hour and the next
	straddling := int64(hourStart * 1000 / odd)
	next := lottery.Period{Start: hourStart + 3600, End: hourStart + 7200}
	return []boundaryCase{
		{"the hour's first interval", hour, intervalMS, firstW, true},
		{"the interval before the hour", hour, intervalMS, firstW - 1, false},
		{"the hour's last interval", hour, intervalMS, firstW + 119, true},
		{"the interval after the hour", hour, intervalMS, firstW + 120, false},
		{"a period from the next second: the interval in progress", lottery.Period{Start: hourStart + 1, End: hourStart + 3600}, intervalMS, firstW, true},
		{"a period from the interval's last second", lottery.Period{Start: hourStart + 29, End: hourStart + 3600}, intervalMS, firstW, true},
		{"a period from the interval's end", lottery.Period{Start: hourStart + 30, End: hourStart + 3600}, intervalMS, firstW, false},
		{"a period cut short: the interval straddling its end", lottery.Period{Start: hourStart, End: hourStart + 3610}, intervalMS, firstW + 120, false},
		{"the period after it: the interval straddling its start", lottery.Period{Start: hourStart + 3610, End: hourStart + 7200}, intervalMS, firstW + 120, true},
		{"an interval straddling the hour's start", hour, odd, straddling, true},
		{"the same interval, the hour before", lottery.Period{Start: hourStart - 3600, End: hourStart}, odd, straddling, false},
		{"the interval straddling the hour's end", hour, odd, (hourStart + 3600) * 1000 / odd, false},
		{"the same interval, the next hour", next, odd, (hourStart + 3600) * 1000 / odd, true},
		{"the last interval wholly in the hour", hour, odd, (hourStart+3600)*1000/odd - 1, true},
	}
}

// A refresh interval belongs to the period that holds its last
// millisecond: the interval that straddles a period's start draws under
// its seed, and a visitor let in during it by its draw verifies against
// that period's record and no other.
func TestPeriodBoundaries(t *testing.T) {
	seed := testSeed(14)
	for _, tc := range boundaryCases() {
		t.Run(tc.name, func(t *testing.T) {
			r := &lottery.Record{Period: tc.period, Commitment: lottery.Commit(seed, tc.period), Seed: seed, IntervalMS: tc.intervalMS}
			want := lottery.ErrMissingOdds
			if !tc.holds {
				want = lottery.ErrRecord // verify it with its own period's record
			}
			_, err := lottery.Verify(r, 1, lottery.Claim{Waited: []int64{tc.w}})
			require.ErrorIs(t, err, want, "a claim of an interval without odds")
			r.Odds = []lottery.Odds{{Interval: tc.w, Odds: 0.5}}
			id := uint64(1)
			for lottery.Draw(seed, id, tc.w) >= 0.5 {
				id++
			}
			rep, err := lottery.Verify(r, id, lottery.Claim{Waited: []int64{tc.w}, Admitted: tc.w})
			if !tc.holds {
				require.ErrorIs(t, err, lottery.ErrRecord, "odds of an interval of another period")
				return
			}
			require.NoError(t, err)
			require.Len(t, rep.Draws, 1)
			assert.Equal(t, tc.w, rep.Draws[0].Interval)
			assert.True(t, rep.Draws[0].Won)
		})
	}
}

// A shuffle's published list of places: each pre-queued visitor finds
// their place in it, at the rank they noted; a list changed after the
// fact, or malformed, fails.
func TestVerifyPlaces(t *testing.T) {
	seed := testSeed(13)
	const visitors = 1000
	const ulp = 1.0 / (1 << 53)
	id := placed(t, seed, 0.3, 0.7)
	require.LessOrEqual(t, id, uint64(visitors))
	place := lottery.Place(seed, id)
	all := placesOf(seed, visitors)
	require.Len(t, all, visitors)
	at := slices.Index(all, place)
	require.Positive(t, at)
	rank := at + 1 // 1 + the places below
	require.NotContains(t, all, place-ulp)
	require.Less(t, all[0], 0.25, "the first place's float steps are finer than 2^-53")
	const w = firstW + 5 // the cut in force: below the place at w, 1 from w+1
	shuffled := lottery.Claim{Shuffled: true, Admitted: w + 1}
	noted := func(k int) lottery.Claim { c := shuffled; c.Rank = k; return c }
	for _, tc := range []struct {
		name   string
		change func(ps []float64) []float64
		claim  lottery.Claim
		want   error
		rank   int // Report.Rank
	}{
		{"listed among 1,000, let in", nil, shuffled, nil, rank},
		{"listed, still waiting", nil, lottery.Claim{Shuffled: true}, nil, rank},
		{"the rank noted", nil, noted(rank), nil, rank},
		{"the rank noted, still waiting", nil, lottery.Claim{Shuffled: true, Rank: rank}, nil, rank},
		{"a place inserted before the visitor's", func(ps []float64) []float64 { return slices.Insert(ps, at, place-ulp) },
			noted(rank), lottery.ErrRankMoved, rank + 1},
		{"a place inserted, no rank noted", func(ps []float64) []float64 { return slices.Insert(ps, at, place-ulp) },
			shuffled, nil, rank + 1},
		{"a place taken out before the visitor's", func(ps []float64) []float64 { return slices.Delete(ps, 0, 1) },
			noted(rank), lottery.ErrRankMoved, rank - 1},
		{"a place added after the visitor's", func(ps []float64) []float64 { return append(ps, 1-ulp) },
			noted(rank), nil, rank},
		{"the rank moved, still waiting", func(ps []float64) []float64 { return slices.Delete(ps, 0, 1) },
			lottery.Claim{Shuffled: true, Rank: rank}, lottery.ErrRankMoved, rank - 1},
		{"the rank moved, before the turn checked", func(ps []float64) []float64 { return slices.Delete(ps, 0, 1) },
			lottery.Claim{Shuffled: true, Admitted: w, Rank: rank}, lottery.ErrRankMoved, rank - 1},
		{"the rank in order, let in out of turn", nil, lottery.Claim{Shuffled: true, Admitted: w, Rank: rank}, lottery.ErrOutOfTurn, rank},
		{"the visitor's place taken out", func(ps []float64) []float64 { return slices.Delete(ps, at, at+1) },
			shuffled, lottery.ErrUnlisted, 0},
		{"the visitor's place taken out, before the turn checked", func(ps []float64) []float64 { return slices.Delete(ps, at, at+1) },
			lottery.Claim{Shuffled: true, Admitted: w}, lottery.ErrUnlisted, 0},
		{"the visitor's place moved by 2^-53", func(ps []float64) []float64 { ps[at] += ulp; return ps },
			shuffled, lottery.ErrUnlisted, 0},
		{"no list", func([]float64) []float64 { return nil }, shuffled, lottery.ErrUnlisted, 0},
		{"no list, still waiting", func([]float64) []float64 { return nil }, lottery.Claim{Shuffled: true}, lottery.ErrUnlisted, 0},
		{"no list, not shuffled", func([]float64) []float64 { return nil }, lottery.Claim{}, nil, 0},
		{"unsorted", func(ps []float64) []float64 { ps[3], ps[4] = ps[4], ps[3]; return ps }, shuffled, lottery.ErrRecord, 0},
		{"a duplicate", func(ps []float64) []float64 { ps[5] = ps[4]; return ps }, shuffled, lottery.ErrRecord, 0},
		{"the visitor's place twice", func(ps []float64) []float64 { return slices.Insert(ps, at, place) }, shuffled, lottery.ErrRecord, 0},
		{"a place of 1", func(ps []float64) []float64 { return append(ps, 1) }, shuffled, lottery.ErrRecord, 0},
		{"a place above 1", func(ps []float64) []float64 { return append(ps, 1.5) }, shuffled, lottery.ErrRecord, 0},
		{"an infinite place", func(ps []float64) []float64 { return append(ps, math.Inf(1)) }, shuffled, lottery.ErrRecord, 0},
		{"a negative place", func(ps []float64) []float64 { return slices.Insert(ps, 0, -ulp) }, shuffled, lottery.ErrRecord, 0},
		{"a NaN place", func(ps []float64) []float64 { ps[10] = math.NaN(); return ps }, shuffled, lottery.ErrRecord, 0},
		{"a NaN place, not shuffled", func(ps []float64) []float64 { ps[10] = math.NaN(); return ps }, lottery.Claim{}, lottery.ErrRecord, 0},
		{"a place not a multiple of 2^-53", func(ps []float64) []float64 { ps[0] = math.Nextafter(ps[0], 1); return ps },
			shuffled, lottery.ErrRecord, 0},
		{"a tiny place", func(ps []float64) []float64 { return slices.Insert(ps, 0, 1e-300) }, shuffled, lottery.ErrRecord, 0},
		{"a place of 0", func(ps []float64) []float64 { return slices.Insert(ps, 0, 0) }, noted(rank), lottery.ErrRankMoved, rank + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := honest(seed, 0, 0)
			r.Cuts = []lottery.Odds{{Interval: w, Odds: place / 2}, {Interval: w + 1, Odds: 1}}
			r.Places = slices.Clone(all)
			if tc.change != nil {
				r.Places = tc.change(r.Places)
			}
			rep, err := lottery.Verify(r, id, tc.claim)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.rank, rep.Rank)
			if tc.rank == 0 {
				assert.Zero(t, rep.Listed)
				return
			}
			assert.Equal(t, len(r.Places), rep.Listed)
			assert.Equal(t, place, r.Places[rep.Rank-1])
		})
	}

	// A shuffle's tampered seed: no rank.
	r := honest(seed, 0, 0)
	r.Places = all
	r.Seed[0] ^= 1
	rep, err := lottery.Verify(r, id, noted(rank))
	require.ErrorIs(t, err, lottery.ErrSeed)
	assert.Zero(t, rep.Rank)
}

// Draw is the spec's: the first 8 bytes of HMAC-SHA256(seed, domain ‖
// identity ‖ interval), shifted right by 11, over 2^53, whatever the seed
// and the identity's and interval's bytes.
func TestDraw(t *testing.T) {
	for _, tc := range []struct {
		seed lottery.Seed
		id   uint64
		w    int64
	}{
		{testSeed(10), 0, 0},
		{testSeed(10), 1, 354_012_345},
		{testSeed(11), 0xfedcba9876543210, -1},
		{lottery.Seed{}, math.MaxUint64, math.MaxInt64},
		{lottery.Seed{0: 0xff, 31: 0x80}, 42, math.MinInt64},
	} {
		m := hmac.New(sha256.New, tc.seed[:])
		m.Write([]byte("waitingroom lottery v1 draw"))
		m.Write(binary.BigEndian.AppendUint64(nil, tc.id))
		m.Write(binary.BigEndian.AppendUint64(nil, uint64(tc.w)))
		want := float64(binary.BigEndian.Uint64(m.Sum(nil))>>11) / (1 << 53)
		assert.Equal(t, want, lottery.Draw(tc.seed, tc.id, tc.w), "%+v", tc)
	}
}

// BenchmarkDraw is a draw's cost: a waiting visitor's request in random
// admission makes up to three.
func BenchmarkDraw(b *testing.B) {
	seed := testSeed(10)
	b.ReportAllocs()
	var sum float64
	for i := 0; b.Loop(); i++ {
		sum += lottery.Draw(seed, uint64(i), 354_012_345)
	}
	if sum < 0 {
		b.Fatal(sum)
	}
}

// Place is the spec's: the first 8 bytes of HMAC-SHA256(seed, domain ‖
// identity), shifted right by 11, over 2^53; in [0, 1), tied to the seed
// and the identity, and not a draw.
func TestPlace(t *testing.T) {
	seed := testSeed(10)
	for _, id := range []uint64{0, 1, 0xfedcba9876543210, math.MaxUint64} {
		m := hmac.New(sha256.New, seed[:])
		m.Write([]byte("waitingroom lottery v1 place"))
		m.Write(binary.BigEndian.AppendUint64(nil, id))
		want := float64(binary.BigEndian.Uint64(m.Sum(nil))>>11) / (1 << 53)
		p := lottery.Place(seed, id)
		assert.Equal(t, want, p, "identity %x", id)
		assert.GreaterOrEqual(t, p, 0.0)
		assert.Less(t, p, 1.0)
	}
	assert.NotEqual(t, lottery.Place(seed, 1), lottery.Place(seed, 2))
	assert.NotEqual(t, lottery.Place(seed, 1), lottery.Place(testSeed(11), 1))
	assert.NotEqual(t, lottery.Place(seed, 1), lottery.Draw(seed, 1, 0))
}

// A simulated shuffle: 1,000 pre-queued visitors let in over ten
// intervals, a tenth more each, each at the first interval whose cut is
// above their place. The share let in by each interval is near its cut,
// every visitor verifies, finds their place at their rank in the list,
// and would not verify an interval earlier.
func TestSimulatedCuts(t *testing.T) {
	seed := testSeed(12)
	const visitors = 1000
	r := honest(seed, 0, 0)
	for k := range 10 {
		r.Cuts = append(r.Cuts, lottery.Odds{Interval: firstW + int64(k), Odds: float64(k+1) / 10})
	}
	r.Places = placesOf(seed, visitors)
	require.Len(t, r.Places, visitors)
	in := make([]int, 10)
	for id := uint64(1); id <= visitors; id++ {
		p := lottery.Place(seed, id)
		k := 0
		for r.Cuts[k].Odds <= p {
			k++
		}
		in[k]++
		c := lottery.Claim{Shuffled: true, Admitted: firstW + int64(k)}
		rep, err := lottery.Verify(r, id, c)
		require.NoError(t, err, "visitor %d", id)
		require.Equal(t, p, r.Places[rep.Rank-1], "visitor %d: rank %d", id, rep.Rank)
		if k > 0 {
			c.Admitted--
			_, err = lottery.Verify(r, id, c)
			require.ErrorIs(t, err, lottery.ErrOutOfTurn, "visitor %d", id)
		}
	}
	// The count let in by interval k is binomial(visitors, cut): six
	// standard deviations either side of the mean.
	sum := 0
	for k, n := range in {
		sum += n
		cut := r.Cuts[k].Odds
		assert.InDelta(t, visitors*cut, float64(sum), 6*math.Sqrt(visitors*cut*(1-cut))+0.5, "interval %d", k)
	}
}

// Malformed records and claims are errors, never panics.
func TestVerifyMalformed(t *testing.T) {
	seed := testSeed(3)
	for _, tc := range []struct {
		name   string
		change func(r *lottery.Record, c *lottery.Claim)
		want   error
	}{
		{"empty record", func(r *lottery.Record, _ *lottery.Claim) { *r = lottery.Record{} }, lottery.ErrRecord},
		{"odds above 1", func(r *lottery.Record, _ *lottery.Claim) { r.Odds[0].Odds = 1.5 }, lottery.ErrRecord},
		{"negative odds", func(r *lottery.Record, _ *lottery.Claim) { r.Odds[0].Odds = -0.1 }, lottery.ErrRecord},
		{"NaN odds", func(r *lottery.Record, _ *lottery.Claim) { r.Odds[0].Odds = math.NaN() }, lottery.ErrRecord},
		{"infinite odds", func(r *lottery.Record, _ *lottery.Claim) { r.Odds[0].Odds = math.Inf(1) }, lottery.ErrRecord},
		{"odds out of order", func(r *lottery.Record, _ *lottery.Claim) { r.Odds[0], r.Odds[1] = r.Odds[1], r.Odds[0] }, lottery.ErrRecord},
		{"odds twice", func(r *lottery.Record, _ *lottery.Claim) { r.Odds[1].Interval = r.Odds[0].Interval }, lottery.ErrRecord},
		{"odds outside the period", func(r *lottery.Record, _ *lottery.Claim) { r.Odds[0].Interval = firstW - 1 }, lottery.ErrRecord},
		{"no interval length", func(r *lottery.Record, _ *lottery.Claim) { r.IntervalMS = 0 }, lottery.ErrRecord},
		{"period backwards", func(r *lottery.Record, _ *lottery.Claim) { r.End = r.Start }, lottery.ErrRecord},
		{"period beyond int64 ms", func(r *lottery.Record, _ *lottery.Claim) { r.End = math.MaxInt64 }, lottery.ErrRecord},
		{"negative period", func(r *lottery.Record, _ *lottery.Claim) { r.Start = math.MinInt64 }, lottery.ErrRecord},
		{"claim outside the period", func(_ *lottery.Record, c *lottery.Claim) { c.Admitted = math.MaxInt64 }, lottery.ErrRecord},
		{"claim before the period", func(_ *lottery.Record, c *lottery.Claim) { c.Waited = []int64{math.MinInt64} }, lottery.ErrRecord},
		{"cut above 1", func(r *lottery.Record, _ *lottery.Claim) { r.Cuts[1].Odds = 1.5 }, lottery.ErrRecord},
		{"negative cut", func(r *lottery.Record, _ *lottery.Claim) { r.Cuts[0].Odds = -0.1 }, lottery.ErrRecord},
		{"NaN cut", func(r *lottery.Record, _ *lottery.Claim) { r.Cuts[0].Odds = math.NaN() }, lottery.ErrRecord},
		{"cut decreasing", func(r *lottery.Record, _ *lottery.Claim) { r.Cuts[1].Odds = 0.1 }, lottery.ErrRecord},
		{"cuts out of order", func(r *lottery.Record, _ *lottery.Claim) { r.Cuts[0], r.Cuts[1] = r.Cuts[1], r.Cuts[0] }, lottery.ErrRecord},
		{"cut twice", func(r *lottery.Record, _ *lottery.Claim) { r.Cuts[1].Interval = r.Cuts[0].Interval }, lottery.ErrRecord},
		{"cut outside the period", func(r *lottery.Record, _ *lottery.Claim) { r.Cuts[1].Interval = firstW + 120 }, lottery.ErrRecord},
		{"cuts without an interval length", func(r *lottery.Record, c *lottery.Claim) {
			r.IntervalMS, r.Odds, *c = 0, nil, lottery.Claim{Shuffled: true}
		}, lottery.ErrRecord},
		{"places unsorted, whatever the claim", func(r *lottery.Record, _ *lottery.Claim) { r.Places = []float64{0.5, 0.25} }, lottery.ErrRecord},
		{"a negative rank", func(_ *lottery.Record, c *lottery.Claim) { c.Shuffled, c.Rank = true, -1 }, lottery.ErrRecord},
		{"a rank claimed outside the shuffle", func(_ *lottery.Record, c *lottery.Claim) { c.Rank = 1 }, lottery.ErrRecord},
		{"shown odds of no interval", func(_ *lottery.Record, c *lottery.Claim) {
			c.Shown = []lottery.Odds{{Interval: math.MinInt64, Odds: math.NaN()}}
		}, lottery.ErrRecord},
		{"shown odds of the next period's interval", func(_ *lottery.Record, c *lottery.Claim) {
			c.Shown = []lottery.Odds{{Interval: firstW + 120, Odds: 0.5}}
		}, lottery.ErrRecord},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := honest(seed, 0.5, 4)
			r.Cuts = cuts(2, 0.25, 0.5)
			c := lottery.Claim{Waited: []int64{firstW}}
			tc.change(r, &c)
			_, err := lottery.Verify(r, 1, c)
			require.ErrorIs(t, err, tc.want)
		})
	}
	_, err := lottery.Verify(nil, 1, lottery.Claim{})
	require.ErrorIs(t, err, lottery.ErrRecord)
}

// The JSON form: hex of the right length, the seed omitted until
// revealed, every value back as it was.
func TestRecordJSON(t *testing.T) {
	seed := testSeed(4)
	r := honest(seed, 1.0/3, 3)
	r.Cuts = cuts(3, 0.1, 1.0/3, 1)
	r.Places = placesOf(seed, 100)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var back lottery.Record
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, *r, back)

	r.Seed = lottery.Seed{}
	b, err = json.Marshal(r)
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"seed"`)

	for _, bad := range []string{
		`{"commitment":"abc"}`,
		`{"commitment":"` + string(make([]byte, 64)) + `"}`,
		`{"seed":"zz` + lottery.Commit(seed, hour).String()[2:] + `"}`,
		`{"cuts":[{"interval":"1"}]}`,
		`{"odds":[{"interval":1,"odds":1e999}]}`,
		`{"places":["0.5"]}`,
		`{"places":0.5}`,
	} {
		assert.Error(t, json.Unmarshal([]byte(bad), new(lottery.Record)), bad)
	}
	var s lottery.Seed
	require.NoError(t, json.Unmarshal([]byte(`""`), &s))
	assert.True(t, s.IsZero())

	// Read as JavaScript reads it (docs/verify.js): keys exactly, whole
	// numbers in any form.
	b, err = json.Marshal(honest(seed, 0.25, 1))
	require.NoError(t, err)
	text := string(b)
	for _, tc := range []struct{ name, from, to string }{
		{"a key in capitals", `"odds":[`, `"ODDS":[`},
		{"a key capitalized", `"seed":`, `"Seed":`},
		{"a key with a long s", `"seed":`, `"\u017feed":`},
		{"a key in capitals beside the key", `"odds":[`, `"Odds":[],"odds":[`},
		{"an odds key in another case", `{"interval":`, `{"Interval":`},
		{"a whole number too large for JavaScript", `"start":1764853200`, `"start":9007199254740992`},
		{"a number not whole", `"start":1764853200`, `"start":1764853200.5`},
		{"a number as a string", `"start":1764853200`, `"start":"1764853200"`},
	} {
		var r lottery.Record
		err := json.Unmarshal([]byte(strings.Replace(text, tc.from, tc.to, 1)), &r)
		assert.ErrorIs(t, err, lottery.ErrRecord, tc.name)
	}
	want := honest(seed, 0.25, 1)
	want.Prequeued = 1<<53 - 1
	for _, tc := range []struct{ name, from, to string }{
		{"whole numbers with a fraction of zero", `"interval":58828440`, `"interval":58828440.0`},
		{"whole numbers with an exponent", `"intervalMs":30000`, `"intervalMs":3e4`},
		{"a key unknown, ignored", `"odds":[`, `"oddsx":1,"odds":[`},
		{"a key given twice: the last stands", `"odds":[`, `"odds":[],"odds":[`},
		{"null for a number", `"start":1764853200`, `"start":null,"start":1764853200`},
	} {
		var r lottery.Record
		in := strings.Replace(text, tc.from, tc.to, 1)
		in = `{"prequeued":9007199254740991,` + in[1:]
		require.NoError(t, json.Unmarshal([]byte(in), &r), tc.name)
		assert.Equal(t, *want, r, tc.name)
	}
	var none lottery.Record
	require.NoError(t, json.Unmarshal([]byte(`null`), &none))
	assert.Equal(t, lottery.Record{}, none)
}

func TestIdentity(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"00000000000000ff", 255, true},
		{"FF", 255, true},
		{"ffffffffffffffff", math.MaxUint64, true},
		{"", 0, false},
		{"1ffffffffffffffff", 0, false},
		{"+1", 0, false},
		{"0x1", 0, false},
		{"1_0", 0, false},
		{"g", 0, false},
	} {
		id, err := lottery.ParseIdentity(tc.in)
		if !tc.ok {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, id)
	}
	assert.Equal(t, "00000000000000ff", lottery.FormatIdentity(255))
}

// A simulated hour: 1,000 visitors wait from the first interval and are
// let in at their first winning draw. The share of draws won is near the
// odds, and every visitor verifies.
func TestSimulatedRun(t *testing.T) {
	seed := testSeed(5)
	const visitors, n, p = 1000, 100, 0.1
	r := honest(seed, p, n)
	wins := 0
	for id := uint64(1); id <= visitors; id++ {
		for k := range int64(n) {
			if lottery.Draw(seed, id, firstW+k) < p {
				wins++
			}
		}
		c := lottery.Claim{Admitted: firstWin(seed, id, p, n)}
		for w := int64(firstW); w < c.Admitted || (c.Admitted == 0 && w < firstW+n); w++ {
			c.Waited = append(c.Waited, w)
		}
		_, err := lottery.Verify(r, id, c)
		require.NoError(t, err, "visitor %d", id)
	}
	// The wins are binomial(visitors*n, p): six standard deviations
	// either side of the mean.
	trials := float64(visitors * n)
	sigma := math.Sqrt(trials * p * (1 - p))
	assert.InDelta(t, trials*p, float64(wins), 6*sigma)
}

// The draw is uniform over [0, 1) and tied to every input.
func TestDrawInputs(t *testing.T) {
	seed := testSeed(6)
	d := lottery.Draw(seed, 1, firstW)
	assert.GreaterOrEqual(t, d, 0.0)
	assert.Less(t, d, 1.0)
	assert.NotEqual(t, d, lottery.Draw(seed, 2, firstW))
	assert.NotEqual(t, d, lottery.Draw(seed, 1, firstW+1))
	assert.NotEqual(t, d, lottery.Draw(testSeed(7), 1, firstW))
	assert.NotEqual(t, lottery.Commit(seed, hour), lottery.Commit(testSeed(7), hour))
	assert.False(t, lottery.NewSeed().IsZero())
	assert.NotEqual(t, lottery.NewSeed(), lottery.NewSeed())
}

func FuzzVerify(f *testing.F) {
	seed := testSeed(8)
	r := honest(seed, 0.3, 5)
	r.Cuts = cuts(5, 0.2, -1, 0.6, 1)
	r.Places = placesOf(seed, 5)
	b, _ := json.Marshal(r)
	f.Add(b, uint64(1), int64(firstW), false, 0)
	f.Add(b, uint64(1), int64(firstW+7), true, 3)
	f.Add([]byte(`{}`), uint64(0), int64(0), false, 0)
	f.Fuzz(func(t *testing.T, data []byte, id uint64, admitted int64, shuffled bool, rank int) {
		var r lottery.Record
		if json.Unmarshal(data, &r) != nil {
			return
		}
		_, _ = lottery.Verify(&r, id, lottery.Claim{Waited: []int64{admitted - 1}, Admitted: admitted, Shuffled: shuffled, Rank: rank})
	})
}

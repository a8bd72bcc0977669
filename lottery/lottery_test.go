package lottery_test

import (
	"encoding/json"
	"math"
	"slices"
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
// for its first n intervals, the seed revealed, and the rank hashes of ids.
func honest(seed lottery.Seed, p float64, n int, ids ...uint64) *lottery.Record {
	r := &lottery.Record{Period: hour, Commitment: lottery.Commit(seed, hour), Seed: seed, IntervalMS: intervalMS}
	for k := range int64(n) {
		r.Odds = append(r.Odds, lottery.Odds{Interval: firstW + k, Odds: p})
	}
	for _, id := range ids {
		r.Ranks = append(r.Ranks, lottery.RankHash(seed, id))
	}
	sortHashes(r.Ranks)
	return r
}

func sortHashes(hs []lottery.Hash) {
	for i := 1; i < len(hs); i++ {
		for j := i; j > 0 && string(hs[j][:]) < string(hs[j-1][:]); j-- {
			hs[j], hs[j-1] = hs[j-1], hs[j]
		}
	}
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
	ids := []uint64{7, 8, 9, 10, 11, 12}
	winner := ids[0]
	won := firstWin(seed, winner, p, n)
	require.NotZero(t, won)
	lose := loser(t, seed, p, n)
	rankOf := func(r *lottery.Record, id uint64) int {
		h := lottery.RankHash(seed, id)
		for i, x := range r.Ranks {
			if x == h {
				return i + 1
			}
		}
		return 0
	}
	// A visitor whose draw two intervals before firstW+5 is under one half,
	// and whose draw of firstW+5 is not: let in at firstW+5 only if that
	// interval's odds are one half, whatever the earlier intervals' were.
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
	for _, tc := range []struct {
		name   string
		id     uint64
		record func() *lottery.Record
		claim  func(r *lottery.Record) lottery.Claim
		want   error
	}{
		{"honest admission", winner, func() *lottery.Record { return honest(seed, p, n, ids...) },
			func(r *lottery.Record) lottery.Claim {
				return lottery.Claim{Waited: waited(won), Admitted: won, Rank: rankOf(r, winner)}
			}, nil},
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
		{"a rank moved", winner, func() *lottery.Record { return honest(seed, p, n, ids...) },
			func(r *lottery.Record) lottery.Claim { return lottery.Claim{Rank: rankOf(r, winner)%len(ids) + 1} }, lottery.ErrRank},
		{"a rank not in the list", 99, func() *lottery.Record { return honest(seed, p, n, ids...) },
			func(*lottery.Record) lottery.Claim { return lottery.Claim{Rank: 1} }, lottery.ErrRank},
		{"a rank without a list", winner, func() *lottery.Record { return honest(seed, p, n) },
			func(*lottery.Record) lottery.Claim { return lottery.Claim{Rank: 1} }, lottery.ErrRank},
		{"a hash list reordered", winner, func() *lottery.Record {
			r := honest(seed, p, n, ids...)
			r.Ranks[0], r.Ranks[1] = r.Ranks[1], r.Ranks[0]
			return r
		}, func(r *lottery.Record) lottery.Claim { return lottery.Claim{Rank: 1} }, lottery.ErrRecord},
		{"a hash replaced", winner, func() *lottery.Record {
			r := honest(seed, p, n, ids...)
			i := rankOf(r, winner) - 1
			r.Ranks[i][31] ^= 1
			sortHashes(r.Ranks)
			return r
		}, func(*lottery.Record) lottery.Claim { return lottery.Claim{Rank: 1} }, lottery.ErrRank},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.record()
			rep, err := lottery.Verify(r, tc.id, tc.claim(r))
			if tc.want == nil {
				require.NoError(t, err)
				assert.NotEmpty(t, rep.Draws)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// The report lists each draw named, with its odds, whether won, and the
// visitor's rank.
func TestVerifyReport(t *testing.T) {
	seed := testSeed(2)
	r := honest(seed, 0.5, 10, 1, 2, 3)
	rep, err := lottery.Verify(r, 2, lottery.Claim{Waited: []int64{firstW + 3, firstW + 1, firstW + 1}})
	require.NoError(t, err)
	require.Len(t, rep.Draws, 2)
	for i, w := range []int64{firstW + 1, firstW + 3} {
		d := lottery.Draw(seed, 2, w)
		assert.Equal(t, lottery.Drawn{Interval: w, Draw: d, Odds: 0.5, Won: d < 0.5}, rep.Draws[i])
	}
	assert.Positive(t, rep.Rank)
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
		{"negative rank", func(_ *lottery.Record, c *lottery.Claim) { c.Rank = -1 }, lottery.ErrRecord},
		{"shown odds of no interval", func(_ *lottery.Record, c *lottery.Claim) {
			c.Shown = []lottery.Odds{{Interval: math.MinInt64, Odds: math.NaN()}}
		}, lottery.ErrMissingOdds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := honest(seed, 0.5, 4, 1, 2)
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
	r := honest(seed, 1.0/3, 3, 5, 6)
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
		`{"ranks":["00"]}`,
		`{"odds":[{"interval":1,"odds":1e999}]}`,
	} {
		assert.Error(t, json.Unmarshal([]byte(bad), new(lottery.Record)), bad)
	}
	var s lottery.Seed
	require.NoError(t, json.Unmarshal([]byte(`""`), &s))
	assert.True(t, s.IsZero())
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
	assert.NotEqual(t, lottery.RankHash(seed, 1), lottery.RankHash(seed, 2))
	assert.NotEqual(t, lottery.Commit(seed, hour), lottery.Commit(testSeed(7), hour))
	assert.False(t, lottery.NewSeed().IsZero())
	assert.NotEqual(t, lottery.NewSeed(), lottery.NewSeed())
}

func FuzzVerify(f *testing.F) {
	seed := testSeed(8)
	b, _ := json.Marshal(honest(seed, 0.3, 5, 1, 2, 3))
	f.Add(b, uint64(1), int64(firstW), 1)
	f.Add([]byte(`{}`), uint64(0), int64(0), 0)
	f.Fuzz(func(t *testing.T, data []byte, id uint64, admitted int64, rank int) {
		var r lottery.Record
		if json.Unmarshal(data, &r) != nil {
			return
		}
		_, _ = lottery.Verify(&r, id, lottery.Claim{Waited: []int64{admitted - 1}, Admitted: admitted, Rank: rank})
	})
}

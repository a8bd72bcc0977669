package challenge

import (
	"bytes"
	"cmp"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	testKey  = bytes.Repeat([]byte{7}, 32)
	otherKey = bytes.Repeat([]byte{9}, 32)
	// t0 is when the puzzles of the tests are given.
	t0 = time.Date(2026, 5, 27, 15, 54, 0, 0, time.UTC)
)

func puzzles(t testing.TB, room string, keys ...[]byte) *Puzzles {
	t.Helper()
	p, err := NewPuzzles(keys, room)
	require.NoError(t, err)
	return p
}

func solve(t testing.TB, puzzle string) string {
	t.Helper()
	a, err := Solve(context.Background(), puzzle)
	require.NoError(t, err)
	return a
}

// Every attack on the proof of work fails, and only a solution of a
// puzzle the room gave the visitor, of the difficulty asked, passes.
func TestPuzzlesVerify(t *testing.T) {
	const id = 42
	pol := &Policy{Kind: PoW, Difficulty: 8, TTL: 5 * time.Minute}
	room := puzzles(t, "launch", testKey)
	puzzle := room.Issue(id, t0, 8)
	for _, tc := range []struct {
		name   string
		answer func(t *testing.T) string
		id     uint64        // the visitor it is checked for; id when 0
		after  time.Duration // checked this long after t0
		pol    *Policy       // pol when nil
		want   error
	}{
		{name: "valid", answer: func(t *testing.T) string { return solve(t, puzzle) }},
		{name: "valid at the end of its TTL", answer: func(t *testing.T) string { return solve(t, puzzle) }, after: 5*time.Minute - time.Millisecond},
		{name: "harder than asked", answer: func(t *testing.T) string { return solve(t, room.Issue(id, t0, 9)) }},
		{name: "unsolved", answer: func(t *testing.T) string {
			// A nonce that does not solve it: one in 256 does.
			for n := 0; ; n++ {
				if a := puzzle + "." + strconv.Itoa(n); !solves(a, 8) {
					return a
				}
			}
		}, want: ErrFailed},
		{name: "forged seed", answer: func(t *testing.T) string {
			return solve(t, "AAAAAAAAAAAAAAAAAAAAAA."+strings.SplitN(puzzle, ".", 2)[1])
		}, want: ErrFailed},
		{name: "easier difficulty", answer: func(t *testing.T) string {
			return solve(t, strings.TrimSuffix(puzzle, ".8")+".1")
		}, want: ErrFailed},
		{name: "leading zeros in the difficulty", answer: func(t *testing.T) string {
			return solve(t, strings.TrimSuffix(puzzle, ".8")+".08")
		}, want: ErrFailed},
		{name: "expired", answer: func(t *testing.T) string { return solve(t, puzzle) }, after: 5 * time.Minute, want: ErrFailed},
		{name: "a few seconds ahead", answer: func(t *testing.T) string { return solve(t, puzzle) }, after: -10 * time.Second},
		{name: "from the future", answer: func(t *testing.T) string { return solve(t, puzzle) }, after: -10*time.Second - time.Millisecond, want: ErrFailed},
		{name: "far in the future", answer: func(t *testing.T) string {
			parts := strings.Split(puzzle, ".")
			return solve(t, parts[0]+".99999999999."+parts[2])
		}, want: ErrFailed},
		{name: "another visitor's", answer: func(t *testing.T) string { return solve(t, puzzle) }, id: id + 1, want: ErrFailed},
		{name: "another room's", answer: func(t *testing.T) string {
			return solve(t, puzzles(t, "other", testKey).Issue(id, t0, 8))
		}, want: ErrFailed},
		{name: "another key's", answer: func(t *testing.T) string {
			return solve(t, puzzles(t, "launch", otherKey).Issue(id, t0, 8))
		}, want: ErrFailed},
		{name: "oversized", answer: func(t *testing.T) string { return solve(t, puzzle) + strings.Repeat("0", 4096) }, want: ErrFailed},
		{name: "nonce too long", answer: func(t *testing.T) string { return puzzle + "." + strings.Repeat("0", 21) }, want: ErrFailed},
		{name: "nonce not a number", answer: func(t *testing.T) string { return puzzle + ".-1" }, want: ErrFailed},
		{name: "garbage", answer: func(t *testing.T) string { return "\x00..\xff.." }, want: ErrFailed},
		{name: "empty", answer: func(t *testing.T) string { return "" }, want: ErrFailed},
		{name: "Difficulty raised since", answer: func(t *testing.T) string { return solve(t, puzzle) },
			pol: &Policy{Kind: PoW, Difficulty: 9}, want: ErrStale},
		{name: "risen with the queue since", answer: func(t *testing.T) string { return solve(t, puzzle) },
			pol: &Policy{Kind: PoW, Difficulty: 8, RiseEvery: 1}},
		{name: "default TTL", answer: func(t *testing.T) string { return solve(t, puzzle) },
			pol: &Policy{Kind: PoW, Difficulty: 8}, after: DefaultTTL - time.Second},
		{name: "past the default TTL", answer: func(t *testing.T) string { return solve(t, puzzle) },
			pol: &Policy{Kind: PoW, Difficulty: 8}, after: DefaultTTL, want: ErrFailed},
		{name: "default Difficulty", answer: func(t *testing.T) string { return solve(t, puzzle) },
			pol: &Policy{Kind: PoW}, want: ErrStale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			who, p := cmp.Or(tc.id, id), tc.pol
			if p == nil {
				p = pol
			}
			err := room.Verify(tc.answer(t), who, t0.Add(tc.after), p)
			if tc.want == nil {
				assert.NoError(t, err)
			} else {
				assert.Equal(t, tc.want, err)
			}
		})
	}
}

// Keys rotate: the first key issues, every one verifies.
func TestPuzzlesKeyRotation(t *testing.T) {
	pol := &Policy{Kind: PoW, Difficulty: 4}
	before := puzzles(t, "launch", testKey)
	after := puzzles(t, "launch", otherKey, testKey)
	dropped := puzzles(t, "launch", otherKey)
	old := solve(t, before.Issue(1, t0, 4))
	assert.NoError(t, after.Verify(old, 1, t0, pol), "an old key verifies")
	assert.ErrorIs(t, dropped.Verify(old, 1, t0, pol), ErrFailed, "a dropped key does not")
	assert.NoError(t, dropped.Verify(solve(t, after.Issue(1, t0, 4)), 1, t0, pol), "the first key issues")
}

// A puzzle names its difficulty and the second it was given, and is the
// same whatever the millisecond.
func TestPuzzlesIssue(t *testing.T) {
	p := puzzles(t, "launch", testKey)
	a := p.Issue(7, t0, 12)
	parts := strings.Split(a, ".")
	require.Len(t, parts, 3)
	assert.Len(t, parts[0], 22, "16 bytes, unpadded base64url")
	assert.Equal(t, strconv.FormatInt(t0.Unix(), 10), parts[1])
	assert.Equal(t, "12", parts[2])
	assert.Equal(t, a, p.Issue(7, t0.Add(999*time.Millisecond), 12))
	assert.NotEqual(t, a, p.Issue(7, t0.Add(time.Second), 12))
	assert.NotEqual(t, a, p.Issue(8, t0, 12))
}

func TestNewPuzzles(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys [][]byte
		ok   bool
	}{
		{"one key", [][]byte{testKey}, true},
		{"two keys", [][]byte{testKey, otherKey}, true},
		{"no key", nil, false},
		{"short key", [][]byte{testKey, testKey[:31]}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPuzzles(tc.keys, "launch")
			if tc.ok {
				assert.NoError(t, err)
				assert.NotNil(t, p)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

func TestSolve(t *testing.T) {
	for _, tc := range []struct {
		name   string
		puzzle string
		ok     bool
	}{
		{"difficulty 1", "seed.0.1", true},
		{"difficulty 12", "seed.0.12", true},
		{"two parts", "seed.12", false},
		{"four parts", "a.b.c.1", false},
		{"difficulty 0", "seed.0.0", false},
		{"too hard", "seed.0.33", false},
		{"not a number", "seed.0.x", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Solve(context.Background(), tc.puzzle)
			if !tc.ok {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(a, tc.puzzle+"."))
			d, _ := strconv.Atoi(tc.puzzle[strings.LastIndexByte(tc.puzzle, '.')+1:])
			assert.True(t, solves(a, d))
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Solve(ctx, "seed.0.32")
	assert.ErrorIs(t, err, context.Canceled, "an ended context stops it")
}

// Whatever it is sent, Verify answers one of its three verdicts, and
// passes only a solution of a puzzle it gave.
func FuzzPuzzlesVerify(f *testing.F) {
	p := puzzles(f, "launch", testKey)
	pol := &Policy{Kind: PoW, Difficulty: 1}
	valid := solve(f, p.Issue(1, t0, 1))
	// The same puzzle written another way: a line break in its seed (the
	// decoder skips it), a sign before its second.
	broken := valid[:2] + "\n" + valid[2:]
	signed := strings.Replace(valid, ".", ".+", 1)
	for _, s := range []string{valid, valid + "0", "", ".", "..", "a.b.c.d", "AAAAAAAAAAAAAAAAAAAAAA.0.1.0", strings.Repeat("9", 600), broken, signed} {
		f.Add(s, uint64(1), int64(0))
	}
	f.Fuzz(func(t *testing.T, answer string, id uint64, after int64) {
		now := t0.Add(time.Duration(after) * time.Millisecond)
		err := p.Verify(answer, id, now, pol)
		require.True(t, err == nil || err == ErrFailed || err == ErrStale, "%v", err)
		if err == nil {
			require.Equal(t, uint64(1), id)
			require.True(t, strings.HasPrefix(answer, p.Issue(1, t0, 1)+"."), "passed %q", answer)
		}
	})
}

package challenge

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/hkdf"
)

// Errors of an answer (Puzzles.Verify, Verifier.Verify).
var (
	// ErrFailed: the answer does not pass the challenge. For a puzzle:
	// not a solution of a puzzle these Puzzles gave this visitor within
	// the policy's TTL (forged, transplanted, expired, malformed or
	// oversized). For a hosted widget's token: the provider refused it,
	// or it is too long to send.
	ErrFailed = errors.New("challenge: answer not passed")
	// ErrStale: a solution of a puzzle these Puzzles gave the visitor,
	// but easier than the policy's Difficulty now (it was raised since):
	// neither a pass nor a failure, and the visitor should be given a
	// puzzle of the current difficulty.
	ErrStale = errors.New("challenge: answer to a puzzle easier than the difficulty now")
)

const (
	// maxAnswerLen bounds the answers Verify looks at; anything longer
	// fails.
	maxAnswerLen = 512
	// maxLead is how far ahead of the verifying instance's clock a
	// puzzle may be dated: another instance's clock may lead by a few
	// seconds (as the waiting room's instances absorb in their shared
	// clock). A puzzle dated further ahead fails.
	maxLead = 10 * time.Second
	// minKeyLen is the shortest key NewPuzzles takes.
	minKeyLen = 32
)

// Puzzles issues and verifies the proof-of-work puzzles of one room.
// Stateless: each puzzle is bound by an HMAC-SHA-256, with a key derived
// (HKDF) from the room's keys, to the room's name, the visitor's identity,
// the second it was given and its difficulty, so any instance built from
// the same keys and name verifies the puzzles of any other, and a puzzle
// answers for nothing else. A puzzle is "<seed>.<seconds>.<difficulty>",
// the seed in unpadded base64url; its answer is the puzzle, a dot and the
// decimal number that makes the SHA-256 hash of the answer start with
// difficulty zero bits (Solve). Safe for concurrent use.
type Puzzles struct {
	keys [][]byte // derived from the room's keys; the first issues
	room string
}

// NewPuzzles returns the Puzzles of the room named room, with its keys:
// the first issues the puzzles, and every one verifies them, so keys
// rotate as the room's do (a new key in front, the old one dropped
// later). Each key is secret random data, at least 32 bytes (the waiting
// room passes its Config.Keys, from which the puzzles' keys are derived
// apart from the cookie's). It fails without a key, or with a shorter
// one.
func NewPuzzles(keys [][]byte, room string) (*Puzzles, error) {
	if len(keys) == 0 {
		return nil, errors.New("challenge: NewPuzzles needs a key")
	}
	p := &Puzzles{room: room}
	for i, k := range keys {
		if len(k) < minKeyLen {
			return nil, errors.New("challenge: key " + strconv.Itoa(i) + " is shorter than 32 bytes")
		}
		dk := make([]byte, 32)
		if _, err := io.ReadFull(hkdf.New(sha256.New, k, nil, []byte("waitingroom challenge key")), dk); err != nil {
			return nil, err
		}
		p.keys = append(p.keys, dk)
	}
	return p, nil
}

// seed is the puzzle's secret-keyed part for (id, at seconds,
// difficulty), 16 bytes.
func (p *Puzzles) seed(key []byte, id uint64, sec int64, diff int) []byte {
	m := hmac.New(sha256.New, key)
	var b [8 + 8 + 1]byte
	binary.BigEndian.PutUint64(b[:8], id)
	binary.BigEndian.PutUint64(b[8:16], uint64(sec))
	b[16] = byte(diff)
	m.Write([]byte(p.room))
	m.Write([]byte{0})
	m.Write(b[:])
	return m.Sum(nil)[:16]
}

// Issue returns the puzzle given at at to the visitor whose identity is
// id, of the given difficulty (1 to MaxDifficulty; Policy.DifficultyAt):
// "<seed>.<seconds>.<difficulty>", at to the second.
func (p *Puzzles) Issue(id uint64, at time.Time, difficulty int) string {
	sec := at.UnixMilli() / 1000
	return base64.RawURLEncoding.EncodeToString(p.seed(p.keys[0], id, sec, difficulty)) + "." +
		strconv.FormatInt(sec, 10) + "." + strconv.Itoa(difficulty)
}

// Verify checks answer, at now, for the visitor whose identity is id
// under policy pol (its TTL and Difficulty; pol must be valid): nil for a
// solution of a puzzle these Puzzles gave that visitor less than TTL ago
// (and no more than a few seconds ahead of now, another instance's clock),
// of at least pol's Difficulty; ErrStale for such a solution of an easier
// puzzle; ErrFailed for anything else. O(1): two hashes per key at most,
// no state. Answers longer than 512 bytes fail unread.
func (p *Puzzles) Verify(answer string, id uint64, now time.Time, pol *Policy) error {
	if len(answer) > maxAnswerLen {
		return ErrFailed
	}
	i := strings.LastIndexByte(answer, '.')
	if i < 0 {
		return ErrFailed
	}
	puzzle, nonce := answer[:i], answer[i+1:]
	if len(nonce) == 0 || len(nonce) > 20 {
		return ErrFailed
	}
	for _, r := range nonce {
		if r < '0' || r > '9' {
			return ErrFailed
		}
	}
	parts := strings.Split(puzzle, ".")
	if len(parts) != 3 {
		return ErrFailed
	}
	// Only the puzzle as it was issued: the decoder skips line breaks,
	// and ParseInt takes a sign, which would make one puzzle many.
	seed, err := base64.RawURLEncoding.Strict().DecodeString(parts[0])
	if err != nil || len(seed) != 16 || base64.RawURLEncoding.EncodeToString(seed) != parts[0] {
		return ErrFailed
	}
	ms := now.UnixMilli()
	sec, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || strconv.FormatInt(sec, 10) != parts[1] || sec*1000 > ms+maxLead.Milliseconds() || ms-sec*1000 >= pol.ttl().Milliseconds() {
		return ErrFailed // expired, or from the future
	}
	diff, err := strconv.Atoi(parts[2])
	if err != nil || diff < 1 || diff > MaxDifficulty || strconv.Itoa(diff) != parts[2] {
		return ErrFailed
	}
	ok := false
	for _, k := range p.keys {
		if hmac.Equal(seed, p.seed(k, id, sec, diff)) {
			ok = true
			break
		}
	}
	if !ok || !solves(answer, diff) {
		return ErrFailed
	}
	if diff < pol.difficulty() {
		return ErrStale
	}
	return nil
}

// solves reports whether SHA-256(answer) starts with diff zero bits.
func solves(answer string, diff int) bool {
	h := sha256.Sum256([]byte(answer))
	return leadingZeros(h[:]) >= diff
}

func leadingZeros(h []byte) int {
	n := 0
	for _, b := range h {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

// Solve solves a proof-of-work puzzle a room gave (the waiting page's
// challengePuzzle, template.Data.ChallengePuzzle:
// "<seed>.<seconds>.<difficulty>") and returns the answer to send in the
// Header request header: the puzzle, a dot and the decimal number that
// makes the SHA-256 hash of the answer start with difficulty zero bits.
// It takes about 2^difficulty hashes (16: a few milliseconds), and
// returns ctx's error if ctx ends first, or an error for a malformed
// puzzle (a difficulty outside 1 to MaxDifficulty included). Safe for
// concurrent use.
func Solve(ctx context.Context, puzzle string) (string, error) {
	parts := strings.Split(puzzle, ".")
	if len(parts) != 3 {
		return "", errors.New("challenge: malformed puzzle")
	}
	diff, err := strconv.Atoi(parts[2])
	if err != nil || diff < 1 || diff > MaxDifficulty {
		return "", errors.New("challenge: malformed puzzle")
	}
	buf := make([]byte, 0, len(puzzle)+22)
	buf = append(buf, puzzle...)
	buf = append(buf, '.')
	base := len(buf)
	for n := uint64(0); ; n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return "", ctx.Err()
		}
		buf = strconv.AppendUint(buf[:base], n, 10)
		h := sha256.Sum256(buf)
		if leadingZeros(h[:]) >= diff {
			return string(buf), nil
		}
	}
}

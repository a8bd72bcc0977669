package waitingroom

import (
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"sync"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/hkdf"
)

// minKeyLen is the minimum length, in bytes, of every key in Config.Keys.
const minKeyLen = 32

// maxCookieLen bounds the cookie values the codec looks at. A valid cookie
// is far shorter; anything longer is treated as no cookie at all.
const maxCookieLen = 256

// cookieVersion is the first byte of a cookie's plaintext: the version
// of its format. A cookie of any other version opens as no cookie (the
// visitor is new).
const cookieVersion = 3

// strictBase64 gives every cookie one spelling: values that differ only in
// the unused bits of their last character do not decode.
var strictBase64 = base64.RawURLEncoding.Strict()

// errBadCookie is returned by decode for every cookie that must be treated
// as absent: malformed, tampered, foreign, expired key. Callers treat it as
// ordinary input (a new visitor), never as a server error.
var errBadCookie = errors.New("waitingroom: invalid cookie")

// cookieState is what the visitor cookie carries. Times are Unix
// milliseconds; zero means unset.
type cookieState struct {
	// id is the visitor's identity: random, drawn at their first request
	// and kept from the queue into the session. Every copy of a cookie
	// carries it, so the room counts the holders of copies as one
	// visitor, with one place and one session.
	id          uint64
	bucket      int64 // arrival second, Unix seconds
	acceptedAt  int64 // admission time; 0 while queued
	lastCheckIn int64 // latest counted check-in
	refresh     int64 // refresh interval given at lastCheckIn, milliseconds
	// chal is the state of the visitor's challenge (chalNone, chalGiven,
	// chalPassed, chalFailed; challenge.go).
	chal int8
	// pos is the place in line the visitor was last shown (FIFO, 1 being
	// next; 0 for none): no later answer shows a higher one (Estimate).
	pos int64
}

// codec encrypts and authenticates visitor cookies with XChaCha20-Poly1305.
// The first key encrypts; every key decrypts (rotation). The cookie name,
// which includes the room name, is authenticated as additional data, so a
// cookie of another room or another cookie name does not open.
type codec struct {
	aeads []cipher.AEAD
	ad    []byte
}

func newCodec(keys [][]byte, cookieName string) (*codec, error) {
	c := &codec{ad: []byte("waitingroom/cookie/v1\x00" + cookieName)}
	for _, k := range keys {
		// Derive the cipher key, so a key used elsewhere too is never used
		// directly for this cipher.
		dk := make([]byte, chacha20poly1305.KeySize)
		if _, err := io.ReadFull(hkdf.New(sha256.New, k, nil, []byte("waitingroom cookie key")), dk); err != nil {
			return nil, err
		}
		aead, err := chacha20poly1305.NewX(dk)
		if err != nil {
			return nil, err
		}
		c.aeads = append(c.aeads, aead)
	}
	return c, nil
}

const (
	nonceLen = chacha20poly1305.NonceSizeX
	tagLen   = chacha20poly1305.Overhead
)

// encode returns the cookie value for s, in the current version.
func (c *codec) encode(s cookieState) string {
	var buf [nonceLen + 64]byte
	b := buf[:nonceLen]
	_, _ = rand.Read(b) // never fails (crypto/rand)
	pt := make([]byte, 0, 48)
	pt = append(pt, cookieVersion)
	pt = binary.LittleEndian.AppendUint64(pt, s.id)
	return c.seal(b, pt, s)
}

// seal appends the fields of s to the plaintext pt, seals it after the
// nonce b and returns the cookie value.
func (c *codec) seal(b, pt []byte, s cookieState) string {
	pt = binary.AppendVarint(pt, s.bucket)
	pt = binary.AppendVarint(pt, s.acceptedAt)
	pt = binary.AppendVarint(pt, s.lastCheckIn)
	pt = binary.AppendVarint(pt, s.refresh)
	pt = binary.AppendVarint(pt, int64(s.chal))
	pt = binary.AppendVarint(pt, s.pos)
	b = c.aeads[0].Seal(b, b[:nonceLen], pt, c.ad)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeBuf holds decode's scratch space. Buffers handed to the cipher
// through its interface escape to the heap, so they are pooled.
type decodeBuf struct {
	src, raw, pt [maxCookieLen]byte
}

var decodeBufs = sync.Pool{New: func() any { return new(decodeBuf) }}

// decode opens a cookie value. It returns errBadCookie for anything that is
// not a cookie this codec wrote with one of its keys.
func (c *codec) decode(v string) (cookieState, error) {
	var s cookieState
	if len(v) > maxCookieLen || len(v) < base64.RawURLEncoding.EncodedLen(nonceLen+tagLen+1) {
		return s, errBadCookie
	}
	buf := decodeBufs.Get().(*decodeBuf)
	defer decodeBufs.Put(buf)
	n := copy(buf.src[:], v)
	m, err := strictBase64.Decode(buf.raw[:], buf.src[:n])
	// The decoder skips line breaks, so the decoded length is checked
	// again: a value padded with them decodes short.
	if err != nil || m < nonceLen+tagLen+1 {
		return s, errBadCookie
	}
	nonce, ct := buf.raw[:nonceLen], buf.raw[nonceLen:m]
	var pt []byte
	for _, a := range c.aeads {
		if pt, err = a.Open(buf.pt[:0], nonce, ct, c.ad); err == nil {
			break
		}
	}
	if err != nil || len(pt) == 0 {
		return s, errBadCookie
	}
	if pt[0] != cookieVersion || len(pt) < 9 {
		return s, errBadCookie
	}
	s.id = binary.LittleEndian.Uint64(pt[1:9])
	pt = pt[9:]
	for _, f := range []*int64{&s.bucket, &s.acceptedAt, &s.lastCheckIn, &s.refresh} {
		x, k := binary.Varint(pt)
		if k <= 0 {
			return cookieState{}, errBadCookie
		}
		*f, pt = x, pt[k:]
	}
	x, k := binary.Varint(pt)
	if k <= 0 || x < chalNone || x > chalFailed {
		return cookieState{}, errBadCookie
	}
	s.chal, pt = int8(x), pt[k:]
	if s.pos, k = binary.Varint(pt); k <= 0 {
		return cookieState{}, errBadCookie
	}
	pt = pt[k:]
	if len(pt) != 0 || s.lastCheckIn <= 0 || s.refresh < 0 || s.acceptedAt < 0 || s.id == 0 || s.pos < 0 {
		return cookieState{}, errBadCookie
	}
	return s, nil
}

// maxSameName is how many cookies of the room's name a request may
// carry that the room looks at.
const maxSameName = 8

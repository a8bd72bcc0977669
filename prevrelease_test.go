package waitingroom

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/go-waitingroom/waitingroom/store"
)

// The previous release's cookie codec and state encoding (cookie version 1,
// state encoding 2), as commit a465f9600bca2c2f8ed97084659aadd6a34f0bd4
// has them in cookie.go and store/encoding.go: the upgrade tests read
// what this release writes for that release with that release's own
// code. The bodies are unchanged; the names have a prev prefix, and the
// cookie functions take this release's codec, whose key derivation and
// additional data are that release's.

// prevCookie is the previous release's cookieState.
type prevCookie struct {
	bucket      int64 // arrival minute, Unix seconds / 60
	acceptedAt  int64 // admission time; 0 while queued
	lastCheckIn int64 // latest counted check-in
	refresh     int64 // refresh interval given at lastCheckIn, milliseconds
}

const prevCookieVersion = 1

// prevEncodeCookie is the previous release's codec.encode.
func prevEncodeCookie(c *codec, s prevCookie) string {
	var buf [nonceLen + 64]byte
	b := buf[:nonceLen]
	_, _ = rand.Read(b) // never fails (crypto/rand)
	pt := make([]byte, 0, 48)
	pt = append(pt, prevCookieVersion)
	pt = binary.AppendVarint(pt, s.bucket)
	pt = binary.AppendVarint(pt, s.acceptedAt)
	pt = binary.AppendVarint(pt, s.lastCheckIn)
	pt = binary.AppendVarint(pt, s.refresh)
	b = c.aeads[0].Seal(b, b[:nonceLen], pt, c.ad)
	return base64.RawURLEncoding.EncodeToString(b)
}

// prevDecodeCookie is the previous release's codec.decode (its buffers
// not pooled).
func prevDecodeCookie(c *codec, v string) (prevCookie, error) {
	var s prevCookie
	if len(v) > maxCookieLen || len(v) < base64.RawURLEncoding.EncodedLen(nonceLen+tagLen+1) {
		return s, errBadCookie
	}
	buf := new(decodeBuf)
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
	if err != nil || len(pt) == 0 || pt[0] != prevCookieVersion {
		return s, errBadCookie
	}
	pt = pt[1:]
	for _, f := range []*int64{&s.bucket, &s.acceptedAt, &s.lastCheckIn, &s.refresh} {
		x, k := binary.Varint(pt)
		if k <= 0 {
			return prevCookie{}, errBadCookie
		}
		*f, pt = x, pt[k:]
	}
	if len(pt) != 0 || s.lastCheckIn <= 0 || s.refresh < 0 || s.acceptedAt < 0 {
		return prevCookie{}, errBadCookie
	}
	return s, nil
}

// prevState is the previous release's store.State.
type prevState struct {
	Epoch           uint64
	Version         uint64
	Clock           int64
	Grace           int64
	Settings        []byte
	SettingsVersion uint64
	ConfigHash      uint64
	// Active counts admitted visitors by the second of their latest
	// check-in (Key: Unix seconds).
	Active    []store.Count
	Admitted  []store.Count
	Waiting   []store.Cell
	Instances []store.Instance
}

var errPrevCorrupt = errors.New("waitingroom/store: corrupt state")

const (
	prevEncodingVersion = 2
	prevMaxLen          = 1 << 24
)

// prevMarshalState is the previous release's store.MarshalState.
func prevMarshalState(s *prevState) []byte {
	n := 64 + len(s.Settings) + 12*len(s.Active) + 12*len(s.Admitted) + 16*len(s.Waiting) + 48*len(s.Instances)
	b := make([]byte, 0, n)
	b = append(b, prevEncodingVersion)
	b = binary.AppendUvarint(b, s.Epoch)
	b = binary.AppendUvarint(b, s.Version)
	b = binary.AppendVarint(b, s.Clock)
	b = binary.AppendVarint(b, s.Grace)
	b = prevAppendBytes(b, s.Settings)
	b = binary.AppendUvarint(b, s.SettingsVersion)
	b = binary.AppendUvarint(b, s.ConfigHash)
	b = prevAppendCounts(b, s.Active)
	b = prevAppendCounts(b, s.Admitted)
	b = binary.AppendUvarint(b, uint64(len(s.Waiting)))
	var prevB, prevS int64
	for _, c := range s.Waiting {
		// Cells are usually sorted: deltas keep them small.
		b = binary.AppendVarint(b, c.Bucket-prevB)
		b = binary.AppendVarint(b, c.Slot-prevS)
		b = binary.AppendVarint(b, c.N)
		prevB, prevS = c.Bucket, c.Slot
	}
	b = binary.AppendUvarint(b, uint64(len(s.Instances)))
	for _, in := range s.Instances {
		b = prevAppendBytes(b, []byte(in.ID))
		b = binary.AppendUvarint(b, math.Float64bits(in.Traffic))
		b = binary.AppendVarint(b, in.Grant)
		b = binary.AppendVarint(b, in.Seen)
		b = binary.AppendUvarint(b, in.Seq)
	}
	return b
}

func prevAppendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func prevAppendCounts(b []byte, cs []store.Count) []byte {
	b = binary.AppendUvarint(b, uint64(len(cs)))
	var prev int64
	for _, c := range cs {
		b = binary.AppendVarint(b, c.Key-prev)
		b = binary.AppendVarint(b, c.N)
		prev = c.Key
	}
	return b
}

// prevUnmarshalState is the previous release's store.UnmarshalState.
func prevUnmarshalState(data []byte) (*prevState, error) {
	s := &prevState{}
	if len(data) == 0 {
		return s, nil
	}
	if data[0] != prevEncodingVersion {
		return nil, fmt.Errorf("%w: unknown encoding version %d", errPrevCorrupt, data[0])
	}
	d := prevDecoder{b: data[1:]}
	s.Epoch = d.uvarint()
	s.Version = d.uvarint()
	s.Clock = d.varint()
	s.Grace = d.varint()
	s.Settings = d.bytes()
	s.SettingsVersion = d.uvarint()
	s.ConfigHash = d.uvarint()
	s.Active = d.counts()
	s.Admitted = d.counts()
	if n := d.length(3); n > 0 {
		s.Waiting = make([]store.Cell, n)
		var prevB, prevS int64
		for i := range s.Waiting {
			c := &s.Waiting[i]
			c.Bucket = prevB + d.varint()
			c.Slot = prevS + d.varint()
			c.N = d.varint()
			prevB, prevS = c.Bucket, c.Slot
		}
	}
	if n := d.length(5); n > 0 {
		s.Instances = make([]store.Instance, n)
		for i := range s.Instances {
			in := &s.Instances[i]
			in.ID = string(d.bytes())
			in.Traffic = math.Float64frombits(d.uvarint())
			in.Grant = d.varint()
			in.Seen = d.varint()
			in.Seq = d.uvarint()
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errPrevCorrupt, len(d.b))
	}
	return s, nil
}

type prevDecoder struct {
	b   []byte
	err error
}

func (d *prevDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated or invalid %s", errPrevCorrupt, what)
	}
	d.b = nil
}

func (d *prevDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *prevDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// length reads a count of items, each at least minBytes long, and rejects
// counts the remaining input cannot hold.
func (d *prevDecoder) length(minBytes int) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > prevMaxLen || n*uint64(minBytes) > uint64(len(d.b)) {
		d.fail("length")
		return 0
	}
	return int(n)
}

func (d *prevDecoder) bytes() []byte {
	n := d.length(1)
	if n == 0 {
		return nil
	}
	v := make([]byte, n)
	copy(v, d.b[:n])
	d.b = d.b[n:]
	return v
}

func (d *prevDecoder) counts() []store.Count {
	n := d.length(2)
	if n == 0 {
		return nil
	}
	cs := make([]store.Count, n)
	var prev int64
	for i := range cs {
		cs[i].Key = prev + d.varint()
		cs[i].N = d.varint()
		prev = cs[i].Key
	}
	return cs
}

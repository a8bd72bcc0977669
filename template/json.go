package template

import (
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
)

// WriteJSON writes d as a JSON object holding one member named key, whose
// value holds every field of d under its JSON name, followed by a newline:
//
//	{"waitingRoom":{"inWaitingRoom":true,"waitTimeKnown":true,"waitTime":10,...}}
//
// The key is the caller's choice ("cfWaitingRoom" matches the commercial
// product). A nil d is written as the zero Data. The object is written in a
// single Write.
func WriteJSON(w io.Writer, key string, d *Data) error {
	if d == nil {
		d = &Data{}
	}
	bp := jsonBuffers.Get().(*[]byte)
	defer jsonBuffers.Put(bp)
	out := append((*bp)[:0], '{')
	out = appendString(out, key)
	out = append(out, ':')
	out, err := appendData(out, d)
	if err != nil {
		return err
	}
	out = append(out, '}', '\n')
	*bp = out
	_, err = w.Write(out)
	return err
}

// jsonBuffers holds WriteJSON's buffers (a Writer does not keep what it
// is given).
var jsonBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// appendData appends d to b as encoding/json marshals it, byte for byte
// (TestAppendData), without its reflection. The error is encoding/json's
// for odds it cannot write (NaN, ±Inf).
func appendData(b []byte, d *Data) ([]byte, error) {
	w := jsonWriter{append(b, '{')}
	w.b = append(w.b, `"inWaitingRoom":`...)
	w.b = strconv.AppendBool(w.b, d.InWaitingRoom)
	w.bool(`,"waitTimeKnown":`, d.WaitTimeKnown)
	w.int(`,"waitTime":`, int64(d.WaitTime))
	w.int(`,"waitTimeHours":`, int64(d.WaitTimeHours))
	w.int(`,"waitTimeHourMinutes":`, int64(d.WaitTimeHourMinutes))
	w.int(`,"waitTime25Percentile":`, int64(d.WaitTime25Percentile))
	w.int(`,"waitTime50Percentile":`, int64(d.WaitTime50Percentile))
	w.int(`,"waitTime75Percentile":`, int64(d.WaitTime75Percentile))
	w.string(`,"waitTimeFormatted":`, d.WaitTimeFormatted, false)
	w.bool(`,"queueIsFull":`, d.QueueIsFull)
	w.bool(`,"queueAll":`, d.QueueAll)
	w.string(`,"lastUpdated":`, d.LastUpdated, false)
	w.int(`,"refreshIntervalSeconds":`, int64(d.RefreshIntervalSeconds))
	w.string(`,"queueingMethod":`, d.QueueingMethod, false)
	w.bool(`,"isFIFOQueue":`, d.IsFIFOQueue)
	w.bool(`,"isRandomQueue":`, d.IsRandomQueue)
	w.bool(`,"isPassthroughQueue":`, d.IsPassthroughQueue)
	w.bool(`,"isRejectQueue":`, d.IsRejectQueue)
	w.bool(`,"isEventActive":`, d.IsEventActive)
	w.bool(`,"isEventPrequeueing":`, d.IsEventPrequeueing)
	w.int(`,"timeUntilEventStart":`, int64(d.TimeUntilEventStart))
	w.string(`,"timeUntilEventStartFormatted":`, d.TimeUntilEventStartFormatted, false)
	w.int(`,"timeUntilEventEnd":`, int64(d.TimeUntilEventEnd))
	w.string(`,"timeUntilEventEndFormatted":`, d.TimeUntilEventEndFormatted, false)
	w.bool(`,"shuffleAtEventStart":`, d.ShuffleAtEventStart)
	w.int(`,"positionInLine":`, int64(d.PositionInLine))
	w.int(`,"queueLength":`, int64(d.QueueLength))
	w.int(`,"chancePerRefreshOneIn":`, int64(d.ChancePerRefreshOneIn))
	w.string(`,"lotteryIdentity":`, d.LotteryIdentity, true)
	w.string(`,"lotteryCommitment":`, d.LotteryCommitment, true)
	if d.LotteryInterval != 0 {
		w.int(`,"lotteryInterval":`, d.LotteryInterval)
	}
	if d.LotteryOdds != 0 {
		w.b = append(w.b, `,"lotteryOdds":`...)
		if a := math.Abs(d.LotteryOdds); a >= 1e-6 && a < 1e21 {
			w.b = strconv.AppendFloat(w.b, d.LotteryOdds, 'f', -1, 64)
		} else {
			v, err := json.Marshal(d.LotteryOdds) // its exponent form, or its error
			if err != nil {
				return nil, err
			}
			w.b = append(w.b, v...)
		}
	}
	if d.LotteryShuffled {
		w.bool(`,"lotteryShuffled":`, true)
	}
	w.string(`,"lotteryRecords":`, d.LotteryRecords, true)
	w.string(`,"challenge":`, d.Challenge, true)
	w.string(`,"challengePuzzle":`, d.ChallengePuzzle, true)
	w.string(`,"challengeSiteKey":`, d.ChallengeSiteKey, true)
	return append(w.b, '}'), nil
}

// jsonWriter appends the members of a JSON object to b, each after the
// first named by its key: a comma, its name in quotes and a colon.
type jsonWriter struct{ b []byte }

func (w *jsonWriter) bool(key string, v bool) {
	w.b = strconv.AppendBool(append(w.b, key...), v)
}

func (w *jsonWriter) int(key string, v int64) {
	w.b = strconv.AppendInt(append(w.b, key...), v, 10)
}

// string appends a string member; omitEmpty leaves out an empty one.
func (w *jsonWriter) string(key, v string, omitEmpty bool) {
	if v != "" || !omitEmpty {
		w.b = appendString(append(w.b, key...), v)
	}
}

// appendString appends s to b as a JSON string, as encoding/json writes
// it: as it is when every byte is printable ASCII that neither JSON nor
// HTML gives a meaning to, encoding/json's escaping otherwise.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			v, _ := json.Marshal(s) // a string cannot fail
			return append(b, v...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Limits on the Accept header WantsJSON looks at. Anything past them is
// ignored, so the work is bounded whatever a client sends.
const (
	maxAcceptBytes   = 4096
	maxAcceptEntries = 64
)

// WantsJSON reports whether an Accept header value asks for JSON rather than
// a page: it lists application/json and does not list text/html. A media
// range with q=0 counts as not listed. Wildcards (*/*, application/*) do not
// count as JSON, so browsers and clients that accept anything get the page.
//
// Matching ignores case, spaces and parameters. Only the first 4 KiB and the
// first 64 entries of the value are looked at.
func WantsJSON(accept string) bool {
	truncated := false
	if len(accept) > maxAcceptBytes {
		accept = accept[:maxAcceptBytes]
		truncated = true
	}
	var wantJSON, wantHTML bool
	for n := 0; n < maxAcceptEntries && accept != ""; n++ {
		entry, rest, more := strings.Cut(accept, ",")
		accept = rest
		if !more && truncated {
			break // the entry was cut off at the limit: don't guess
		}
		mediaType, params, _ := strings.Cut(entry, ";")
		mediaType = trimOWS(mediaType)
		isJSON := asciiEqualFold(mediaType, "application/json")
		isHTML := asciiEqualFold(mediaType, "text/html")
		if !isJSON && !isHTML {
			continue
		}
		if qIsZero(params) {
			continue
		}
		wantJSON = wantJSON || isJSON
		wantHTML = wantHTML || isHTML
	}
	return wantJSON && !wantHTML
}

// IsExactJSON reports whether an Accept header value is exactly
// "application/json", ignoring ASCII case and the spaces and tabs around
// it: the only value for which the commercial product answers JSON. A
// value with parameters or other media ranges is not.
func IsExactJSON(accept string) bool {
	return asciiEqualFold(trimOWS(accept), "application/json")
}

// qIsZero reports whether the parameters of a media range hold a q
// parameter of zero ("q=0", "q=0.", "q=0.000"). A malformed q counts as
// non-zero: the client listed the type.
func qIsZero(params string) bool {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		name, value, ok := strings.Cut(p, "=")
		if !ok || !asciiEqualFold(trimOWS(name), "q") {
			continue
		}
		value = trimOWS(value)
		if value == "" || value[0] != '0' {
			return false
		}
		value = value[1:]
		if value == "" {
			return true
		}
		if value[0] != '.' {
			return false
		}
		for i := 1; i < len(value); i++ {
			if value[i] != '0' {
				return false
			}
		}
		return true // the first q parameter decides
	}
	return false
}

// trimOWS trims spaces and tabs.
func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// asciiEqualFold compares s with lower, which must be lower-case ASCII,
// ignoring ASCII case only (strings.EqualFold would also fold, e.g., the
// Kelvin sign to k).
func asciiEqualFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

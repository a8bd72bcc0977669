package waitingroom

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// ParseKeys decodes the cookie keys for Config.Keys written as text, as
// they come from an environment variable or a secret store: one key, or a
// comma-separated list of keys in the order of Config.Keys (the first
// encrypts and every key decrypts, so keys rotate by putting a new key
// first and dropping the old one once the sessions it sealed have ended).
//
// A key is hex (either case) or base64 in the standard or the URL
// alphabet, with or without padding; generate one with
// "openssl rand -hex 32" or "openssl rand -base64 32". A string made of
// hex digits only is read as hex, so an odd number of them is an error
// rather than a base64 key. Spaces and line breaks around each key are
// ignored (a secret read from a file often ends with a newline); inside
// it, they are an error. Base64 is decoded strictly: a key has one
// spelling, and the unused bits of a last character must be zero. Each
// decoded key must be at least 32 bytes.
//
// An empty string, or an empty entry in the list (",," or a trailing
// comma), is an error, and so is any key that does not decode: the error
// says which (key 2 of 3). Errors begin with "waitingroom: " and never
// repeat a key or any part of one.
//
// ParseKeys keeps no state and is safe for concurrent use.
func ParseKeys(s string) ([][]byte, error) {
	parts := strings.Split(s, ",")
	keys := make([][]byte, len(parts))
	for i, p := range parts {
		b, err := parseKey(p)
		if err != nil {
			if len(parts) == 1 {
				return nil, fmt.Errorf("waitingroom: key: %w", err)
			}
			return nil, fmt.Errorf("waitingroom: key %d of %d: %w", i+1, len(parts), err)
		}
		keys[i] = b
	}
	return keys, nil
}

var errEmptyKey = errors.New("empty")

// keyEncodings are the base64 encodings a key may be in, strict so that
// every key has one spelling.
var keyEncodings = []*base64.Encoding{
	base64.StdEncoding.Strict(),
	base64.RawStdEncoding.Strict(),
	base64.URLEncoding.Strict(),
	base64.RawURLEncoding.Strict(),
}

// parseKey decodes one key of ParseKeys, with errors that never include
// s.
func parseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return nil, errEmptyKey
	case strings.ContainsFunc(s, unicode.IsSpace):
		return nil, errors.New("white space inside the key")
	}
	var b []byte
	switch {
	case isHex(s):
		if len(s)%2 == 1 {
			return nil, fmt.Errorf("%d hex digits, an odd number", len(s))
		}
		b, _ = hex.DecodeString(s) // only hex digits, an even number: cannot fail
	case (strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")) && isHex(s[2:]):
		return nil, errors.New("hex with a 0x prefix; write the digits alone")
	default:
		var ok bool
		if b, ok = decodeBase64(s); !ok {
			return nil, errors.New("neither hex nor base64")
		}
	}
	if len(b) < minKeyLen {
		return nil, fmt.Errorf("%d bytes; a key must be at least %d", len(b), minKeyLen)
	}
	return b, nil
}

// decodeBase64 decodes s in the first of keyEncodings that takes it.
func decodeBase64(s string) ([]byte, bool) {
	for _, enc := range keyEncodings {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}

// isHex reports whether s is made of hex digits only.
func isHex(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

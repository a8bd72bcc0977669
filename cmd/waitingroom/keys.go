package main

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/go-waitingroom/waitingroom"
)

// cookieKeys returns the cookie keys of flagValue (-key), else of
// $WAITINGROOM_KEYS, else of $WAITINGROOM_KEY: a comma-separated list of
// keys in hex or base64, the first of which encrypts. It returns nil when
// none is given. Errors never repeat a key.
func cookieKeys(flagValue string) ([][]byte, error) {
	source, list := "-key", flagValue
	if list == "" {
		keys, key := os.Getenv("WAITINGROOM_KEYS"), os.Getenv("WAITINGROOM_KEY")
		switch {
		case keys != "" && key != "":
			return nil, errors.New("both WAITINGROOM_KEYS and WAITINGROOM_KEY are set; set one (WAITINGROOM_KEYS lists every key, the first encrypting)")
		case keys != "":
			source, list = "WAITINGROOM_KEYS", keys
		default:
			source, list = "WAITINGROOM_KEY", key
		}
	}
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	parts := strings.Split(list, ",")
	out := make([][]byte, len(parts))
	for i, p := range parts {
		which := source
		if len(parts) > 1 {
			which = fmt.Sprintf("%s: key %d of %d", source, i+1, len(parts))
		}
		if strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("%s: empty", which)
		}
		b, err := decodeKey(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", which, err)
		}
		if len(b) < waitingroom.MinKeyLen {
			return nil, fmt.Errorf("%s: %d bytes; a key must be at least %d", which, len(b), waitingroom.MinKeyLen)
		}
		out[i] = b
	}
	return out, nil
}

// decodeKey reads a key in hex or standard/URL base64.
func decodeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("the key is neither hex nor base64")
}

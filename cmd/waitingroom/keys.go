package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/go-waitingroom/waitingroom"
)

// cookieKeys returns the cookie keys of flagValue (-key), else of
// $WAITINGROOM_KEYS, else of $WAITINGROOM_KEY: a comma-separated list of
// keys in hex or base64, the first of which encrypts (waitingroom.ParseKeys).
// It returns nil when none is given. Errors name where the keys came from
// and never repeat a key.
func cookieKeys(flagValue string) ([][]byte, error) {
	source, list := "-key", flagValue
	if list == "" {
		keys, key := os.Getenv("WAITINGROOM_KEYS"), os.Getenv("WAITINGROOM_KEY")
		switch {
		case keys != "" && key != "":
			return nil, errors.New("waitingroom: both WAITINGROOM_KEYS and WAITINGROOM_KEY are set; set one (WAITINGROOM_KEYS lists every key, the first encrypting)")
		case keys != "":
			source, list = "WAITINGROOM_KEYS", keys
		default:
			source, list = "WAITINGROOM_KEY", key
		}
	}
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	keys, err := waitingroom.ParseKeys(list)
	if err != nil {
		return nil, fmt.Errorf("%w (from %s)", err, source)
	}
	return keys, nil
}

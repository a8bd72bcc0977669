package waitingroom

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testKeyBytes returns n bytes counting up from first.
func testKeyBytes(first byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = first + byte(i)
	}
	return b
}

// keyErrors are the only shapes ParseKeys' errors take, digits aside: none
// has room for a part of the key.
var keyErrors = regexp.MustCompile(`^waitingroom: key( \d+ of \d+)?: (` +
	`empty|` +
	`white space inside the key|` +
	`\d+ hex digits, an odd number|` +
	`hex with a 0x prefix; write the digits alone|` +
	`neither hex nor base64|` +
	`\d+ bytes; a key must be at least 32)$`)

// parseOne is ParseKeys' reading of one key: the key, or the error
// ParseKeys gives for a text holding that one key alone.
func parseOne(s string) ([]byte, error) {
	b, err := parseKey(s)
	if err != nil {
		return nil, fmt.Errorf("waitingroom: key: %w", err)
	}
	return b, nil
}

func TestParseKey(t *testing.T) {
	key := testKeyBytes(0, 32)     // 000102…1f
	high := testKeyBytes(0xe0, 32) // e0e1…ff: base64 with + and /, or - and _
	long := testKeyBytes(7, 64)
	hexKey := hex.EncodeToString(key)
	rawStd := base64.RawStdEncoding.EncodeToString(key)

	// rawStd's last character carries 4 bits of the key and 2 unused bits,
	// which must be zero.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	last := strings.IndexByte(alphabet, rawStd[len(rawStd)-1])
	nonCanonical := rawStd[:len(rawStd)-1] + string(alphabet[last|1])

	for _, tc := range []struct {
		name string
		in   string
		want []byte
		err  string // the message after "waitingroom: key: "
	}{
		{"hex", hexKey, key, ""},
		{"hex, upper case", strings.ToUpper(hexKey), key, ""},
		{"hex, 64 bytes", hex.EncodeToString(long), long, ""},
		{"base64", base64.StdEncoding.EncodeToString(key), key, ""},
		{"base64 without padding", rawStd, key, ""},
		{"base64, + and /", base64.StdEncoding.EncodeToString(high), high, ""},
		{"base64, + and /, without padding", base64.RawStdEncoding.EncodeToString(high), high, ""},
		{"URL base64", base64.URLEncoding.EncodeToString(high), high, ""},
		{"URL base64 without padding", base64.RawURLEncoding.EncodeToString(high), high, ""},
		{"base64, 64 bytes", base64.StdEncoding.EncodeToString(long), long, ""},
		{"spaces and a newline around", "  " + hexKey + "\n", key, ""},
		{"CRLF after base64", base64.StdEncoding.EncodeToString(key) + "\r\n", key, ""},
		{"a tab before", "\t" + rawStd, key, ""},

		{"empty", "", nil, "empty"},
		{"only spaces", " \t\n", nil, "empty"},
		{"a space inside hex", hexKey[:20] + " " + hexKey[20:], nil, "white space inside the key"},
		{"a line break inside base64", rawStd[:20] + "\n" + rawStd[20:], nil, "white space inside the key"},
		{"odd hex", hexKey[:63], nil, "63 hex digits, an odd number"},
		{"one hex digit", "a", nil, "1 hex digits, an odd number"},
		{"short hex", hexKey[:62], nil, "31 bytes; a key must be at least 32"},
		{"short base64", base64.StdEncoding.EncodeToString(key[:16]), nil, "16 bytes; a key must be at least 32"},
		{"0x prefix", "0x" + hexKey, nil, "hex with a 0x prefix; write the digits alone"},
		{"neither", "!!not-a-key!!", nil, "neither hex nor base64"},
		{"both base64 alphabets", "+" + base64.RawURLEncoding.EncodeToString(high)[1:] + "_", nil, "neither hex nor base64"},
		{"base64 with unused bits set", nonCanonical, nil, "neither hex nor base64"},
		{"too much padding", rawStd + "==", nil, "neither hex nor base64"},
		{"a comma", hexKey + "," + hexKey, nil, "neither hex nor base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseOne(tc.in)
			if !strings.Contains(tc.in, ",") {
				keys, kerr := ParseKeys(tc.in)
				assert.Equal(t, fmt.Sprint(err), fmt.Sprint(kerr), "ParseKeys reads one key as parseOne does")
				if kerr == nil {
					assert.Equal(t, [][]byte{got}, keys)
				}
			}
			if tc.err != "" {
				require.Error(t, err)
				assert.Nil(t, got)
				assert.Equal(t, "waitingroom: key: "+tc.err, err.Error())
				assert.Regexp(t, keyErrors, err.Error())
				if in := strings.TrimSpace(tc.in); len(in) > 2 {
					assert.NotContains(t, err.Error(), in, "the error repeats the key")
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseKeys(t *testing.T) {
	k1, k2, k3 := testKeyBytes(1, 32), testKeyBytes(2, 48), testKeyBytes(3, 32)
	h1 := hex.EncodeToString(k1)
	b2 := base64.StdEncoding.EncodeToString(k2)
	u3 := base64.RawURLEncoding.EncodeToString(k3)
	short := hex.EncodeToString(k1[:16])

	for _, tc := range []struct {
		name string
		in   string
		want [][]byte
		err  string
	}{
		{"one", h1, [][]byte{k1}, ""},
		{"three, in order, any encoding", h1 + "," + b2 + "," + u3, [][]byte{k1, k2, k3}, ""},
		{"spaces around each", " " + b2 + " ,\n" + h1 + "\n", [][]byte{k2, k1}, ""},

		{"empty", "", nil, "waitingroom: key: empty"},
		{"an empty entry", h1 + ",," + b2, nil, "waitingroom: key 2 of 3: empty"},
		{"a blank entry", h1 + ", ," + b2, nil, "waitingroom: key 2 of 3: empty"},
		{"a trailing comma", h1 + ",", nil, "waitingroom: key 2 of 2: empty"},
		{"a leading comma", "," + h1, nil, "waitingroom: key 1 of 2: empty"},
		{"a short key", h1 + "," + short, nil, "waitingroom: key 2 of 2: 16 bytes; a key must be at least 32"},
		{"a short key alone", short, nil, "waitingroom: key: 16 bytes; a key must be at least 32"},
		{"odd hex", h1 + "," + h1[1:], nil, "waitingroom: key 2 of 2: 63 hex digits, an odd number"},
		{"white space inside", h1 + "," + b2[:10] + " " + b2[10:], nil, "waitingroom: key 2 of 2: white space inside the key"},
		{"a semicolon", h1 + ";" + b2, nil, "waitingroom: key: neither hex nor base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseKeys(tc.in)
			if tc.err != "" {
				require.Error(t, err)
				assert.Nil(t, got)
				assert.Equal(t, tc.err, err.Error())
				assert.Regexp(t, keyErrors, err.Error())
				for _, part := range strings.Split(tc.in, ",") {
					if p := strings.TrimSpace(part); len(p) > 2 {
						assert.NotContains(t, err.Error(), p, "the error repeats a key")
					}
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func FuzzParseKey(f *testing.F) {
	key := testKeyBytes(0, 32)
	for _, s := range []string{
		hex.EncodeToString(key),
		base64.StdEncoding.EncodeToString(key),
		base64.RawURLEncoding.EncodeToString(testKeyBytes(0xe0, 40)),
		" " + hex.EncodeToString(key) + "\n",
		hex.EncodeToString(key)[:63],
		"0x" + hex.EncodeToString(key),
		hex.EncodeToString(key) + "," + hex.EncodeToString(key),
		"",
		"!!",
		"0123456789abcdef0123456789abcdef0123456789abcdef",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := parseOne(s)
		if err != nil {
			require.Nil(t, b)
			require.Regexp(t, keyErrors, err.Error())
		} else {
			// A key accepted has 32 bytes or more, and the text was
			// its one spelling in one of the encodings.
			require.GreaterOrEqual(t, len(b), minKeyLen)
			in := strings.TrimSpace(s)
			if isHex(in) {
				require.Equal(t, strings.ToLower(in), hex.EncodeToString(b))
			} else {
				spelled := false
				for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
					spelled = spelled || enc.EncodeToString(b) == in
				}
				require.True(t, spelled, "%q is no encoding of the key it gave", in)
			}
		}

		keys, err := ParseKeys(s)
		if err != nil {
			require.Nil(t, keys)
			require.Regexp(t, keyErrors, err.Error())
		} else {
			parts := strings.Split(s, ",")
			require.Len(t, keys, len(parts))
			for i, p := range parts {
				k, err := parseOne(p)
				require.NoError(t, err)
				require.Equal(t, k, keys[i])
			}
		}

		// s's bytes as a key: every encoding of it reads back as it, but
		// for the base64 spellings made of hex digits only, read as hex.
		raw := []byte(s)
		if len(raw) < minKeyLen {
			return
		}
		for _, text := range []string{hex.EncodeToString(raw), strings.ToUpper(hex.EncodeToString(raw))} {
			got, err := parseOne(" " + text + "\n")
			require.NoError(t, err)
			require.True(t, bytes.Equal(raw, got), "%q does not read back", text)
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			text := enc.EncodeToString(raw)
			got, err := parseOne(" " + text + "\n")
			if isHex(text) { // hex digits only: read as hex, as documented
				want, _ := hex.DecodeString(text)
				if len(text)%2 == 1 || len(want) < minKeyLen {
					require.Error(t, err)
				} else {
					require.NoError(t, err)
					require.True(t, bytes.Equal(want, got))
				}
				continue
			}
			require.NoError(t, err, "an encoding of a %d-byte key", len(raw))
			require.True(t, bytes.Equal(raw, got), "%q does not read back", text)
		}
	})
}

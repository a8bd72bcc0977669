package admin

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A duration is written as Go writes one or in nanoseconds.
func TestDecodeDuration(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want time.Duration
		err  bool
	}{
		{`"10m"`, 10 * time.Minute, false},
		{`"1m30s"`, 90 * time.Second, false},
		{`600000000000`, 10 * time.Minute, false},
		{`0`, 0, false},
		{`"ten minutes"`, 0, true},
		{`1.5`, 0, true},
		{`true`, 0, true},
		{`null`, 0, true},
	} {
		got, err := decodeDuration(json.RawMessage(tc.raw))
		if tc.err {
			assert.Error(t, err, tc.raw)
			continue
		}
		require.NoError(t, err, tc.raw)
		assert.Equal(t, tc.want, got, tc.raw)
	}
}

// A limit is an integer above 0; anything else is unprocessable or bad.
func TestDecodeLimit(t *testing.T) {
	n, err := decodeLimit("totalActiveUsers", json.RawMessage(`12`))
	require.NoError(t, err)
	assert.Equal(t, 12, *n)
	for _, raw := range []string{`0`, `-3`} {
		_, err := decodeLimit("totalActiveUsers", json.RawMessage(raw))
		var unp errUnprocessable
		assert.True(t, errors.As(err, &unp), "%s: unprocessable", raw)
	}
	for _, raw := range []string{`"12"`, `1.5`, `{}`} {
		_, err := decodeLimit("totalActiveUsers", json.RawMessage(raw))
		assert.Error(t, err, raw)
	}
}

// A patch names each setting once, in one object; unknown keys and
// trailing data are refused.
func TestDecodeSettingsPatch(t *testing.T) {
	p, err := decodeSettingsPatch(strings.NewReader(`{"totalActiveUsers": 50, "newUsersPerMinute": 10}`))
	require.NoError(t, err)
	require.NotNil(t, p)
	for _, body := range []string{
		``,
		`[]`,
		`{"totalActiveUsers": 50, "totalActiveUsers": 60}`,
		`{"noSuchSetting": 1}`,
		`{"totalActiveUsers": 50} {}`,
		`{"totalActiveUsers": 50`,
	} {
		_, err := decodeSettingsPatch(strings.NewReader(body))
		assert.Error(t, err, "%q", body)
	}
}

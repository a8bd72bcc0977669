package main

import (
	"bytes"
	"log/slog"
	"net/http"
	"testing"

	"github.com/go-waitingroom/waitingroom"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Behind nginx, a room whose name nginx cannot put in a $cookie_
// variable is warned about at start: the cookie maps of the nginx
// configurations would not see its cookie.
func TestNginxCookieNameWarning(t *testing.T) {
	for _, tc := range []struct {
		args []string
		warn bool
	}{
		{[]string{"-forward-auth", "-front-door", "nginx", "-name", "spring-sale"}, true},
		{[]string{"-forward-auth", "-front-door", "nginx", "-name", "spring_sale"}, false},
		{[]string{"-forward-auth", "-front-door", "caddy", "-name", "spring-sale"}, false},
	} {
		o, err := parse(append(tc.args, "-key", hexKey, "-trusted-proxies", "127.0.0.1/32"), nil)
		require.NoError(t, err)
		room, err := waitingroom.New(withoutSync(o.roomConfig([][]byte{make([]byte, 32)}, nil)), nopStore{})
		require.NoError(t, err)
		var buf bytes.Buffer
		_, err = o.gate(room, http.NotFoundHandler(), slog.New(slog.NewTextHandler(&buf, nil)))
		require.NoError(t, err)
		assert.Equal(t, tc.warn, bytes.Contains(buf.Bytes(), []byte("nginx cannot read")), "%v: %s", tc.args, buf.String())
		require.NoError(t, room.Close())
	}
}

// A lottery whose records nothing serves is warned about at start: its
// visitors see a commitment and no revealed seed to check it against.
func TestUncheckedLotteryWarning(t *testing.T) {
	shuffled := []waitingroom.Event{{Name: "drop", ShuffleAtStart: true}}
	for _, tc := range []struct {
		args   []string
		events []waitingroom.Event
		warn   bool
	}{
		{[]string{"-queueing-method", "random"}, nil, true},
		{[]string{"-queueing-method", "random", "-lottery-path", "/lottery"}, nil, false},
		{[]string{"-queueing-method", "fifo"}, nil, false},
		{[]string{"-queueing-method", "fifo"}, shuffled, true},
		{[]string{"-queueing-method", "fifo", "-lottery-path", "/lottery"}, shuffled, false},
	} {
		o, err := parse(append(tc.args, "-key", hexKey, "-demo"), nil)
		require.NoError(t, err)
		o.events = tc.events
		var buf bytes.Buffer
		o.warnUnchecked(slog.New(slog.NewTextHandler(&buf, nil)))
		assert.Equal(t, tc.warn, bytes.Contains(buf.Bytes(), []byte("cannot check their draw")), "%v %v: %s", tc.args, tc.events, buf.String())
	}
}

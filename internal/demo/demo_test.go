package demo

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
)

func TestKey(t *testing.T) {
	valid := strings.Repeat("ab", 32)
	tests := []struct {
		name      string
		env       string
		wantKey   []byte
		wantErr   string
		generated bool
	}{
		{name: "hex key", env: valid, wantKey: bytes.Repeat([]byte{0xab}, 32)},
		{name: "spaces around", env: " " + valid + "\n", wantKey: bytes.Repeat([]byte{0xab}, 32)},
		{name: "unset: a key for this process", env: "", generated: true},
		{name: "not hex", env: "zz" + valid, wantErr: "is not hex"},
		{name: "too short", env: "abcd", wantErr: "holds 2 bytes; the key needs at least 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(KeyEnv, tt.env)
			var logs bytes.Buffer
			key, err := Key(slog.New(slog.NewTextHandler(&logs, nil)))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.generated {
				assert.Len(t, key, 32)
				assert.Contains(t, logs.String(), "NO KEY GIVEN")
				assert.Contains(t, logs.String(), "FOR A DEMO")
				return
			}
			assert.Equal(t, tt.wantKey, key)
			assert.Empty(t, logs.String())
		})
	}
}

func TestKeyFromEnvRequiresAKey(t *testing.T) {
	t.Setenv(KeyEnv, "")
	_, err := KeyFromEnv()
	assert.ErrorIs(t, err, ErrNoKey)
}

func TestGreeting(t *testing.T) {
	at := time.Date(2026, 3, 14, 13, 0, 30, 0, time.FixedZone("CET", 3600))
	assert.Equal(t, "Welcome! You were let in at 2026-03-14T12:00:30Z.\n", Greeting(waitingroom.Ticket{AcceptedAt: at}, true))
	assert.Equal(t, "Welcome! The waiting room is off.\n", Greeting(waitingroom.Ticket{}, false))
}

// syncWriter lets the test read what Serve logs from another goroutine.
type syncWriter struct {
	ch chan string
}

func (w syncWriter) Write(p []byte) (int, error) {
	w.ch <- string(p)
	return len(p), nil
}

func TestServeStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	logs := syncWriter{ch: make(chan string, 4)}
	done := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hi") })
	go func() { done <- Serve(ctx, "127.0.0.1:0", h, slog.New(slog.NewTextHandler(logs, nil))) }()

	line := <-logs.ch
	_, url, ok := strings.Cut(strings.TrimSpace(line), "url=")
	require.True(t, ok, "logged %q", line)
	resp, err := http.Get(url)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, "hi", string(body))

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the context was done")
	}
}

func TestServeReportsAListenError(t *testing.T) {
	err := Serve(context.Background(), "not an address", http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	assert.Error(t, err)
}

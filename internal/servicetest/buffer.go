package servicetest

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer collects the output of a program a test runs: a bytes.Buffer safe
// for the program's writes concurrent with the test's reads. The zero
// value is empty and ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Count returns how many times s occurs in what was written so far.
func (b *Buffer) Count(s string) int {
	return strings.Count(b.String(), s)
}

// Package testclock is the virtual clock the tests of this repository move
// by hand, so that nothing sleeps.
package testclock

import (
	"sync"
	"time"
)

// Start is where tests' clocks begin: on a minute boundary, so that tests
// can reason in whole minutes.
var Start = time.Date(2026, 5, 27, 15, 54, 0, 0, time.UTC)

// Clock is a virtual clock, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock showing t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

package waitingroom

import (
	"sync/atomic"
	"time"
)

// wallClock is the room's clock when Config.Now is not set: the wall clock,
// as time.Now reads it, for about half the price. time.Now reads two
// clocks, the wall clock and the monotonic one, and between two settings
// of the wall clock both advance alike; so the wall clock is read once a
// second, and in between the monotonic time elapsed since is added to that
// reading. A wall clock set meanwhile (by hand, or stepped by NTP) is
// followed within a second. It is safe for concurrent use.
type wallClock struct {
	base atomic.Pointer[clockReading]
}

// clockReading is a reading of the wall clock and the instant it was
// taken, on the monotonic clock. time.Now gives both at once.
type clockReading struct {
	wall, mono time.Time
}

// Now returns the current time.
func (c *wallClock) Now() time.Time {
	if b := c.base.Load(); b != nil {
		if d := time.Since(b.mono); d >= 0 && d < time.Second {
			return b.wall.Add(d)
		}
	}
	t := time.Now()
	c.base.Store(&clockReading{wall: t, mono: t})
	return t
}

package share

import "math"

// The room's units of time. Times are Unix ms of the shared clock unless
// said otherwise; minutes and slots are numbered from the Unix epoch.

// SlotSeconds is the length of a waiting visitor's check-in slot. Waiting
// visitors are counted by the slot of their latest check-in, so a count
// falls away at most one slot after the visitor stopped counting.
const SlotSeconds = 10

// AnyBucket marks the grant entry that any visitor may take: fresh
// arrivals in FIFO mode once every waiting visitor is covered, everyone in
// random mode.
const AnyBucket = math.MaxInt64

// MaxClockLead bounds, in ms, how far ahead of its own clock an instance
// follows the shared clock: a few seconds of skew between instances are
// absorbed, a grossly wrong clock elsewhere is not followed. Cookies with
// times further ahead than that are new visitors.
const MaxClockLead = 10_000

// historyMinutes is how many minutes of admissions the state keeps.
const historyMinutes = 60

// trafficWeight is the weight of the latest sync in an instance's traffic
// average.
const trafficWeight = 0.2

// outflowMinutes is the window, in minutes, of the admission rate used for
// estimates.
const outflowMinutes = 5

// SlotOf is the check-in slot of ms (Unix ms).
func SlotOf(ms int64) int64 { return FloorDiv(ms, 1000*SlotSeconds) }

// MinuteOf is the Unix minute of ms (Unix ms).
func MinuteOf(ms int64) int64 { return FloorDiv(ms, 60_000) }

// FloorDiv is a divided by b, rounded down (toward negative infinity).
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// SlotCounted reports whether a count kept under slot still counts at now
// (Unix ms) for visitors who stay counted for window ms after a check-in.
// Counts under slots further ahead than any instance's clock may run (one
// that ran hours ahead and was corrected) do not count: they would hold
// the room full until real time caught up with them.
func SlotCounted(slot, now, window int64) bool {
	return (slot+1)*1000*SlotSeconds+window > now && slot <= SlotOf(now+MaxClockLead)
}

// Mix mixes a visitor's identity id with x (a time, a number of refresh
// intervals) into a new identity, never 0: the same for the same
// arguments on every instance. The room draws a lapsed place's successor
// and random's draw with it; a round of a fleet's aggregator, its picks in
// random.
func Mix(id uint64, x int64) uint64 {
	h := id ^ uint64(x)*0x9e3779b97f4a7c15
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return max(h, 1)
}

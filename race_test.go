//go:build race

package waitingroom

// raceEnabled reports that the race detector is on.
const raceEnabled = true

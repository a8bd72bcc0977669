//go:build !race

package sim

// raceEnabled reports that the race detector is on: it slows the rooms
// some twentyfold, so tests run smaller crowds.
const raceEnabled = false

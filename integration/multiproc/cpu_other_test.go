//go:build !linux

package multiproc

import "time"

func cpuTime() time.Duration       { return 0 }
func runWait(string) time.Duration { return 0 }
func pidOf(string) string          { return "" }

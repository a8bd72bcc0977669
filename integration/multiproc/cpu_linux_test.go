package multiproc

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTime is the CPU time this process used so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runWait is how long the threads of process pid ("self" for this one)
// have waited for a CPU while runnable (Linux's schedstat), 0 where it
// cannot be read.
func runWait(pid string) time.Duration {
	if pid == "" {
		return 0
	}
	tasks, _ := os.ReadDir("/proc/" + pid + "/task")
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + pid + "/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			ns, _ := strconv.ParseInt(f[1], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}

// pidOf returns the PID of a process named name on this machine, "" if
// none (or not Linux).
func pidOf(name string) string {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if b, err := os.ReadFile("/proc/" + p.Name() + "/comm"); err == nil && strings.TrimSpace(string(b)) == name {
			return p.Name()
		}
	}
	return ""
}

package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"
)

// report prints the figures every 10 s until ctx is done.
func (s *soak) report(ctx context.Context) {
	fmt.Println("   time  arrived  waiting-pages/s  admitted  active  revoked  gave-up  5xx  conn-err  lost | per process: heap MB (live) / RSS MB / goroutines / threads | soak heap MB / goroutines | clock lead")
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	lastWaiting := int64(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		wp := s.waitingPages.Load()
		var procs []string
		for _, p := range s.procs {
			p.mu.Lock()
			pid := p.cmd.Process.Pid
			line := fmt.Sprintf("%.1f", p.heapMB)
			g := p.goroutines
			p.mu.Unlock()
			rss, threads := procStatus(pid)
			procs = append(procs, fmt.Sprintf("%s/%.0f/%d/%d", line, rss, g, threads))
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		lead := "?"
		if st, err := s.sharedState(ctx); err == nil {
			ms := st.Clock - time.Now().UnixMilli()
			lead = time.Duration(ms * int64(time.Millisecond)).String()
			if ms > s.maxLead.Load() {
				s.maxLead.Store(ms)
			}
		}
		fmt.Printf("%7s  %7d  %15.0f  %8d  %6d  %7d  %7d  %3d  %8d  %4d | %s | %.0f / %d | %s\n",
			time.Since(s.started).Round(time.Second), s.arrived.Load(), float64(wp-lastWaiting)/10, s.admitted.Load(),
			s.activeAt(time.Now(), 0), s.revoked.Load(), s.gaveUp.Load(), s.serverErrors.Load(), s.connErrors.Load(), s.lost.Load(),
			strings.Join(procs, "  "), float64(ms.HeapAlloc)/(1<<20), runtime.NumGoroutine(), lead)
		lastWaiting = wp
	}
}

package sim

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-waitingroom/waitingroom"
)

// peakHeap samples the in-use heap until stop is called and returns its
// largest value, in bytes.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// benchRun runs o b.N times and reports requests per second, the peak
// heap and the heap still held by the Result (the visitors' records).
func benchRun(b *testing.B, o Options) {
	b.ReportAllocs()
	runtime.GC()
	stop := peakHeap()
	var res *Result
	var requests int64
	for b.Loop() {
		var err error
		res, err = Run(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		requests += res.Requests
	}
	peak := stop()
	b.ReportMetric(float64(requests)/b.Elapsed().Seconds(), "requests/s")
	b.ReportMetric(float64(res.Requests), "requests/op")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "result-heap-MB")
	b.ReportMetric(float64(res.StateBytes), "state-bytes")
	runtime.KeepAlive(res)
}

// BenchmarkExperiment runs the write-up's experiment: 10,000 visitors
// joining over 30 minutes, a minute of browsing each.
func BenchmarkExperiment(b *testing.B) {
	for _, m := range []waitingroom.QueueingMethod{waitingroom.FIFO, waitingroom.Random} {
		b.Run(string(m), func(b *testing.B) {
			o := Experiment(m)
			o.FirstEstimateOnly = true
			benchRun(b, o)
		})
	}
}

// BenchmarkMillionHour runs a million visitors arriving over an hour,
// slightly more than the room lets in, each browsing for a minute once let
// in. The room's shared state holds a record per live session (about
// 1 MB at the peak), read and written at every sync; the heap holds the
// simulator's own per-visitor records too.
func BenchmarkMillionHour(b *testing.B) {
	if testing.Short() || raceEnabled {
		b.Skip("a million visitors: not with -short or -race")
	}
	benchRun(b, millionHour())
}

// millionHour is the Options of BenchmarkMillionHour.
func millionHour() Options {
	return Options{
		Visitors:          1_000_000,
		Arrivals:          time.Hour,
		BrowseEvery:       30 * time.Second,
		Method:            waitingroom.FIFO,
		NewUsersPerMinute: 16_000,
		TotalActiveUsers:  120_000,
		FirstEstimateOnly: true,
	}
}

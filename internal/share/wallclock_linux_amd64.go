package share

import (
	"syscall"
	"time"
)

// WallMillis is time.Now().UnixMilli() read through one clock rather than
// two: on linux/amd64, gettimeofday is answered by the kernel's vDSO, like
// time.Now, without the monotonic reading time.Now adds and the room does
// not use (its decisions are in Unix milliseconds of the wall clock). It
// follows the wall clock exactly as time.Now does, steps included.
func WallMillis() int64 {
	var tv syscall.Timeval
	if syscall.Gettimeofday(&tv) != nil {
		return time.Now().UnixMilli()
	}
	return tv.Sec*1000 + tv.Usec/1000
}

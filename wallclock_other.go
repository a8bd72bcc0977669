//go:build !(linux && amd64)

package waitingroom

import "time"

// wallMillis is time.Now().UnixMilli(); on linux/amd64, one vDSO call.
func wallMillis() int64 {
	return time.Now().UnixMilli()
}

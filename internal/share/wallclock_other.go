//go:build !(linux && amd64)

package share

import "time"

// WallMillis is time.Now().UnixMilli(); on linux/amd64, one vDSO call.
func WallMillis() int64 {
	return time.Now().UnixMilli()
}

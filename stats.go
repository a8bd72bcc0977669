package waitingroom

import (
	"time"
)

// Stats is a snapshot of the whole room (all instances) as of this
// instance's latest sync.
type Stats struct {
	// Settings are the live settings.
	Settings Settings
	// Active is the number of admitted visitors whose session is alive.
	Active int
	// Waiting is the number of visitors waiting and refreshing.
	Waiting int
	// Buckets are the waiting visitors by arrival minute, oldest first.
	Buckets []BucketStats
	// AdmittedThisMinute is the number of visitors let in this minute.
	AdmittedThisMinute int
	// OutflowPerMinute is the recent admission rate, visitors per minute.
	OutflowPerMinute float64
	// Estimate is the wait of a visitor arriving now.
	Estimate Estimate
	// Instances is the number of instances sharing the room.
	Instances int
	// Synced is the time of the latest successful sync; zero before the
	// first one.
	Synced time.Time
}

// BucketStats counts the visitors waiting from one arrival minute.
type BucketStats struct {
	Bucket  time.Time
	Waiting int
}

// Stats returns the room's figures as of the latest sync. It does no I/O.
func (rm *Room) Stats() Stats {
	v := rm.view.Load()
	s := Stats{
		Settings:           v.settings,
		Active:             int(v.active),
		Waiting:            int(v.waiting),
		AdmittedThisMinute: int(v.admittedThisMinute),
		OutflowPerMinute:   v.perMinute,
		Instances:          v.instances,
		Estimate:           rm.estimate(v, minuteOf(rm.now()), true),
	}
	if v.at != 0 {
		s.Synced = time.UnixMilli(v.at)
	}
	for _, b := range v.buckets {
		s.Buckets = append(s.Buckets, BucketStats{Bucket: time.Unix(b.bucket*60, 0), Waiting: int(b.waiting)})
	}
	return s
}

package waitingroom

import "github.com/go-waitingroom/waitingroom/internal/share"

// QueueingMethod selects how waiting visitors are let in.
type QueueingMethod string

// Queueing methods. The zero value means FIFO.
const (
	// FIFO lets visitors in in order of arrival, minute by minute.
	FIFO QueueingMethod = "fifo"
	// Random lets every waiting visitor race for each free slot, whatever
	// their arrival time. Arrival buckets are still kept, so switching back
	// to FIFO restores arrival order.
	Random QueueingMethod = "random"
	// Passthrough lets everyone in at once but still counts them.
	Passthrough QueueingMethod = "passthrough"
	// Reject closes the site: new visitors get a static "closed" page with
	// no refresh, and admitted visitors do not reach the application
	// either (with QueueAll or a pre-queue as well, everyone waits on a
	// page that refreshes).
	Reject QueueingMethod = "reject"
)

// method is what a queueing method does. Every method is defined here and
// only here: the decision (check), the grant (carve) and the estimates ask
// the policy's method rather than test the method's name.
type method struct {
	// passes lets every visitor in at once, counted, without a grant.
	passes bool
	// rejects closes the site: nobody reaches the application.
	rejects bool
	// ordered lets visitors in by arrival bucket, oldest first: a bucket
	// whose due visitors the free slots cover entirely is not paced.
	ordered bool
	// layout lays n free slots out over the buckets of waiting visitors
	// (oldest first, with how many of each are due); nil for a method that
	// grants no slots (slots.go).
	layout func(n int64, buckets []share.Bucket) grant
	// estimate is the wait, as of view v under policy p, of a visitor with
	// ahead visitors in front of them in line (ordered: View.Ahead), tied
	// more expected (View.Tied), who is fresh (behind everyone waiting) or
	// not. nil when nobody waits for a slot.
	estimate func(v *view, p *policy, ahead, tied int64, fresh bool) Estimate
}

var (
	fifoMethod = method{
		ordered: true,
		layout:  fifoLayout,
		estimate: func(v *view, p *policy, ahead, tied int64, _ bool) Estimate {
			return fifoEstimate(v, p, float64(ahead), float64(tied))
		},
	}
	randomMethod = method{
		layout: randomLayout,
		estimate: func(v *view, p *policy, first, _ int64, fresh bool) Estimate {
			w := v.Waiting
			if fresh {
				w++ // the visitor competes too
			}
			return randomEstimate(v, p, float64(w), float64(first))
		},
	}
	passthroughMethod = method{
		passes: true,
		// Nobody waits for a slot: the next request passes.
		estimate: func(*view, *policy, int64, int64, bool) Estimate { return Estimate{Known: true} },
	}
	rejectMethod = method{rejects: true}
)

// spec returns what m does, or nil for an unknown method.
func (m QueueingMethod) spec() *method {
	switch m {
	case FIFO:
		return &fifoMethod
	case Random:
		return &randomMethod
	case Passthrough:
		return &passthroughMethod
	case Reject:
		return &rejectMethod
	}
	return nil
}

func (m QueueingMethod) valid() bool { return m.spec() != nil }

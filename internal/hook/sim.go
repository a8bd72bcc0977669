package hook

// InstanceID sets what draws the instance ID of a room made from cfg (a
// *waitingroom.Config), in place of crypto/rand: the simulator's
// instances get the same IDs, in the same order, at every run.
var InstanceID func(cfg any, id func() string)

package share

// Memory is a map by visitor ID whose entries live from one to two periods
// after they were last set. It turns over (the current map becomes the
// previous, a new one the current) rather than being swept, so that
// nothing walks it while requests wait on the lock that guards it. It is
// not safe for concurrent use: its owner guards it (the room's chances and
// Local's sessions, under Local's lock). The zero Memory is not ready to
// use: make one with NewMemory.
type Memory[V any] struct {
	cur, prev map[uint64]V
	turned    int64 // Unix ms of the latest turn
}

// NewMemory returns an empty Memory.
func NewMemory[V any]() Memory[V] {
	return Memory[V]{cur: map[uint64]V{}, prev: map[uint64]V{}}
}

// Get returns the entry of id, if it is remembered.
func (g *Memory[V]) Get(id uint64) (V, bool) {
	if v, ok := g.cur[id]; ok {
		return v, true
	}
	v, ok := g.prev[id]
	return v, ok
}

// Set remembers v for id, in the current generation.
func (g *Memory[V]) Set(id uint64, v V) { g.cur[id] = v }

// Del forgets id.
func (g *Memory[V]) Del(id uint64) {
	delete(g.cur, id)
	delete(g.prev, id)
}

// Len is the number of entries in both generations (an ID set again since
// the latest turn counts twice).
func (g *Memory[V]) Len() int { return len(g.cur) + len(g.prev) }

// Turn turns the generations over if period ms passed since the latest
// turn at now (Unix ms).
func (g *Memory[V]) Turn(now, period int64) {
	if now-g.turned >= period {
		g.prev, g.cur, g.turned = g.cur, make(map[uint64]V, len(g.cur)), now
	}
}

// Each calls f with every entry, the previous generation's first.
func (g *Memory[V]) Each(f func(V)) {
	for _, v := range g.prev {
		f(v)
	}
	for _, v := range g.cur {
		f(v)
	}
}

package waitingroom

// generations is a map by visitor ID whose entries live from one to two
// periods after they were last set. It turns over (the current map becomes
// the previous, a new one the current) rather than being swept, so that
// nothing walks it while requests wait on the lock that guards it.
type generations[V any] struct {
	cur, prev map[uint64]V
	turned    int64 // Unix ms of the latest turn
}

func newGenerations[V any]() generations[V] {
	return generations[V]{cur: map[uint64]V{}, prev: map[uint64]V{}}
}

func (g *generations[V]) get(id uint64) (V, bool) {
	if v, ok := g.cur[id]; ok {
		return v, true
	}
	v, ok := g.prev[id]
	return v, ok
}

func (g *generations[V]) set(id uint64, v V) { g.cur[id] = v }

func (g *generations[V]) del(id uint64) {
	delete(g.cur, id)
	delete(g.prev, id)
}

func (g *generations[V]) len() int { return len(g.cur) + len(g.prev) }

// turn turns the generations over if period ms passed since the latest
// turn at now (Unix ms).
func (g *generations[V]) turn(now, period int64) {
	if now-g.turned >= period {
		g.prev, g.cur, g.turned = g.cur, make(map[uint64]V, len(g.cur)), now
	}
}

// each calls f with every entry, the previous generation's first.
func (g *generations[V]) each(f func(V)) {
	for _, v := range g.prev {
		f(v)
	}
	for _, v := range g.cur {
		f(v)
	}
}

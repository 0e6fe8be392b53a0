package meter

// IdleTTL is how long a key stays in memory without traffic.
const IdleTTL = idleTTL

// EvictIdle runs the idle-key sweep that Run runs, at the meter's clock, and returns the keys dropped.
func (m *Meter) EvictIdle() int { return m.keys.evictIdle(m.now(), idleTTL) }

// KeyCount returns the number of keys with state in memory.
func (m *Meter) KeyCount() int {
	n := 0
	for i := range m.keys.shards {
		s := &m.keys.shards[i]
		s.mu.RLock()
		n += len(s.keys)
		s.mu.RUnlock()
	}
	return n
}

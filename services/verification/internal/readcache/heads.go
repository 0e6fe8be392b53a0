package readcache

import (
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
)

// DefaultMaxHeads bounds the servers whose heads are cached: as many as the answers' budget
// (DefaultMaxBytes) holds, about 18,000. A head is about 150 bytes, so the bound costs under 3 MiB.
const DefaultMaxHeads = 20_000

// maxMissing bounds the cached "no such server" answers, in an LRU of their own, so that requests for
// made-up names cannot evict the heads of real servers.
const maxMissing = 10_000

// Heads caches server heads (intelligence.ServerHead: the server's own row, the only statement of a warm
// server state read) by server key, and the servers that do not exist, so that a warm read sends no
// statement at all. With the heads cached, verification-bench's read of 10,000 servers went from one
// indexed statement per request to none (docs/performance.md).
//
// Unlike the snapshots and changes of Cache, a head moves: every registry sync that lists the server
// rewrites it. The cache is used only while this replica hears every change of intel_servers
// (Live(true), set by the listener of the intel_servers_changed channel once it listens), and each
// change forgets its server (Forget, or ForgetAll): migration 00007's triggers notify every replica
// at commit, insertions included, so a cached "no such server" goes when the server appears. A
// listener that loses its connection calls Live(false) and the cache is emptied and unused until it
// listens again.
//
// A read that started before a change may finish after its notification: Begin and Add order them
// (an epoch counts the notifications, and a head read across one is not kept), so the cache never
// keeps a head older than a change it heard of. Heads is safe for concurrent use.
type Heads struct {
	found   *lru.Cache[intelligence.ServerKey, intelligence.ServerHead]
	missing *lru.Cache[intelligence.ServerKey, struct{}]
	live    atomic.Bool
	// mu orders forgetting against Add; epoch counts forgets.
	mu    sync.Mutex
	epoch uint64
}

// NewHeads returns a cache of at most max heads (and maxMissing unknown servers). It is not live
// until Live(true).
func NewHeads(max int) *Heads {
	found, _ := lru.New[intelligence.ServerKey, intelligence.ServerHead](max)
	missing, _ := lru.New[intelligence.ServerKey, struct{}](maxMissing)
	return &Heads{found: found, missing: missing}
}

// Head returns the cached head of key: ok is false when nothing is cached, exists is false when the
// server is cached as unknown.
func (h *Heads) Head(key intelligence.ServerKey) (head intelligence.ServerHead, exists, ok bool) {
	if !h.live.Load() {
		return intelligence.ServerHead{}, false, false
	}
	if head, ok := h.found.Get(key); ok {
		return head, true, true
	}
	if _, ok := h.missing.Get(key); ok {
		return intelligence.ServerHead{}, false, true
	}
	return intelligence.ServerHead{}, false, false
}

// Begin returns the token of a read of the database about to start, for Add.
func (h *Heads) Begin() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.epoch
}

// Add keeps what a read begun at token found: the head, or (exists false) that the server is
// unknown. It keeps nothing when a change was heard since token, or while the cache is not live.
func (h *Heads) Add(token uint64, key intelligence.ServerKey, head intelligence.ServerHead, exists bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if token != h.epoch || !h.live.Load() {
		return
	}
	if exists {
		h.found.Add(key, head)
		h.missing.Remove(key)
	} else {
		h.missing.Add(key, struct{}{})
		h.found.Remove(key)
	}
}

// Forget drops what is cached about key: its row changed.
func (h *Heads) Forget(key intelligence.ServerKey) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.epoch++
	h.found.Remove(key)
	h.missing.Remove(key)
}

// ForgetAll drops everything: any row may have changed.
func (h *Heads) ForgetAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.forgetAll()
}

// Live says whether changes are being heard. Either way the cache starts empty: changes may have been
// missed before.
func (h *Heads) Live(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.live.Store(on)
	h.forgetAll()
}

func (h *Heads) forgetAll() {
	h.epoch++
	h.found.Purge()
	h.missing.Purge()
}

// Len is the number of servers cached, known or unknown.
func (h *Heads) Len() int { return h.found.Len() + h.missing.Len() }

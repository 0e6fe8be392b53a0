package store

import (
	"strings"

	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
)

// serverHeadChangesChannel is the channel migration 00007's triggers notify when a row of
// intel_servers is inserted, updated or deleted (payload "namespace/name") or the table is
// truncated (empty payload).
const serverHeadChangesChannel = "intel_servers_changed"

// ServerHeadChangeSink is told what the server-head listener hears (readcache.Heads).
type ServerHeadChangeSink interface {
	// Live says whether every change is being heard from now on.
	Live(on bool)
	// Forget is called when one server's row changed.
	Forget(key intelligence.ServerKey)
	// ForgetAll is called when any row may have changed.
	ForgetAll()
}

// ServerHeadChanges subscribes sink to the changes of the servers' rows (WatchChanges).
func ServerHeadChanges(sink ServerHeadChangeSink) Subscription {
	return Subscription{Channel: serverHeadChangesChannel, Live: sink.Live, Notify: func(payload string) {
		if key, ok := parseServerHeadChange(payload); ok {
			sink.Forget(key)
			return
		}
		sink.ForgetAll()
	}}
}

// parseServerHeadChange reads a notification's "namespace/name". Anything else (the empty payload
// of a TRUNCATE or of a key too long to send) is not a key, and means every row.
func parseServerHeadChange(payload string) (intelligence.ServerKey, bool) {
	ns, name, ok := strings.Cut(payload, "/")
	if !ok || ns == "" || name == "" {
		return intelligence.ServerKey{}, false
	}
	return intelligence.ServerKey{Namespace: ns, Name: name}, true
}

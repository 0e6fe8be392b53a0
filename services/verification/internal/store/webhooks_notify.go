package store

// pendingChangesChannel is the channel migration 00018's trigger notifies when changes are queued for
// the webhook matcher.
const pendingChangesChannel = "webhook_pending_changes"

// PendingChanges subscribes wake to the webhook matcher's queue (WatchChanges): it is called at each
// commit that queued changes. The matcher polls as well, so a notification missed while the listener
// is down only delays it.
func PendingChanges(wake func()) Subscription {
	return Subscription{Channel: pendingChangesChannel, Live: func(bool) {}, Notify: func(string) { wake() }}
}

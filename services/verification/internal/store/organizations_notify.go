package store

// keyChangesChannel is the channel migration 00005's triggers notify when keys or organizations change.
const keyChangesChannel = "api_keys_changed"

// KeyChangeSink is told what the key-change listener hears (identity.Keys).
type KeyChangeSink interface {
	// Live says whether every change is being heard from now on.
	Live(on bool)
	// Forget is called on each change.
	Forget()
}

// KeyChanges subscribes sink to the changes of keys and organizations (WatchChanges): sink is live
// while they are heard, and forgets on each (the notifications carry no payload).
func KeyChanges(sink KeyChangeSink) Subscription {
	return Subscription{Channel: keyChangesChannel, Live: sink.Live, Notify: func(string) { sink.Forget() }}
}

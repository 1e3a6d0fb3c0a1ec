package store

import "context"

// Notifier is implemented by stores that several hosts share
// (store/postgres): a host names the sessions it appended events to, and
// every other host sharing the store hears of it, so that subscribers on
// any host read a session's new events without waiting for a poll.
// Notifications carry no events: a listener reads them from the store.
type Notifier interface {
	// NotifyChanged tells the listeners of every other store sharing the
	// database that the sessions' events changed.
	NotifyChanged(ctx context.Context, sessionIDs []string) error
	// ListenChanged delivers, in batches, the session ids that other
	// stores sharing the database named to NotifyChanged (not this
	// store's own), until ctx ends; then it closes the channel. An empty
	// batch means that anything may have changed (notifications may have
	// been lost, as while the listening connection was down): a listener
	// then re-reads every session it follows. A listener that does not
	// keep up holds the notifications back.
	ListenChanged(ctx context.Context) (<-chan []string, error)
}

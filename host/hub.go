package host

import (
	"sync"

	"github.com/agentsdk/agentsdk/api"
)

// hub tells a session's subscribers about events once they are stored.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[*subscription]struct{}
}

// subscription delivers a session's new events; its one reader is
// Sessions.Follow. Batches arrive in c in the order they were published,
// which for concurrent appends may not be seq order, and may be dropped
// when the subscriber falls behind: then poke fires, and the subscriber
// reads what it missed from the store. poke fires too when another host
// sharing the store appended to the session (its events never come
// through c), and now and then for no reason. A subscriber therefore
// tracks the last seq it delivered and reads the store whenever a batch
// does not follow it.
type subscription struct {
	c    chan []api.Event
	poke chan struct{}
	hub  *hub
	id   string
}

func (h *hub) subscribe(sessionID string) *subscription {
	s := &subscription{c: make(chan []api.Event, 64), poke: make(chan struct{}, 1), hub: h, id: sessionID}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[string]map[*subscription]struct{}{}
	}
	if h.subs[sessionID] == nil {
		h.subs[sessionID] = map[*subscription]struct{}{}
	}
	h.subs[sessionID][s] = struct{}{}
	return s
}

// close stops the subscription.
func (s *subscription) close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	delete(s.hub.subs[s.id], s)
	if len(s.hub.subs[s.id]) == 0 {
		delete(s.hub.subs, s.id)
	}
}

func (h *hub) publish(sessionID string, events []api.Event) {
	if len(events) == 0 || sessionID == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[sessionID] {
		select {
		case s.c <- events:
		default:
			s.wake()
		}
	}
}

// poke tells a session's subscribers to read the store: another host
// appended to it.
func (h *hub) poke(sessionID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[sessionID] {
		s.wake()
	}
}

// pokeAll tells every subscriber to read the store: anything may have
// changed.
func (h *hub) pokeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, subs := range h.subs {
		for s := range subs {
			s.wake()
		}
	}
}

func (s *subscription) wake() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

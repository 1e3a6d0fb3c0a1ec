package fakemodel

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Router is a fake provider for requests that arrive at once from several
// conversations (an eval batch's cases), where one script answered in
// order would not do: each request goes to the Server of the marker its
// body holds (a text the conversation's first message starts with), and
// to Default otherwise (answering "done"). It counts the requests in
// flight at once, at most. Close closes every Server it made.
type Router struct {
	*httptest.Server
	Default *Server

	mu          sync.Mutex
	fakes       map[string]*Server // by marker
	inFlight    int
	maxInFlight int
}

// NewRouter starts a Router.
func NewRouter() *Router {
	r := &Router{Default: New(), fakes: map[string]*Server{}}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

// Route adds replies to the script of the marker's Server, made on first
// use, and returns it.
func (r *Router) Route(marker string, replies ...Reply) *Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.fakes[marker]
	if f == nil {
		f = New()
		r.fakes[marker] = f
	}
	f.Push(replies...)
	return f
}

// Requests counts the requests the marker's Server received.
func (r *Router) Requests(marker string) int {
	r.mu.Lock()
	f := r.fakes[marker]
	r.mu.Unlock()
	if f == nil {
		return 0
	}
	return len(f.Requests())
}

// Peak returns the most requests that were in flight at once.
func (r *Router) Peak() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxInFlight
}

// Close stops the Router and its Servers.
func (r *Router) Close() {
	r.Server.Close()
	r.Default.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.fakes {
		f.Close()
	}
}

func (r *Router) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	r.mu.Lock()
	target := r.Default
	for marker, f := range r.fakes {
		if bytes.Contains(body, []byte(marker)) {
			target = f
			break
		}
	}
	r.inFlight++
	r.maxInFlight = max(r.maxInFlight, r.inFlight)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight--
		r.mu.Unlock()
	}()
	resp, err := Forward(req, body, target.URL)
	Relay(w, resp, err)
}

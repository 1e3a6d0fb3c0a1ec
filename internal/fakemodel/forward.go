package fakemodel

import (
	"bytes"
	"net/http"
)

// Forward sends a model request, whose body was read already, on to
// target (a Server's URL) with its method, path, query and headers, and
// returns the answer's head. Relay writes the answer back.
func Forward(r *http.Request, body []byte, target string) (*http.Response, error) {
	fwd, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	fwd.Header = r.Header.Clone()
	return http.DefaultTransport.RoundTrip(fwd)
}

// Relay writes what Forward returned to w: the answer, flushed as it
// arrives (a streamed one included), or 502 with err.
func Relay(w http.ResponseWriter, resp *http.Response, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

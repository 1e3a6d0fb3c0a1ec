package model_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/model"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"milliseconds win", map[string]string{"Retry-After": "2", "Retry-After-Ms": "1500"}, 1500 * time.Millisecond},
		{"an HTTP date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"a date past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"nonsense", map[string]string{"Retry-After": "soon"}, 0},
		{"negative", map[string]string{"Retry-After": "-3"}, 0},
		{"bad milliseconds fall back to seconds", map[string]string{"Retry-After-Ms": "x", "Retry-After": "1"}, time.Second},
		{"absurd", map[string]string{"Retry-After": "1e300"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := model.RetryAfter(h, now); got != tt.want {
				t.Errorf("RetryAfter(%v) = %s, want %s", tt.header, got, tt.want)
			}
		})
	}
}

func TestIsBrokenConnection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{io.EOF, true},
		{fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("read tcp: %w", syscall.ECONNRESET), true},
		{syscall.ECONNREFUSED, false},
		{errors.New("something else"), false},
	}
	for _, tt := range tests {
		if got := model.IsBrokenConnection(tt.err); got != tt.want {
			t.Errorf("IsBrokenConnection(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestErrorRetryable(t *testing.T) {
	t.Parallel()
	for _, r := range []model.Reason{model.ReasonRateLimited, model.ReasonOverloaded} {
		if !(&model.Error{Reason: r}).Retryable() {
			t.Errorf("%s is not retryable", r)
		}
	}
	for _, r := range []model.Reason{model.ReasonAuth, model.ReasonContextLength, model.ReasonInvalidRequest, model.ReasonTimeout, model.ReasonProvider} {
		if (&model.Error{Reason: r}).Retryable() {
			t.Errorf("%s is retryable", r)
		}
	}
}

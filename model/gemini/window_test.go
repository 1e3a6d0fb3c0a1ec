package gemini_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/model"
)

// TestContextLength: a request over the fake's window gets Gemini's
// error, which the provider classifies.
func TestContextLength(t *testing.T) {
	t.Parallel()
	p, fake := open(t, model.Config{})
	fake.SetWindow(1000)
	_, err := collect(context.Background(), p, &model.Request{Messages: []model.Message{{Role: model.User, Text: strings.Repeat("lorem ipsum ", 600)}}})
	var merr *model.Error
	if !errors.As(err, &merr) || merr.Reason != model.ReasonContextLength || merr.Status != 400 ||
		!strings.HasSuffix(merr.Message, "exceeds the maximum number of tokens allowed (1000).") {
		t.Fatalf("%v, want context_length_exceeded saying the maximum", err)
	}
}

package host

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/model"
)

// TestGenAINamesAreTheConventions checks the names genai.go spells out
// against the package generated from the conventions it follows.
func TestGenAINamesAreTheConventions(t *testing.T) {
	t.Parallel()
	keys := []struct{ ours, theirs attribute.Key }{
		{keyOperation, semconv.GenAIOperationNameKey},
		{keyProvider, semconv.GenAIProviderNameKey},
		{keyAgentName, semconv.GenAIAgentNameKey},
		{keyConversationID, semconv.GenAIConversationIDKey},
		{keyRequestModel, semconv.GenAIRequestModelKey},
		{keyRequestMaxTokens, semconv.GenAIRequestMaxTokensKey},
		{keyRequestStream, semconv.GenAIRequestStreamKey},
		{keyResponseModel, semconv.GenAIResponseModelKey},
		{keyFinishReasons, semconv.GenAIResponseFinishReasonsKey},
		{keyTimeToFirstChunk, semconv.GenAIResponseTimeToFirstChunkKey},
		{keyInputTokens, semconv.GenAIUsageInputTokensKey},
		{keyOutputTokens, semconv.GenAIUsageOutputTokensKey},
		{keyCacheReadTokens, semconv.GenAIUsageCacheReadInputTokensKey},
		{keyCacheCreationTokens, semconv.GenAIUsageCacheCreationInputTokensKey},
		{keyReasoningTokens, semconv.GenAIUsageReasoningOutputTokensKey},
		{keyTokenType, semconv.GenAITokenTypeKey},
		{keyToolName, semconv.GenAIToolNameKey},
		{keyToolCallID, semconv.GenAIToolCallIDKey},
		{keyToolDescription, semconv.GenAIToolDescriptionKey},
		{keyErrorType, semconv.ErrorTypeKey},
		{keySystemInstructions, semconv.GenAISystemInstructionsKey},
		{keyInputMessages, semconv.GenAIInputMessagesKey},
		{keyOutputMessages, semconv.GenAIOutputMessagesKey},
		{keyToolArguments, semconv.GenAIToolCallArgumentsKey},
		{keyToolResult, semconv.GenAIToolCallResultKey},
	}
	for _, k := range keys {
		if k.ours != k.theirs {
			t.Errorf("attribute %q, the conventions say %q", k.ours, k.theirs)
		}
	}
	values := []struct{ ours, theirs string }{
		{opChat, string(genaiconv.OperationNameChat)},
		{opExecuteTool, string(genaiconv.OperationNameExecuteTool)},
		{opInvokeAgent, string(genaiconv.OperationNameInvokeAgent)},
		{providerName("anthropic"), string(genaiconv.ProviderNameAnthropic)},
		{providerName("openai"), string(genaiconv.ProviderNameOpenAI)},
		{providerName("gemini"), string(genaiconv.ProviderNameGCPGemini)},
		{"input", string(genaiconv.TokenTypeInput)},
		{"output", string(genaiconv.TokenTypeOutput)},
		{errorTypeOther, string(genaiconv.ErrorTypeOther)},
		{genaiSchemaURL, semconv.SchemaURL},
		{metricTokenUsage, genaiconv.ClientTokenUsage{}.Name()},
		{"{token}", genaiconv.ClientTokenUsage{}.Unit()},
		{metricOperationDuration, genaiconv.ClientOperationDuration{}.Name()},
		{"s", genaiconv.ClientOperationDuration{}.Unit()},
	}
	for _, v := range values {
		if v.ours != v.theirs {
			t.Errorf("%q, the conventions say %q", v.ours, v.theirs)
		}
	}
	// The advised boundaries, from docs/gen-ai/gen-ai-metrics.md of v1.41.0
	// (the generated package does not carry them): token counts in powers
	// of 4 from 1 to 4^13, durations doubling from 10 ms.
	for i, b := range tokenBuckets {
		if want := float64(int64(1) << (2 * i)); b != want || len(tokenBuckets) != 14 {
			t.Errorf("token bucket %d is %v, want %v of 14", i, b, want)
		}
	}
	for i, b := range durationBuckets {
		if want := 0.01 * float64(int64(1)<<i); fmt.Sprintf("%.2f", b) != fmt.Sprintf("%.2f", want) || len(durationBuckets) != 14 {
			t.Errorf("duration bucket %d is %v, want %v of 14", i, b, want)
		}
	}
}

func TestErrorType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"a classified model error", fmt.Errorf("model: %w", &model.Error{Reason: model.ReasonRateLimited, Status: 429}), "rate_limited"},
		{"a deadline", fmt.Errorf("streaming: %w", context.DeadlineExceeded), "timeout"},
		{"a cancellation", context.Canceled, "cancelled"},
		{"anything else", errors.New("step limit reached"), "_OTHER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorType(tt.err); got != tt.want {
				t.Errorf("errorType(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

// TestRequestContent checks the content of a request against the
// conventions' message schemas, by example.
func TestRequestContent(t *testing.T) {
	t.Parallel()
	req := &model.Request{System: "You review.", Messages: []model.Message{
		{Role: model.User, Text: "review it"},
		{Role: model.Assistant, Reasoning: []model.Reasoning{{Text: "Look first.", Signature: "sig"}, {Redacted: "opaque"}},
			Text: "Looking.", ToolCalls: []model.ToolCall{{ID: "r1", Name: "review", Input: []byte(`{"pr":42}`)}, {ID: "r2", Name: "review", Input: []byte(`{"pr":`)}}},
		{Role: model.User, ToolResults: []model.ToolResult{{CallID: "r1", Content: "ok"}, {CallID: "r2", Content: "", IsError: true}}},
	}}
	got := map[string]string{}
	for _, kv := range requestContent(req) {
		got[string(kv.Key)] = kv.Value.AsString()
	}
	want := map[string]string{
		"gen_ai.system_instructions": `[{"type":"text","content":"You review."}]`,
		"gen_ai.input.messages": `[{"role":"user","parts":[{"type":"text","content":"review it"}]},` +
			`{"role":"assistant","parts":[{"type":"reasoning","content":"Look first."},{"type":"text","content":"Looking."},` +
			`{"type":"tool_call","id":"r1","name":"review","arguments":{"pr":42}},{"type":"tool_call","id":"r2","name":"review","arguments":"{\"pr\":"}]},` +
			`{"role":"tool","parts":[{"type":"tool_call_response","id":"r1","response":"ok"},{"type":"tool_call_response","id":"r2","response":""}]}]`,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\n got %s\nwant %s", k, got[k], w)
		}
	}
	if keys := slices.Sorted(maps.Keys(got)); len(keys) != len(want) {
		t.Errorf("attributes %v, want %d", keys, len(want))
	}
}

// TestAnswerContent checks an answer as it streamed against the
// conventions' output message schema, by example.
func TestAnswerContent(t *testing.T) {
	t.Parallel()
	chunks := []model.Chunk{
		{ReasoningText: "Read "}, {ReasoningText: "it first."}, {Reasoning: &model.Reasoning{Text: "Read it first.", Signature: "sig"}},
		{Text: "Let me "}, {Text: "look."},
		{ToolCall: &model.ToolCall{ID: "r1", Name: "review", Input: []byte(`{"pr":42}`)}},
	}
	tests := []struct {
		name   string
		chunks []model.Chunk
		end    *model.End
		err    error
		want   string
	}{
		{"the provider's stop reason", chunks, &model.End{StopReason: "tool_use"}, nil,
			`[{"role":"assistant","parts":[{"type":"reasoning","content":"Read it first."},{"type":"text","content":"Let me look."},` +
				`{"type":"tool_call","id":"r1","name":"review","arguments":{"pr":42}}],"finish_reason":"tool_use"}]`},
		{"calls without an end", chunks[5:], nil, nil,
			`[{"role":"assistant","parts":[{"type":"tool_call","id":"r1","name":"review","arguments":{"pr":42}}],"finish_reason":"tool_call"}]`},
		{"text without an end", chunks[3:5], nil, nil,
			`[{"role":"assistant","parts":[{"type":"text","content":"Let me look."}],"finish_reason":"stop"}]`},
		{"cut short by an error", chunks[3:4], nil, context.DeadlineExceeded,
			`[{"role":"assistant","parts":[{"type":"text","content":"Let me "}],"finish_reason":"error"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a answer
			for _, c := range tt.chunks {
				a.add(c)
			}
			if got := a.json(tt.end, tt.err); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// stream is a provider that answers every call with its chunks.
type stream []model.Chunk

func (s stream) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		for _, c := range s {
			if !yield(c, nil) {
				return
			}
		}
	}
}

// BenchmarkTracedModel is what tracing adds to a model call: a recorded
// chat span, usage on it and on the turn's, and the two metrics.
func BenchmarkTracedModel(b *testing.B) {
	answer := stream{{Text: "Looks "}, {Text: "fine."}, {ToolCall: &model.ToolCall{ID: "r1", Name: "review", Input: []byte(`{"pr":42}`)}},
		{End: &model.End{Model: "m-1", StopReason: "tool_use", Usage: &model.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 1000}}}}
	req := &model.Request{System: "You review.", Messages: []model.Message{{Role: model.User, Text: "review PR 42"}}, MaxTokens: 1000}
	for _, capture := range []bool{false, true} {
		b.Run(fmt.Sprintf("capture=%v", capture), func(b *testing.B) {
			tel := newTelemetry(sdktrace.NewTracerProvider(), sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
				TelemetryOptions{Provider: "anthropic", Model: "m", CaptureContent: capture})
			p := tel.model(answer)
			ctx, turn := tel.startTurn(context.Background(), api.Session{ID: "s1"}, "t1")
			defer turn.End()
			b.ReportAllocs()
			for b.Loop() {
				for range p.Stream(ctx, req) {
				}
			}
		})
	}
	b.Run("untraced", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for range answer.Stream(context.Background(), req) {
			}
		}
	})
}

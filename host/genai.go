package host

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentsdk/agentsdk/model"
)

// The host's spans and model metrics follow the OpenTelemetry semantic
// conventions for generative AI of release v1.41.0 (docs/gen-ai of
// open-telemetry/semantic-conventions, the release that
// go.opentelemetry.io/otel/semconv/v1.41.0 was generated from): a turn is
// invoke_agent, each model call in it chat, each tool call execute_tool.
// The names are spelled out here rather than imported, so that an agent
// does not link the whole generated package; genai_test.go checks each one
// against it.

// genaiSchemaURL is the schema of the conventions followed, set on the
// host's tracer and meter.
const genaiSchemaURL = "https://opentelemetry.io/schemas/1.41.0"

// The attributes of the conventions.
const (
	keyOperation           attribute.Key = "gen_ai.operation.name"
	keyProvider            attribute.Key = "gen_ai.provider.name"
	keyAgentName           attribute.Key = "gen_ai.agent.name"
	keyConversationID      attribute.Key = "gen_ai.conversation.id"
	keyRequestModel        attribute.Key = "gen_ai.request.model"
	keyRequestMaxTokens    attribute.Key = "gen_ai.request.max_tokens"
	keyRequestStream       attribute.Key = "gen_ai.request.stream"
	keyResponseModel       attribute.Key = "gen_ai.response.model"
	keyFinishReasons       attribute.Key = "gen_ai.response.finish_reasons"
	keyTimeToFirstChunk    attribute.Key = "gen_ai.response.time_to_first_chunk"
	keyInputTokens         attribute.Key = "gen_ai.usage.input_tokens"
	keyOutputTokens        attribute.Key = "gen_ai.usage.output_tokens"
	keyCacheReadTokens     attribute.Key = "gen_ai.usage.cache_read.input_tokens"
	keyCacheCreationTokens attribute.Key = "gen_ai.usage.cache_creation.input_tokens"
	keyReasoningTokens     attribute.Key = "gen_ai.usage.reasoning.output_tokens"
	keyTokenType           attribute.Key = "gen_ai.token.type"
	keyToolName            attribute.Key = "gen_ai.tool.name"
	keyToolCallID          attribute.Key = "gen_ai.tool.call.id"
	keyToolDescription     attribute.Key = "gen_ai.tool.description"
	keyErrorType           attribute.Key = "error.type"

	// Opt-in content, recorded only with TelemetryOptions.CaptureContent.
	keySystemInstructions attribute.Key = "gen_ai.system_instructions"
	keyInputMessages      attribute.Key = "gen_ai.input.messages"
	keyOutputMessages     attribute.Key = "gen_ai.output.messages"
	keyToolArguments      attribute.Key = "gen_ai.tool.call.arguments"
	keyToolResult         attribute.Key = "gen_ai.tool.call.result"
)

// The operations (gen_ai.operation.name), each also the first word of its
// span's name.
const (
	opChat        = "chat"
	opExecuteTool = "execute_tool"
	opInvokeAgent = "invoke_agent"
)

// The metrics of the conventions, and the bucket boundaries they advise.
const (
	metricTokenUsage        = "gen_ai.client.token.usage"        // {token}, by gen_ai.token.type
	metricOperationDuration = "gen_ai.client.operation.duration" // s
)

var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

// The values of error.type the host records besides a model call's
// model.Reason: a deadline, a cancellation, a tool call's error result,
// and anything else.
const (
	errorTypeCancelled = "cancelled"
	errorTypeTool      = "tool_error"
	errorTypeOther     = "_OTHER"
)

// TelemetryOptions say what the host's GenAI spans and metrics cannot learn
// from [Options.Model], and whether they carry content.
type TelemetryOptions struct {
	// AgentName is gen_ai.agent.name, and names a turn's span
	// ("invoke_agent <AgentName>"; "invoke_agent" without one). agent-sdk
	// serve sets the agent's slug.
	AgentName string
	// Provider and Model name Options.Model as it was configured
	// (model.Config's Provider and Name): gen_ai.provider.name ("gemini" is
	// recorded as the convention's gcp.gemini) and gen_ai.request.model,
	// which also names a model call's span ("chat <Model>"). Default:
	// Options.ModelConfig's.
	Provider, Model string
	// CaptureContent records what the conventions leave to an opt-in: on
	// each model call's span the system prompt, the messages sent and the
	// answer (gen_ai.system_instructions, gen_ai.input.messages,
	// gen_ai.output.messages), and on each tool call's span its input and
	// result (gen_ai.tool.call.arguments, gen_ai.tool.call.result), as JSON
	// text. Off by default: they may hold personal data and secrets.
	CaptureContent bool
}

// spanName is a GenAI span's name: the operation and what it acts on.
func spanName(op, target string) string {
	if target == "" {
		return op
	}
	return op + " " + target
}

// providerName is gen_ai.provider.name for a provider as agent.yaml names
// it.
func providerName(p string) string {
	if p == "gemini" {
		return "gcp.gemini"
	}
	return p
}

// modelAttrs are the attributes an operation on the configured model starts
// with.
func (t *telemetry) modelAttrs(op string) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, keyOperation.String(op))
	if p := providerName(t.genai.Provider); p != "" {
		attrs = append(attrs, keyProvider.String(p))
	}
	if t.genai.Model != "" {
		attrs = append(attrs, keyRequestModel.String(t.genai.Model))
	}
	return attrs
}

// errorType is error.type for a failed model call or turn: the model.Reason
// of an *model.Error (rate_limited, overloaded, context_length_exceeded,
// auth_failed, invalid_request, timeout, provider_error), timeout for a
// deadline, cancelled for a cancellation, else _OTHER.
func errorType(err error) string {
	if e, ok := errors.AsType[*model.Error](err); ok {
		return string(e.Reason)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return string(model.ReasonTimeout)
	case errors.Is(err, context.Canceled):
		return errorTypeCancelled
	}
	return errorTypeOther
}

// usageAttrs are a call's (or a turn's) usage as the conventions count it:
// gen_ai.usage.input_tokens is the whole prompt, cached input included.
func usageAttrs(u model.Usage) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		keyInputTokens.Int64(u.PromptTokens()), keyOutputTokens.Int64(u.OutputTokens),
		keyCacheReadTokens.Int64(u.CacheReadTokens), keyCacheCreationTokens.Int64(u.CacheWriteTokens),
	}
	if u.ReasoningTokens > 0 {
		attrs = append(attrs, keyReasoningTokens.Int64(u.ReasoningTokens))
	}
	return attrs
}

// model returns p traced — a chat span per call and the GenAI client
// metrics — or p itself when the host has no telemetry providers.
func (t *telemetry) model(p model.Provider) model.Provider {
	if p == nil || !t.enabled {
		return p
	}
	return tracedModel{model: p, t: t}
}

// tracedModel is Options.Model traced. The model loop (internal/turnloop)
// calls it as it would the provider, and the chat span is a child of the
// turn's.
type tracedModel struct {
	model model.Provider
	t     *telemetry
}

// Stream streams the provider's answer through a chat span, which ends with
// the stream: at its last chunk, its error, or when the caller stops.
func (m tracedModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		ctx, c := m.t.startChat(ctx, req)
		defer c.end(ctx)
		for chunk, err := range m.model.Stream(ctx, req) {
			c.observe(chunk, err)
			if !yield(chunk, err) {
				return
			}
		}
	}
}

// chatCall is one model call being traced.
type chatCall struct {
	t     *telemetry
	span  trace.Span
	turn  *turnTrace // nil outside a turn
	start time.Time
	first time.Duration // to the first chunk; 0 before it
	last  *model.End
	err   error
	out   *answer // nil unless content is captured
}

func (t *telemetry) startChat(ctx context.Context, req *model.Request) (context.Context, *chatCall) {
	c := &chatCall{t: t, start: time.Now()}
	attrs := append(t.modelAttrs(opChat), keyRequestStream.Bool(true))
	if req.MaxTokens > 0 {
		attrs = append(attrs, keyRequestMaxTokens.Int(req.MaxTokens))
	}
	if turn, ok := ctx.Value(turnSpanKey{}).(*turnTrace); ok {
		c.turn = turn
		attrs = append(attrs, keyConversationID.String(turn.sessionID))
	}
	ctx, c.span = t.tracer.Start(ctx, spanName(opChat, t.genai.Model), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if t.genai.CaptureContent && c.span.IsRecording() {
		c.span.SetAttributes(requestContent(req)...)
		c.out = &answer{}
	}
	return ctx, c
}

// observe notes what a chunk of the stream says.
func (c *chatCall) observe(chunk model.Chunk, err error) {
	if err != nil {
		c.err = err
		return
	}
	if c.first == 0 {
		c.first = time.Since(c.start)
	}
	if chunk.End != nil {
		c.last = chunk.End
	}
	if c.out != nil {
		c.out.add(chunk)
	}
}

// end ends the span and records the metrics.
func (c *chatCall) end(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	took := time.Since(c.start).Seconds()
	measured := c.t.modelAttrs(opChat)
	if c.first > 0 {
		c.span.SetAttributes(keyTimeToFirstChunk.Float64(c.first.Seconds()))
	}
	var usage *model.Usage
	if e := c.last; e != nil {
		if e.Model != "" {
			c.span.SetAttributes(keyResponseModel.String(e.Model))
			measured = append(measured, keyResponseModel.String(e.Model))
		}
		if e.StopReason != "" {
			c.span.SetAttributes(keyFinishReasons.StringSlice([]string{e.StopReason}))
		}
		if usage = e.Usage; usage != nil {
			c.span.SetAttributes(usageAttrs(*usage)...)
		}
	}
	if c.out != nil {
		c.span.SetAttributes(keyOutputMessages.String(c.out.json(c.last, c.err)))
	}
	if c.err != nil {
		et := keyErrorType.String(errorType(c.err))
		c.span.SetAttributes(et)
		c.span.SetStatus(codes.Error, c.err.Error())
		measured = append(measured, et)
	}
	c.span.End()
	c.t.chatTime.Record(ctx, took, metric.WithAttributes(measured...))
	if usage != nil {
		c.t.tokens.Record(ctx, usage.PromptTokens(), metric.WithAttributes(append(measured, keyTokenType.String("input"))...))
		c.t.tokens.Record(ctx, usage.OutputTokens, metric.WithAttributes(append(measured, keyTokenType.String("output"))...))
		if c.turn != nil {
			c.turn.add(*usage)
		}
	}
}

// The content of a model call, as the conventions' JSON schemas for
// gen_ai.input.messages, gen_ai.output.messages and
// gen_ai.system_instructions have it. An image of a tool result is left
// out (its bytes would be most of the span).
type (
	genaiMessage struct {
		Role         string      `json:"role"`
		Parts        []genaiPart `json:"parts"`
		FinishReason string      `json:"finish_reason,omitempty"` // output messages only, where it is required
	}
	genaiPart struct {
		Type      string          `json:"type"` // text, reasoning, tool_call, tool_call_response
		Content   string          `json:"content,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Response  any             `json:"response,omitempty"` // a string, which may be empty
	}
)

// requestContent is a request's system prompt and messages, as attributes.
func requestContent(req *model.Request) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	if req.System != "" {
		attrs = append(attrs, keySystemInstructions.String(jsonText([]genaiPart{{Type: "text", Content: req.System}})))
	}
	msgs := make([]genaiMessage, 0, len(req.Messages))
	for _, m := range req.Messages {
		if len(m.ToolResults) > 0 {
			results := genaiMessage{Role: "tool"}
			for _, r := range m.ToolResults {
				results.Parts = append(results.Parts, genaiPart{Type: "tool_call_response", ID: r.CallID, Response: r.Content})
			}
			msgs = append(msgs, results)
		}
		out := genaiMessage{Role: string(m.Role), Parts: messageParts(m.Reasoning, m.Text, m.ToolCalls)}
		if len(out.Parts) > 0 {
			msgs = append(msgs, out)
		}
	}
	return append(attrs, keyInputMessages.String(jsonText(msgs)))
}

// messageParts are the parts of a message: its reasoning, text and calls.
func messageParts(reasoning []model.Reasoning, text string, calls []model.ToolCall) []genaiPart {
	var parts []genaiPart
	for _, r := range reasoning {
		if r.Text != "" { // a redacted block has only the provider's sealed data
			parts = append(parts, genaiPart{Type: "reasoning", Content: r.Text})
		}
	}
	if text != "" {
		parts = append(parts, genaiPart{Type: "text", Content: text})
	}
	for _, c := range calls {
		parts = append(parts, genaiPart{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: arguments(c.Input)})
	}
	return parts
}

// arguments is a call's input as the model wrote it: its JSON, or a string
// of it when it is not valid JSON.
func arguments(in json.RawMessage) json.RawMessage {
	if len(in) == 0 || json.Valid(in) {
		return in
	}
	b, _ := json.Marshal(string(in))
	return b
}

// answer gathers a model's answer as it streams, for
// gen_ai.output.messages.
type answer struct {
	text      strings.Builder
	reasoning []model.Reasoning
	calls     []model.ToolCall
}

func (a *answer) add(chunk model.Chunk) {
	a.text.WriteString(chunk.Text)
	if chunk.Reasoning != nil {
		a.reasoning = append(a.reasoning, *chunk.Reasoning)
	}
	if chunk.ToolCall != nil {
		a.calls = append(a.calls, *chunk.ToolCall)
	}
}

// json is the answer as one output message; its finish reason is the
// provider's, else error for a failed call, else what the answer shows.
func (a *answer) json(end *model.End, err error) string {
	msg := genaiMessage{Role: "assistant", Parts: messageParts(a.reasoning, a.text.String(), a.calls)}
	if msg.Parts == nil {
		msg.Parts = []genaiPart{}
	}
	switch {
	case end != nil && end.StopReason != "":
		msg.FinishReason = end.StopReason
	case err != nil:
		msg.FinishReason = "error"
	case len(a.calls) > 0:
		msg.FinishReason = "tool_call"
	default:
		msg.FinishReason = "stop"
	}
	return jsonText([]genaiMessage{msg})
}

// jsonText encodes v, which always encodes.
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

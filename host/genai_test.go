package host_test

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/tool"
)

// scripted is a model.Provider answering each call with the next of its
// replies: chunks, ending as providers end them (an End with the usage),
// or an error.
type scripted struct {
	mu      sync.Mutex
	replies []reply
}

type reply struct {
	chunks []model.Chunk
	err    error
}

func (s *scripted) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		s.mu.Lock()
		if len(s.replies) == 0 {
			s.mu.Unlock()
			yield(model.Chunk{}, &model.Error{Reason: model.ReasonInvalidRequest, Message: "the script has ended"})
			return
		}
		r := s.replies[0]
		s.replies = s.replies[1:]
		s.mu.Unlock()
		for _, c := range r.chunks {
			if !yield(c, nil) {
				return
			}
		}
		if r.err != nil {
			yield(model.Chunk{}, r.err)
		}
	}
}

// genaiBundle is a host whose model is scripted, with in-memory exporters.
type genaiBundle struct {
	host    *host.Host
	spans   *tracetest.InMemoryExporter
	metrics *sdkmetric.ManualReader
}

// setupGenAI runs a session of two turns on a host with opts: the first
// calls review (its input a secret) and answers, the second fails with a
// rate limit. The host is closed, every span ended, when it returns.
func setupGenAI(t *testing.T, opts host.TelemetryOptions) (genaiBundle, string) {
	t.Helper()
	ctx := context.Background()
	b := genaiBundle{spans: tracetest.NewInMemoryExporter(), metrics: sdkmetric.NewManualReader()}
	review, err := tool.New("review", tool.Config{Description: "Reviews a pull request."}, func(ctx context.Context, call *tool.Call, in reviewInput) (any, error) {
		return "looks fine", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(review)
	if err != nil {
		t.Fatal(err)
	}
	p := &scripted{replies: []reply{
		{chunks: []model.Chunk{
			{ToolCall: &model.ToolCall{ID: "toolu_1", Name: "review", Input: json.RawMessage(`{"secret":"hunter2"}`)}},
			{End: &model.End{Model: "claude-test-20260101", StopReason: "tool_use",
				Usage: &model.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 100, CacheWriteTokens: 20, ReasoningTokens: 2}}},
		}},
		{chunks: []model.Chunk{
			{Text: "Looks "}, {Text: "fine."},
			{End: &model.End{Model: "claude-test-20260101", StopReason: "end_turn", Usage: &model.Usage{InputTokens: 30, OutputTokens: 7}}},
		}},
		{err: &model.Error{Reason: model.ReasonRateLimited, Status: 429, Message: "slow down"}},
	}}
	h, err := host.New(set, &host.Options{
		StateRoot: t.TempDir(), Model: p, System: "You review pull requests.", MaxTokens: 1000,
		ModelRetries:   -1, // the rate-limited call fails its turn
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(b.spans)),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(b.metrics)),
		Telemetry:      opts,
	})
	if err != nil {
		t.Fatal(err)
	}
	b.host = h
	sessions := &sessionBundle{host: h}
	sess, turn1, err := h.Sessions().Create(ctx, host.SessionOptions{Message: "review PR 42"})
	if err != nil {
		t.Fatal(err)
	}
	sessions.waitTurn(t, sess.ID, turn1)
	turn2, err := h.Sessions().Send(ctx, sess.ID, "again")
	if err != nil {
		t.Fatal(err)
	}
	sessions.waitTurn(t, sess.ID, turn2)
	h.Close()
	return b, sess.ID
}

// byName groups the ended spans by name, in the order they ended.
func (b genaiBundle) byName() map[string][]sdktrace.ReadOnlySpan {
	m := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range b.spans.GetSpans().Snapshots() {
		m[s.Name()] = append(m[s.Name()], s)
	}
	return m
}

func value(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// checkAttrs checks that span s has the attributes want (values as
// Value.String writes them), and none of absent.
func checkAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]string, absent ...string) {
	t.Helper()
	for k, w := range want {
		if v, ok := value(s, k); !ok || v.String() != w {
			t.Errorf("span %q: %s = %q (set: %v), want %q", s.Name(), k, v.String(), ok, w)
		}
	}
	for _, k := range absent {
		if v, ok := value(s, k); ok {
			t.Errorf("span %q has %s = %q", s.Name(), k, v.String())
		}
	}
}

var contentKeys = []string{"gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}

func TestGenAISpans(t *testing.T) {
	t.Parallel()
	b, sessionID := setupGenAI(t, host.TelemetryOptions{AgentName: "reviewer", Provider: "anthropic", Model: "claude-test"})
	spans := b.byName()
	turns, chats, tools := spans["invoke_agent reviewer"], spans["chat claude-test"], spans["execute_tool review"]
	if len(turns) != 2 || len(chats) != 3 || len(tools) != 1 || len(spans) != 3 {
		names := map[string]int{}
		for n, ss := range spans {
			names[n] = len(ss)
		}
		t.Fatalf("spans by name %v, want 2 invoke_agent reviewer, 3 chat claude-test, 1 execute_tool review", names)
	}
	// The first turn ended first: its spans are the first two chats and the
	// tool call; the turn that failed had one chat.
	first, failed := turns[0], turns[1]
	if v, _ := value(first, "turn.status"); v.AsString() != "completed" {
		first, failed = failed, first
	}
	for i, s := range []sdktrace.ReadOnlySpan{chats[0], tools[0], chats[1], chats[2]} {
		parent := first
		if i == 3 {
			parent = failed
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("span %q (%d) is not a child of its turn's span", s.Name(), i)
		}
	}
	for _, s := range append(slices.Clone(turns), append(chats, tools...)...) {
		if v, _ := value(s, "gen_ai.conversation.id"); v.AsString() != sessionID {
			t.Errorf("span %q: gen_ai.conversation.id %q, want the session's id %s", s.Name(), v.AsString(), sessionID)
		}
		for _, kv := range s.Attributes() {
			if text := kv.Value.String(); strings.Contains(text, "hunter2") || strings.Contains(text, "PR 42") || strings.Contains(text, "fine.") {
				t.Errorf("content on span %q without CaptureContent: %s = %s", s.Name(), kv.Key, text)
			}
		}
		checkAttrs(t, s, nil, contentKeys...)
	}

	checkAttrs(t, first, map[string]string{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "reviewer",
		"gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-test",
		"session.id": sessionID, "turn.status": "completed", "turn.steps": "2",
		// The turn's usage is its calls' sum; input counts the cached.
		"gen_ai.usage.input_tokens": "160", "gen_ai.usage.output_tokens": "12",
		"gen_ai.usage.cache_read.input_tokens": "100", "gen_ai.usage.cache_creation.input_tokens": "20",
	}, "error.type")
	checkAttrs(t, failed, map[string]string{"turn.status": "failed", "error.type": "rate_limited"}, "gen_ai.usage.input_tokens")
	if failed.Status().Code != codes.Error || first.Status().Code == codes.Error {
		t.Errorf("turn statuses %v and %v, want unset and error", first.Status(), failed.Status())
	}

	call := map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
		"gen_ai.request.model": "claude-test", "gen_ai.request.max_tokens": "1000", "gen_ai.request.stream": "true",
	}
	checkAttrs(t, chats[0], merge(call, map[string]string{
		"gen_ai.response.model": "claude-test-20260101", "gen_ai.response.finish_reasons": `["tool_use"]`,
		"gen_ai.usage.input_tokens": "130", "gen_ai.usage.output_tokens": "5",
		"gen_ai.usage.cache_read.input_tokens": "100", "gen_ai.usage.cache_creation.input_tokens": "20",
		"gen_ai.usage.reasoning.output_tokens": "2",
	}), "error.type")
	checkAttrs(t, chats[1], merge(call, map[string]string{
		"gen_ai.response.finish_reasons": `["end_turn"]`, "gen_ai.usage.input_tokens": "30", "gen_ai.usage.output_tokens": "7",
	}), "error.type", "gen_ai.usage.reasoning.output_tokens")
	checkAttrs(t, chats[2], merge(call, map[string]string{"error.type": "rate_limited"}),
		"gen_ai.usage.input_tokens", "gen_ai.response.model", "gen_ai.response.time_to_first_chunk")
	for i, s := range chats {
		if s.SpanKind() != trace.SpanKindClient {
			t.Errorf("chat %d: kind %v, want client", i, s.SpanKind())
		}
		if i < 2 {
			if v, ok := value(s, "gen_ai.response.time_to_first_chunk"); !ok || v.AsFloat64() <= 0 {
				t.Errorf("chat %d: gen_ai.response.time_to_first_chunk %v", i, v.String())
			}
		}
	}
	if chats[2].Status().Code != codes.Error || !strings.Contains(chats[2].Status().Description, "slow down") {
		t.Errorf("the failed call's status is %+v", chats[2].Status())
	}

	tc := tools[0]
	checkAttrs(t, tc, map[string]string{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "review", "gen_ai.tool.call.id": "toolu_1",
		"gen_ai.tool.description": "Reviews a pull request.",
		"tool.name":               "review", "tool.is_error": "false", "session.id": sessionID,
	}, "error.type")
	if v, _ := value(tc, "tool.call_id"); !strings.HasPrefix(v.AsString(), "tool_review_") {
		t.Errorf("tool.call_id %q, want the host's id of the call", v.AsString())
	}
	if tc.SpanKind() != trace.SpanKindInternal || first.SpanKind() != trace.SpanKindInternal {
		t.Errorf("kinds %v (execute_tool), %v (invoke_agent), want internal", tc.SpanKind(), first.SpanKind())
	}
	if got := tc.InstrumentationScope().SchemaURL; got != "https://opentelemetry.io/schemas/1.41.0" {
		t.Errorf("schema %q", got)
	}
}

func merge(a, b map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

func TestGenAIMetrics(t *testing.T) {
	t.Parallel()
	b, _ := setupGenAI(t, host.TelemetryOptions{Provider: "anthropic", Model: "claude-test"})
	var rm metricdata.ResourceMetrics
	if err := b.metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	found := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			found[m.Name] = m
		}
	}
	for _, name := range []string{"agent.tool.calls", "agent.tool.duration", "agent.turns"} {
		if _, ok := found[name]; !ok {
			t.Errorf("no metric %s", name)
		}
	}
	tokens, ok := found["gen_ai.client.token.usage"]
	if !ok {
		t.Fatal("no gen_ai.client.token.usage")
	}
	if tokens.Unit != "{token}" {
		t.Errorf("gen_ai.client.token.usage unit %q", tokens.Unit)
	}
	hist, ok := tokens.Data.(metricdata.Histogram[int64])
	if !ok {
		t.Fatalf("gen_ai.client.token.usage is a %T, want an int64 histogram", tokens.Data)
	}
	sums := map[string][2]int64{} // by token type: count, sum
	for _, dp := range hist.DataPoints {
		typ, _ := dp.Attributes.Value("gen_ai.token.type")
		for k, w := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
			"gen_ai.request.model": "claude-test", "gen_ai.response.model": "claude-test-20260101"} {
			if v, _ := dp.Attributes.Value(attribute.Key(k)); v.AsString() != w {
				t.Errorf("token usage %s: %s = %q, want %q", typ.AsString(), k, v.AsString(), w)
			}
		}
		if !slices.Equal(dp.Bounds, []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}) {
			t.Errorf("token usage bounds %v", dp.Bounds)
		}
		c := sums[typ.AsString()]
		sums[typ.AsString()] = [2]int64{c[0] + int64(dp.Count), c[1] + dp.Sum}
	}
	if want := map[string][2]int64{"input": {2, 160}, "output": {2, 12}}; !equalSums(sums, want) {
		t.Errorf("token usage (count, sum) by type %v, want %v", sums, want)
	}

	duration, ok := found["gen_ai.client.operation.duration"]
	if !ok {
		t.Fatal("no gen_ai.client.operation.duration")
	}
	if duration.Unit != "s" {
		t.Errorf("gen_ai.client.operation.duration unit %q", duration.Unit)
	}
	dh, ok := duration.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("gen_ai.client.operation.duration is a %T, want a float64 histogram", duration.Data)
	}
	byError := map[string]uint64{}
	for _, dp := range dh.DataPoints {
		if !slices.Equal(dp.Bounds, []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}) {
			t.Errorf("duration bounds %v", dp.Bounds)
		}
		if v, _ := dp.Attributes.Value("gen_ai.operation.name"); v.AsString() != "chat" {
			t.Errorf("duration of operation %q", v.AsString())
		}
		et, _ := dp.Attributes.Value("error.type")
		byError[et.AsString()] += dp.Count
	}
	if want := map[string]uint64{"": 2, "rate_limited": 1}; !equalCounts(byError, want) {
		t.Errorf("model calls timed by error.type %v, want %v", byError, want)
	}
}

func equalSums(a, b map[string][2]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func equalCounts(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestGenAIContent(t *testing.T) {
	t.Parallel()
	b, _ := setupGenAI(t, host.TelemetryOptions{Provider: "anthropic", Model: "claude-test", CaptureContent: true})
	spans := b.byName()
	chats, tools := spans["chat claude-test"], spans["execute_tool review"]
	if len(chats) != 3 || len(tools) != 1 {
		t.Fatalf("%d chat spans, %d execute_tool spans", len(chats), len(tools))
	}
	system := `[{"type":"text","content":"You review pull requests."}]`
	user := `{"role":"user","parts":[{"type":"text","content":"review PR 42"}]}`
	calls := `{"role":"assistant","parts":[{"type":"tool_call","id":"toolu_1","name":"review","arguments":{"secret":"hunter2"}}]`
	results := `{"role":"tool","parts":[{"type":"tool_call_response","id":"toolu_1","response":"looks fine"}]}`
	answer := `{"role":"assistant","parts":[{"type":"text","content":"Looks fine."}]`
	checkAttrs(t, chats[0], map[string]string{
		"gen_ai.system_instructions": system,
		"gen_ai.input.messages":      "[" + user + "]",
		"gen_ai.output.messages":     "[" + calls + `,"finish_reason":"tool_use"}]`,
	})
	checkAttrs(t, chats[1], map[string]string{
		"gen_ai.input.messages":  "[" + user + "," + calls + "}," + results + "]",
		"gen_ai.output.messages": "[" + answer + `,"finish_reason":"end_turn"}]`,
	})
	checkAttrs(t, chats[2], map[string]string{
		"gen_ai.input.messages": "[" + user + "," + calls + "}," + results + "," + answer + "}," +
			`{"role":"user","parts":[{"type":"text","content":"again"}]}]`,
		"gen_ai.output.messages": `[{"role":"assistant","parts":[],"finish_reason":"error"}]`,
	})
	checkAttrs(t, tools[0], map[string]string{
		"gen_ai.tool.call.arguments": `{"secret":"hunter2"}`,
		"gen_ai.tool.call.result":    `"looks fine"`,
	})
	for _, s := range spans["invoke_agent"] {
		checkAttrs(t, s, nil, contentKeys...)
	}
}

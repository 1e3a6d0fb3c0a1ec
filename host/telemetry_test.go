package host_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

type reviewInput struct {
	Secret string `json:"secret"`
}

func attr(kvs []attribute.KeyValue, key string) (string, bool) {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.Value.String(), true
		}
	}
	return "", false
}

func TestTelemetry(t *testing.T) {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	fake := fakemodel.New(
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "r1", Name: "review", Input: `{"secret":"hunter2"}`}}},
		fakemodel.Reply{Text: []string{"Reviewed."}},
		fakemodel.Reply{Text: []string{"Again."}},
	)
	defer fake.Close()
	state := t.TempDir()
	st, _ := sqlite.Open(ctx, filepath.Join(state, "agent.db"))
	defer st.Close()
	review, _ := tool.New("review", tool.Config{Description: "Review."}, func(ctx context.Context, call *tool.Call, in reviewInput) (any, error) {
		call.Host.Otel.Count(ctx, "reviews", 1, map[string]string{"repo": "acme/checkout"})
		call.Host.Otel.Record(ctx, "review.lines", 120, nil)
		return "ok", call.Host.Otel.TagSession(ctx, "pr", "42")
	})
	set, _ := tool.NewSet(review)
	p, _ := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 10})
	h, _ := host.New(set, &host.Options{StateRoot: state, Store: st, Model: p, TracerProvider: tp, MeterProvider: mp})
	defer h.Close()
	b := &sessionBundle{host: h, store: st, fake: fake, state: state}
	sess, turn1, _ := h.Sessions().Create(ctx, host.SessionOptions{Message: "review it"})
	evs := b.waitTurn(t, sess.ID, turn1)
	if tagged := find(evs, api.KindSessionTagged); len(tagged) != 1 || !strings.Contains(string(tagged[0].Data), `"key":"pr"`) {
		t.Errorf("session.tagged: %s", kinds(evs))
	}
	turn2, _ := h.Sessions().Send(ctx, sess.ID, "again")
	b.waitTurn(t, sess.ID, turn2)
	h.Close()

	// The turn and tool call spans were agent.turn and agent.tool_call;
	// they are the GenAI conventions' now (genai_test.go has the rest).
	var turns, calls, chats []sdktrace.ReadOnlySpan
	for _, s := range spans.GetSpans().Snapshots() {
		switch s.Name() {
		case "invoke_agent":
			turns = append(turns, s)
		case "execute_tool review":
			calls = append(calls, s)
		case "chat":
			chats = append(chats, s)
		}
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.String(), "hunter2") {
				t.Errorf("the input leaked into span %s: %v", s.Name(), kv)
			}
		}
	}
	if len(turns) != 2 || len(calls) != 1 || len(chats) != 3 {
		t.Fatalf("%d turn spans, %d tool call spans, %d model call spans", len(turns), len(calls), len(chats))
	}
	c := calls[0]
	if v, _ := attr(c.Attributes(), "tool.name"); v != "review" {
		t.Errorf("tool.name %q", v)
	}
	if v, _ := attr(c.Attributes(), "session.id"); v != sess.ID {
		t.Errorf("session.id %q", v)
	}
	if v, _ := attr(c.Attributes(), "tool.is_error"); v != "false" {
		t.Errorf("tool.is_error %q", v)
	}
	if v, ok := attr(c.Attributes(), "tool.call_id"); !ok || !strings.HasPrefix(v, "tool_review_") {
		t.Errorf("tool.call_id %q", v)
	}
	if _, ok := attr(c.Attributes(), "tool.duration_ms"); !ok {
		t.Error("no duration")
	}
	if c.Parent().SpanID() != turns[0].SpanContext().SpanID() && c.Parent().SpanID() != turns[1].SpanContext().SpanID() {
		t.Error("the tool call span is not inside its turn's span")
	}
	tagged := 0
	for _, tr := range turns {
		if v, _ := attr(tr.Attributes(), "session.tag.pr"); v == "42" {
			tagged++
		}
	}
	if tagged != 2 {
		t.Errorf("%d turn spans carry the session tag, want 2 (the tagging turn and the next)", tagged)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			found[m.Name] = true
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && (m.Name == "agent.tool.calls" || m.Name == "reviews") {
				if len(sum.DataPoints) != 1 || sum.DataPoints[0].Value != 1 {
					t.Errorf("%s: %+v", m.Name, sum.DataPoints)
				}
			}
		}
	}
	for _, name := range []string{"agent.tool.calls", "agent.tool.duration", "agent.turns", "reviews", "review.lines"} {
		if !found[name] {
			t.Errorf("no metric %s (have %v)", name, found)
		}
	}
}

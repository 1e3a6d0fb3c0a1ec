package host

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/tool"
)

// telemetry is the host's OpenTelemetry instruments. The spans and the
// model metrics follow the GenAI semantic conventions (genai.go).
type telemetry struct {
	enabled  bool // a provider was given; without one, tool calls skip telemetry entirely
	genai    TelemetryOptions
	tracer   trace.Tracer
	meter    metric.Meter
	calls    metric.Int64Counter
	duration metric.Float64Histogram
	turns    metric.Int64Counter
	tokens   metric.Int64Histogram   // gen_ai.client.token.usage
	chatTime metric.Float64Histogram // gen_ai.client.operation.duration

	mu         sync.Mutex
	counters   map[string]metric.Int64Counter
	histograms map[string]metric.Float64Histogram
}

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider, o TelemetryOptions) *telemetry {
	enabled := tp != nil || mp != nil
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	t := &telemetry{
		enabled:  enabled,
		genai:    o,
		tracer:   tp.Tracer(instrumentationName, trace.WithSchemaURL(genaiSchemaURL)),
		meter:    mp.Meter(instrumentationName, metric.WithSchemaURL(genaiSchemaURL)),
		counters: map[string]metric.Int64Counter{}, histograms: map[string]metric.Float64Histogram{},
	}
	t.calls, _ = t.meter.Int64Counter("agent.tool.calls", metric.WithDescription("Tool calls, by tool and outcome."))
	t.duration, _ = t.meter.Float64Histogram("agent.tool.duration", metric.WithUnit("ms"), metric.WithDescription("Tool call durations."))
	t.turns, _ = t.meter.Int64Counter("agent.turns", metric.WithDescription("Turns, by kind and status."))
	t.tokens, _ = t.meter.Int64Histogram(metricTokenUsage, metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."), metric.WithExplicitBucketBoundaries(tokenBuckets...))
	t.chatTime, _ = t.meter.Float64Histogram(metricOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	return t
}

// instrumentationName names the host's tracer and meter.
const instrumentationName = "github.com/agentsdk/agentsdk/host"

// Meter returns the meter of Options.MeterProvider (of a no-op provider
// without one), for the instruments of what serves the host: package serve
// records agent.tool.overrunning with it.
func (h *Host) Meter() metric.Meter { return h.telemetry.meter }

// startTurn starts a turn's span, invoke_agent, and carries it in the
// context to the model calls and the tools of the turn.
func (t *telemetry) startTurn(ctx context.Context, sess api.Session, turnID string) (context.Context, trace.Span) {
	attrs := append(t.modelAttrs(opInvokeAgent), keyConversationID.String(sess.ID),
		attribute.String("session.id", sess.ID), attribute.String("turn.id", turnID), attribute.String("session.channel", sess.Channel))
	if t.genai.AgentName != "" {
		attrs = append(attrs, keyAgentName.String(t.genai.AgentName))
	}
	ctx, span := t.tracer.Start(ctx, spanName(opInvokeAgent, t.genai.AgentName), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, turnSpanKey{}, &turnTrace{span: span, sessionID: sess.ID}), span
}

// startTool starts a tool call's span, execute_tool; end records the
// outcome on it and in the metrics. The input and the result are recorded
// only when content is captured.
func (t *telemetry) startTool(ctx context.Context, c callSpec) (context.Context, func(tool.Output)) {
	if !t.enabled {
		return ctx, noEnd // no providers: no cost on the hot path
	}
	start := time.Now()
	name := c.tool.Name()
	callID := c.modelCallID // the id the model gave it, which its messages name
	if callID == "" {
		callID = c.id
	}
	attrs := []attribute.KeyValue{keyOperation.String(opExecuteTool), keyToolName.String(name), keyToolCallID.String(callID),
		attribute.String("tool.name", name), attribute.String("tool.call_id", c.id)}
	if d := c.tool.Description(); d != "" {
		attrs = append(attrs, keyToolDescription.String(d))
	}
	if c.session != nil {
		attrs = append(attrs, keyConversationID.String(c.session.ID), attribute.String("session.id", c.session.ID))
	}
	ctx, span := t.tracer.Start(ctx, spanName(opExecuteTool, name), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	capture := t.genai.CaptureContent && span.IsRecording()
	if capture {
		span.SetAttributes(keyToolArguments.String(string(c.in.JSON())))
	}
	return ctx, func(out tool.Output) {
		ms := float64(time.Since(start).Microseconds()) / 1000
		span.SetAttributes(attribute.Bool("tool.is_error", out.IsError), attribute.Float64("tool.duration_ms", ms))
		switch {
		case out.IsError:
			span.SetAttributes(keyErrorType.String(errorTypeTool))
			span.SetStatus(codes.Error, "the tool call failed")
		case capture:
			span.SetAttributes(keyToolResult.String(string(out.Result)))
		}
		span.End()
		attrs := metric.WithAttributes(attribute.String("tool.name", name), attribute.Bool("tool.is_error", out.IsError))
		t.calls.Add(context.WithoutCancel(ctx), 1, attrs)
		t.duration.Record(context.WithoutCancel(ctx), ms, metric.WithAttributes(attribute.String("tool.name", name)))
	}
}

func noEnd(tool.Output) {}

func attrs(m map[string]string) metric.MeasurementOption {
	kv := make([]attribute.KeyValue, 0, len(m))
	for k, v := range m {
		kv = append(kv, attribute.String(k, v))
	}
	return metric.WithAttributes(kv...)
}

// otelService is call.Host.Otel for one call.
type otelService struct {
	h         *Host
	sessionID string
	turnID    string
}

// instrument returns the named instrument from cache, creating it once.
func instrument[T any](mu *sync.Mutex, cache map[string]T, name string, create func(string) (T, error)) (T, bool) {
	mu.Lock()
	defer mu.Unlock()
	if inst, ok := cache[name]; ok {
		return inst, true
	}
	inst, err := create(name)
	if err != nil {
		return inst, false
	}
	cache[name] = inst
	return inst, true
}

func (o otelService) Count(ctx context.Context, name string, n int64, a map[string]string) {
	t := o.h.telemetry
	if c, ok := instrument(&t.mu, t.counters, name, func(n string) (metric.Int64Counter, error) { return t.meter.Int64Counter(n) }); ok {
		c.Add(ctx, n, attrs(a))
	}
}

func (o otelService) Record(ctx context.Context, name string, v float64, a map[string]string) {
	t := o.h.telemetry
	if h, ok := instrument(&t.mu, t.histograms, name, func(n string) (metric.Float64Histogram, error) { return t.meter.Float64Histogram(n) }); ok {
		h.Record(ctx, v, attrs(a))
	}
}

func (o otelService) TagSession(ctx context.Context, key, value string) error {
	if o.sessionID == "" {
		return tool.ErrNoSession
	}
	tag := attribute.String("session.tag."+key, value)
	trace.SpanFromContext(ctx).SetAttributes(tag)
	if turn, ok := ctx.Value(turnSpanKey{}).(*turnTrace); ok {
		turn.span.SetAttributes(tag)
	}
	return o.h.emit(ctx, o.sessionID, o.turnID, api.SessionTagged{Key: key, Value: value})
}

// turnSpanKey carries a turn's *turnTrace to the model calls and tools of
// the turn.
type turnSpanKey struct{}

// turnTrace is a turn's span as what runs in the turn sees it: a tool
// tags it (TagSession), each model call adds its usage to the turn's.
type turnTrace struct {
	span      trace.Span
	sessionID string

	mu    sync.Mutex
	usage model.Usage
}

// add adds a model call's usage to the turn's, and records the sum on the
// turn's span.
func (tt *turnTrace) add(u model.Usage) {
	tt.mu.Lock()
	tt.usage = tt.usage.Add(u)
	sum := tt.usage
	tt.mu.Unlock()
	tt.span.SetAttributes(usageAttrs(sum)...)
}

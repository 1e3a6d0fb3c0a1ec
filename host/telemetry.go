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
	"github.com/agentsdk/agentsdk/tool"
)

// telemetry is the host's OpenTelemetry instruments.
type telemetry struct {
	enabled  bool // a provider was given; without one, tool calls skip telemetry entirely
	tracer   trace.Tracer
	meter    metric.Meter
	calls    metric.Int64Counter
	duration metric.Float64Histogram
	turns    metric.Int64Counter

	mu         sync.Mutex
	counters   map[string]metric.Int64Counter
	histograms map[string]metric.Float64Histogram
}

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) *telemetry {
	enabled := tp != nil || mp != nil
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	t := &telemetry{
		enabled:  enabled,
		tracer:   tp.Tracer("github.com/agentsdk/agentsdk/host"),
		meter:    mp.Meter("github.com/agentsdk/agentsdk/host"),
		counters: map[string]metric.Int64Counter{}, histograms: map[string]metric.Float64Histogram{},
	}
	t.calls, _ = t.meter.Int64Counter("agent.tool.calls", metric.WithDescription("Tool calls, by tool and outcome."))
	t.duration, _ = t.meter.Float64Histogram("agent.tool.duration", metric.WithUnit("ms"), metric.WithDescription("Tool call durations."))
	t.turns, _ = t.meter.Int64Counter("agent.turns", metric.WithDescription("Turns, by kind and status."))
	return t
}

// Meter returns the meter of Options.MeterProvider (of a no-op provider
// without one), for the instruments of what serves the host: package serve
// records agent.tool.overrunning with it.
func (h *Host) Meter() metric.Meter { return h.telemetry.meter }

// startTool starts a tool call's span; end records the outcome on it and in
// the metrics. The input is never recorded.
func (t *telemetry) startTool(ctx context.Context, name, callID, sessionID string) (context.Context, func(tool.Output)) {
	if !t.enabled {
		return ctx, noEnd // no providers: no cost on the hot path
	}
	start := time.Now()
	ctx, span := t.tracer.Start(ctx, "agent.tool_call", trace.WithAttributes(
		attribute.String("tool.name", name), attribute.String("tool.call_id", callID), attribute.String("session.id", sessionID)))
	return ctx, func(out tool.Output) {
		ms := float64(time.Since(start).Microseconds()) / 1000
		span.SetAttributes(attribute.Bool("tool.is_error", out.IsError), attribute.Float64("tool.duration_ms", ms))
		if out.IsError {
			span.SetStatus(codes.Error, "the tool call failed")
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
	if turn, ok := ctx.Value(turnSpanKey{}).(trace.Span); ok {
		turn.SetAttributes(tag)
	}
	return o.h.emit(ctx, o.sessionID, o.turnID, api.SessionTagged{Key: key, Value: value})
}

// turnSpanKey carries a turn's span to the tools it calls, for TagSession.
type turnSpanKey struct{}

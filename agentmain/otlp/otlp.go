// Package otlp exports an agent's spans and metrics over OTLP/HTTP when the
// standard OTEL_EXPORTER_OTLP_* variables are set. [Setup] is the Export
// of agentmain.Options; agent-sdk sets it in the generated main of an agent
// when agent.yaml says telemetry.otlp: true, or when an OTLP endpoint
// variable is set as the agent is built.
package otlp

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"

	"github.com/agentsdk/agentsdk/agentconfig"
	"github.com/agentsdk/agentsdk/host"
)

// Configured reports whether the standard OTLP variables ask for export.
func Configured() bool { return agentconfig.OTLPEndpointSet() }

// Setup exports the host's spans and metrics over OTLP/HTTP when the
// standard OTEL_EXPORTER_OTLP_* variables are set (endpoint, headers,
// protocol options as the OpenTelemetry SDK reads them). Otherwise it does
// nothing, and telemetry costs nothing. The returned function flushes and
// stops the exporters.
func Setup(ctx context.Context, service string, opts *host.Options) (func(context.Context) error, error) {
	if !Configured() {
		return func(context.Context) error { return nil }, nil
	}
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(service)))
	if err != nil {
		res = resource.Default()
	}
	spans, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	metrics, err := otlpmetrichttp.New(ctx)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)), sdkmetric.WithResource(res))
	opts.TracerProvider, opts.MeterProvider = tp, mp
	return func(ctx context.Context) error {
		return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
	}, nil
}

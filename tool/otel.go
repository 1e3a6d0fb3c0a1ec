package tool

import "context"

// Otel lets a tool add its own metrics and tag its session, beside the spans
// and metrics the host records for every turn and tool call. Without an
// exporter (OTEL_EXPORTER_OTLP_* unset) metrics cost nothing and go nowhere.
type Otel interface {
	// Count adds n to a counter metric.
	Count(ctx context.Context, name string, n int64, attrs map[string]string)
	// Record records a value of a histogram metric.
	Record(ctx context.Context, name string, value float64, attrs map[string]string)
	// TagSession tags the call's session: the tag is streamed
	// (session.tagged) and set on the spans of the session's turns from then
	// on. Outside a session it fails with ErrNoSession.
	TagSession(ctx context.Context, key, value string) error
}

type noOtel struct{}

func (noOtel) Count(context.Context, string, int64, map[string]string)    {}
func (noOtel) Record(context.Context, string, float64, map[string]string) {}
func (noOtel) TagSession(context.Context, string, string) error {
	return ErrNoSession
}

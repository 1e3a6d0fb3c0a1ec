package textlog

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"regexp"
	"testing"
	"time"
)

// both formats r with a Handler and with slog's text handler.
func both(t testing.TB, r slog.Record) (ours, slogs string) {
	t.Helper()
	var a, b bytes.Buffer
	if err := New(&a).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := slog.NewTextHandler(&b, nil).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return a.String(), b.String()
}

func record(t time.Time, level slog.Level, msg string, attrs ...slog.Attr) slog.Record {
	r := slog.NewRecord(t, level, msg, 0)
	r.AddAttrs(attrs...)
	return r
}

// Every record is written as slog's text handler writes it, whether this
// package formats it or hands it to slog.
func TestSameAsSlog(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 23, 41, 999_999_999, time.UTC)
	cases := []slog.Record{
		record(now, slog.LevelInfo, "request", slog.String("method", "POST"), slog.String("path", "/quickstart/v1/tools/inspect_pr"),
			slog.Int("status", 200), slog.Duration("duration", 93*time.Microsecond), slog.String("call_id", "tool_inspect_pr_abc")),
		record(time.Time{}, slog.LevelWarn, "no time"),
		record(now.Add(-998*time.Millisecond), slog.LevelInfo, "the same second, formatted once"),
		record(now.Add(time.Millisecond), slog.LevelInfo, "the next second"),
		record(time.Date(-1, 1, 1, 0, 0, 0, 5e6, time.UTC), slog.LevelInfo, "a year before 0"),
		record(time.Date(12345, 1, 1, 0, 0, 0, 5e6, time.Local), slog.LevelInfo, "a year after 9999"),
		record(now.In(time.FixedZone("x", -5*3600)), slog.LevelError+2, "a zone, a level between"),
		record(now, slog.LevelInfo, "", slog.String("", "empty key"), slog.String("k", "")),
		record(now, slog.LevelInfo, "quotes \"and\" = spaces", slog.String("a b", "c=d"), slog.String("back\\slash", `x\y`)),
		record(now, slog.LevelInfo, "controls", slog.String("nl", "a\nb"), slog.String("tab", "a\tb"), slog.String("del", "a\x7fb"), slog.String("nul", "a\x00b")),
		record(now, slog.LevelInfo, "unicode", slog.String("ok", "héllo→世界"), slog.String("nbsp", "a\u00a0b"), slog.String("bad", "a\xffb"), slog.String("ctl", "a\u200bb")),
		record(now, slog.LevelInfo, "numbers", slog.Int64("min", math.MinInt64), slog.Uint64("max", math.MaxUint64), slog.Float64("f", 1.5e-300),
			slog.Float64("nan", math.NaN()), slog.Float64("inf", math.Inf(-1)), slog.Bool("b", true), slog.Duration("d", -3*time.Hour)),
		record(now, slog.LevelInfo, "handed to slog", slog.Any("err", errors.New("boom")), slog.Group("g", slog.Int("n", 1)), slog.Time("at", now)),
		record(now, slog.LevelInfo, "many", slog.Int("1", 1), slog.Int("2", 2), slog.Int("3", 3), slog.Int("4", 4), slog.Int("5", 5), slog.Int("6", 6), slog.Int("7", 7)),
	}
	for _, r := range cases {
		if ours, slogs := both(t, r); ours != slogs {
			t.Errorf("ours:\n%q\nslog's:\n%q", ours, slogs)
		}
	}
}

// Loggers derived with With and WithGroup, and levels below Info, are
// slog's.
func TestDerivedAndLevels(t *testing.T) {
	var a, b bytes.Buffer
	ours, theirs := slog.New(New(&a)), slog.New(slog.NewTextHandler(&b, nil))
	for _, l := range []*slog.Logger{ours, theirs} {
		l.Debug("hidden")
		l.With("host", "h1").WithGroup("req").Info("derived", "n", 1)
		l.Info("plain", "n", 2)
	}
	// The two loggers read the clock apart, so the times may differ by a
	// tick; TestSameAsSlog compares times.
	if got, want := untimed(a.String()), untimed(b.String()); got != want {
		t.Errorf("ours:\n%s\nslog's:\n%s", got, want)
	}
}

var timeField = regexp.MustCompile(`(?m)^time=\S+ `)

func untimed(s string) string { return timeField.ReplaceAllString(s, "") }

func FuzzSameAsSlog(f *testing.F) {
	f.Add("request", "path", "/a b", int64(200), int64(1234567), 1.5, true)
	f.Add("", "", "", int64(0), int64(0), 0.0, false)
	f.Add("\x00\u2028", "k=v", "\"\\", int64(-1), int64(math.MaxInt64), math.Inf(1), true)
	f.Fuzz(func(t *testing.T, msg, key, s string, n, d int64, x float64, flag bool) {
		r := record(time.Unix(0, n).UTC(), slog.Level(n%16), msg, slog.String(key, s), slog.Int64(s, n),
			slog.Duration("d", time.Duration(d)), slog.Float64("x", x), slog.Bool(msg, flag))
		if ours, slogs := both(t, r); ours != slogs {
			t.Errorf("ours:\n%q\nslog's:\n%q", ours, slogs)
		}
	})
}

func BenchmarkRequestLine(b *testing.B) {
	r := record(time.Now(), slog.LevelInfo, "request", slog.String("method", "POST"), slog.String("path", "/quickstart/v1/tools/inspect_pr"),
		slog.Int("status", 200), slog.Duration("duration", 93*time.Microsecond), slog.String("call_id", "tool_inspect_pr_abcdefghijklmnop"))
	for _, c := range []struct {
		name string
		h    slog.Handler
	}{{"slog", slog.NewTextHandler(discard{}, nil)}, {"textlog", New(discard{})}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.h.Handle(context.Background(), r)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Request writes what slog's text handler writes for the request record.
func TestRequestAsSlog(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 23, 41, 999_999_999, time.UTC)
	local := time.Date(2026, 11, 30, 10, 23, 41, 5_000_000, time.FixedZone("X", 3600)).Add(time.Hour * 24 * 400)
	for _, c := range []struct {
		t                    time.Time
		method, path, callID string
		status               int
		d                    time.Duration
	}{
		{now, "POST", "/quickstart/v1/tools/inspect_pr", "tool_inspect_pr_abc", 200, 93 * time.Microsecond},
		{now, "GET", "/quickstart/v1/tools", "", 401, 0},
		{local, "POST", "/a b/=\"x\"", "id with space", 500, 90*time.Minute + 7*time.Millisecond},
		{now.Add(time.Nanosecond), "", "", "", 0, -time.Second},
		{time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC), "PUT", "/é\x01", "x", 204, 999 * time.Nanosecond},
	} {
		var got, want bytes.Buffer
		if err := New(&got).Request(c.t, c.method, c.path, c.status, c.d, c.callID); err != nil {
			t.Fatal(err)
		}
		attrs := []slog.Attr{slog.String("method", c.method), slog.String("path", c.path), slog.Int("status", c.status), slog.Duration("duration", c.d)}
		if c.callID != "" {
			attrs = append(attrs, slog.String("call_id", c.callID))
		}
		if err := slog.NewTextHandler(&want, nil).Handle(context.Background(), record(c.t, slog.LevelInfo, "request", attrs...)); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("Request:\n%q\nslog's:\n%q", got.String(), want.String())
		}
	}
}

func BenchmarkRequest(b *testing.B) {
	h, now := New(discard{}), time.Now()
	b.ReportAllocs()
	for b.Loop() {
		h.Request(now, "POST", "/quickstart/v1/tools/inspect_pr", 200, 93*time.Microsecond, "tool_inspect_pr_abcdefghijklmnop")
	}
}

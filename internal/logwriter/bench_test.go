package logwriter

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRequestLog: the serve host's request line (slog text) to a
// file, written directly and through a Writer, from parallel requests.
func BenchmarkRequestLog(b *testing.B) {
	for _, batched := range []bool{false, true} {
		name := "direct"
		if batched {
			name = "batched"
		}
		b.Run(name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "requests.log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var out interface {
				Write([]byte) (int, error)
			} = f
			var w *Writer
			if batched {
				w = New(f)
				out = w
			}
			logger := slog.New(slog.NewTextHandler(out, nil))
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					logger.LogAttrs(b.Context(), slog.LevelInfo, "request", slog.String("method", "POST"), slog.String("path", "/quickstart/v1/tools/inspect_pr"),
						slog.Int("status", 200), slog.Duration("duration", 93*time.Microsecond), slog.String("call_id", "tool_inspect_pr_abcdefghijklmnop"))
				}
			})
			if w != nil {
				w.Close()
			}
		})
	}
}

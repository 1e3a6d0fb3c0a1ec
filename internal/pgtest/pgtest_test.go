package pgtest

import "testing"

func TestWithSearchPath(t *testing.T) {
	for _, tt := range []struct{ name, url, want string }{
		{"URL with a query", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "postgres://postgres@127.0.0.1:5432/test?search_path=test_x&sslmode=disable"},
		{"URL without one", "postgresql://u:p@db/agents", "postgresql://u:p@db/agents?search_path=test_x"},
		{"URL with a search_path", "postgres://db/agents?search_path=other", "postgres://db/agents?search_path=test_x"},
		{"key=value", "host=127.0.0.1 dbname=test", "host=127.0.0.1 dbname=test search_path=test_x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := WithSearchPath(tt.url, "test_x"); err != nil || got != tt.want {
				t.Errorf("WithSearchPath(%q) = %q, %v; want %q", tt.url, got, err, tt.want)
			}
		})
	}
}

package agentsdk_test

import (
	"fmt"
	"testing"

	"github.com/agentsdk/agentsdk"
)

func TestPrompt(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"single line", "hello", "hello"},
		{"blank first and last", "\n  hello\n  world\n", "hello\nworld"},
		{"tabs", "\n\t\tInspect a pull request.\n\t\tPrefer this.\n\t", "Inspect a pull request.\nPrefer this."},
		{"nested indentation kept", "\n  a\n    b\n  c\n", "a\n  b\nc"},
		{"inner blank lines kept", "\n  a\n\n  b\n", "a\n\nb"},
		{"whitespace-only inner line", "\n  a\n   \n  b\n", "a\n\nb"},
		{"only first and last blank removed", "\n\n  a\n\n", "\na\n"},
		{"mixed tab and space", "\n\ta\n  b\n", "\ta\n  b"},
		{"trailing spaces", "\n  a  \n  b\t\n", "a\nb"},
		{"crlf", "\r\n  a\r\n  b\r\n", "a\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := agentsdk.Prompt(tt.in); got != tt.want {
				t.Errorf("Prompt(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func ExamplePrompt() {
	description := agentsdk.Prompt(`
		Inspect a pull request before approval.
		Prefer this over guessing from the title alone.
	`)
	fmt.Println(description)
	// Output:
	// Inspect a pull request before approval.
	// Prefer this over guessing from the title alone.
}

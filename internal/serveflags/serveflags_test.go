package serveflags

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"
)

// Args passes on exactly the flags given, in a form the agent binary
// parses back to the same values.
func TestArgsRoundTrip(t *testing.T) {
	cli := pflag.NewFlagSet("cli", pflag.ContinueOnError)
	var given Serve
	given.Register(cli, "agent")
	cli.Bool("follow", false, "a flag of the CLI's own")
	if err := cli.Parse([]string{"--addr", "127.0.0.1:0", "--approval-wait=0s", "--lease-ttl", "2s", "--follow", "--model", "openai/gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	args := Args(cli)
	want := []string{"--addr=127.0.0.1:0", "--model=openai/gpt-4o", "--lease-ttl=2s", "--approval-wait=0s"}
	if !slices.Equal(args, want) {
		t.Fatalf("Args = %q, want %q", args, want)
	}
	bin := pflag.NewFlagSet("bin", pflag.ContinueOnError)
	var got Serve
	got.Register(bin, "agent")
	if err := bin.Parse(args); err != nil {
		t.Fatal(err)
	}
	if got != given {
		t.Errorf("parsed back %+v, want %+v", got, given)
	}
}

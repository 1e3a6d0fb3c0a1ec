package serveflags

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

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

// Names is every flag Register defines, so that the CLI passes each one on
// (the limits included).
func TestNamesCoverRegister(t *testing.T) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	var s Serve
	s.Register(fs, "agent")
	var defined []string
	fs.VisitAll(func(f *pflag.Flag) { defined = append(defined, f.Name) })
	slices.Sort(defined)
	names := slices.Sorted(slices.Values(Names))
	if !slices.Equal(defined, names) {
		t.Errorf("Register defines %q, Names lists %q", defined, names)
	}
}

// The limit flags parse back through Args, 0 ("no limit") included.
func TestLimitArgsRoundTrip(t *testing.T) {
	cli := pflag.NewFlagSet("cli", pflag.ContinueOnError)
	var given Serve
	given.Register(cli, "agent")
	if err := cli.Parse([]string{"--body-timeout=5s", "--header-timeout", "0", "--idle-timeout=1m", "--max-conns", "64", "--max-streams=0"}); err != nil {
		t.Fatal(err)
	}
	bin := pflag.NewFlagSet("bin", pflag.ContinueOnError)
	var got Serve
	got.Register(bin, "agent")
	if err := bin.Parse(Args(cli)); err != nil {
		t.Fatal(err)
	}
	if got != given || got.MaxConns != 64 || got.MaxStreams != 0 || got.HeaderTimeout != 0 || got.BodyTimeout != 5*time.Second {
		t.Errorf("parsed back %+v, want %+v", got, given)
	}
	var defaults Serve
	defaults.Register(pflag.NewFlagSet("d", pflag.ContinueOnError), "agent")
	if defaults.BodyTimeout != BodyTimeoutDefault || defaults.HeaderTimeout != HeaderTimeoutDefault || defaults.IdleTimeout != IdleTimeoutDefault ||
		defaults.MaxConns != MaxConnsDefault || defaults.MaxStreams != MaxStreamsDefault {
		t.Errorf("defaults %+v", defaults)
	}
}

// --record and --replay are passed on absolute, resolved where the
// command was run: the agent binary runs in the agent's directory.
func TestDirArgsAbsolute(t *testing.T) {
	cli := pflag.NewFlagSet("cli", pflag.ContinueOnError)
	var given Serve
	given.Register(cli, "agent")
	if err := cli.Parse([]string{"--record", "testdata/cassettes", "--replay=/srv/cassettes"}); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("testdata/cassettes")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--record=" + abs, "--replay=/srv/cassettes"}
	if args := Args(cli); !slices.Equal(args, want) {
		t.Fatalf("Args = %q, want %q", args, want)
	}
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentsdk/agentsdk/agentconfig"
	"github.com/agentsdk/agentsdk/internal/build"
	"github.com/agentsdk/agentsdk/internal/command"
)

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "agent-sdk",
		Short: "Build, serve and call agents whose tools are typed Go functions or scripts",
		Long: `agent-sdk builds an agent directory (tools in agent/tools, one per file) into a
binary, serves its HTTP API, and calls its tools directly, with no model turn.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newInit(), newServe(), newCall(), newTools(), newBuild(), newVersion(), newSessions(), newSend(), newEvents(), newCompact(), newCancel(),
		newApprovals(), newDecide(true), newDecide(false), newSchedules(), newKeys(), newEval(), newUsage(), newOpenAPI(), newRunner(), newAudit())
	return root
}

// agentFlags are the flags of the commands that work on an agent directory.
type agentFlags struct {
	dir   string
	state string
	model string // --model provider/name, for the commands that run the agent
	store string // --store, for the commands that open the agent's store
}

func (f *agentFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dir, "dir", ".", "the agent directory: the one that holds agent/ (not agent/tools)")
	cmd.Flags().StringVar(&f.state, "state", "", "state directory (default DIR/.agent-sdk)")
}

// stateDir returns the state directory, absolute.
func (f *agentFlags) stateDir() (string, error) {
	s := f.state
	if s == "" {
		s = filepath.Join(f.dir, ".agent-sdk")
	}
	return filepath.Abs(s)
}

// buildAgent builds (or finds cached) the agent binary.
func (f *agentFlags) buildAgent(cmd *cobra.Command) (*build.Agent, *build.Result, string, error) {
	agent, err := build.Find(f.dir)
	if err != nil {
		return nil, nil, "", exitWith(command.ExitRefused, "%v", err)
	}
	state, err := f.stateDir()
	if err != nil {
		return nil, nil, "", err
	}
	provider, err := agentconfig.Provider(agent.Dir, f.model)
	if err != nil {
		return nil, nil, "", exitWith(command.ExitRefused, "%v", err)
	}
	extras, err := agentconfig.Extras(agent.Dir, f.store)
	if err != nil {
		return nil, nil, "", exitWith(command.ExitRefused, "%v", err)
	}
	res, err := agent.Build(cmd.Context(), build.Options{
		Provider:   provider,
		Extras:     extras,
		StateDir:   state,
		SDKVersion: sdkVersion(),
		Progress:   os.Stderr,
		Terminal:   isTerminal(os.Stderr),
	})
	if err != nil {
		return nil, nil, "", exitWith(command.ExitFailure, "%v", err)
	}
	return agent, res, state, nil
}

// execAgent replaces this process with the agent binary, so that signals,
// standard streams and the exit code are the agent's own.
func execAgent(agent *build.Agent, bin string, args ...string) error {
	if err := os.Chdir(agent.Dir); err != nil {
		return err
	}
	argv := append([]string{bin}, args...)
	if err := syscall.Exec(bin, argv, os.Environ()); err != nil {
		return exitWith(command.ExitFailure, "running the agent: %v", err)
	}
	return nil
}

// runAgent runs the agent binary as a child with the given standard input,
// and exits with its exit code.
func runAgent(agent *build.Agent, bin string, stdin io.Reader, args ...string) error {
	cmd := exec.Command(bin, args...)
	cmd.Dir = agent.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return &exitError{code: exit.ExitCode()}
	}
	if err != nil {
		return exitWith(command.ExitFailure, "running the agent: %v", err)
	}
	return nil
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// sdkVersion is this CLI's module version, with its VCS revision when known.
func sdkVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			v += "+" + s.Value
		}
	}
	return v
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of agent-sdk",
		Example: "  agent-sdk version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			info, _ := debug.ReadBuildInfo()
			goVersion := "unknown"
			if info != nil {
				goVersion = info.GoVersion
			}
			fmt.Fprintf(cmd.OutOrStdout(), "agent-sdk %s (%s)\n", sdkVersion(), goVersion)
			return nil
		},
	}
}

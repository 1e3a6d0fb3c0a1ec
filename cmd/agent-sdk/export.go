package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/command"
	"github.com/agentsdk/agentsdk/internal/evalexport"
)

// exportPage is how many events session export reads a request.
const exportPage = 10000

func newSessionExport() *cobra.Command {
	var (
		f   urlFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "export SESSION",
		Short: "Turn a session into an eval case that replays its model answers (YAML)",
		Long: `session export reads SESSION's stored events from the host at --url and writes an
eval file (YAML) with one case, named after the session, that replays it:

  message / conversation   the session's user messages, sent in turn
  replay                   the model's recorded answers (text and tool calls): running
                           the case answers its model calls with them, in order,
                           instead of calling the model
  checks                   a called check per tool call, with its input as args and
                           its result (when it is at most 4 KiB) as result, and
                           noError when no call failed and no turn failed

so a production conversation becomes a regression test: agent-sdk eval run FILE runs
the same calls against the agent's tools as they are now, and fails where a tool no
longer answers what it did. Edit the checks where a result varies from run to run
(ids, times): a called check's result is a subset of the call's. Add stubs: for the
tools whose calls must not run again (a gated tool's call parks in an eval unless
stubbed). A case's model call past the recorded answers fails its turn.

The file goes to standard output, or to -o FILE. A session running a turn, or with no
user message, is refused.

Exit status: 0 written; 2 refused (no session has that id: 404 session_not_found;
nothing to export; a bad flag or token); 3 the host could not be reached or failed,
or the file could not be written.`,
		Example: `  agent-sdk session export sess_abc --url http://127.0.0.1:3000/myagent -o evals/sess_abc.yaml
  agent-sdk eval run evals/sess_abc.yaml --url http://127.0.0.1:3000/myagent`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			id := args[0]
			if _, err := c.Session(cmd.Context(), id); err != nil {
				return remoteError(err)
			}
			var evs []api.Event
			for after := int64(0); ; {
				page, err := c.StoredEvents(cmd.Context(), id, after, exportPage)
				if err != nil {
					return remoteError(err)
				}
				evs = append(evs, page...)
				if len(page) < exportPage {
					break
				}
				after = page[len(page)-1].Seq
			}
			ec, err := evalexport.Case(id, evs)
			if err != nil {
				return exitWith(command.ExitRefused, "exporting session %s: %v", id, err)
			}
			data, err := exportYAML(ec)
			if err != nil {
				return exitWith(command.ExitFailure, "exporting session %s: %v", id, err)
			}
			if out == "" || out == "-" {
				_, err = os.Stdout.Write(data)
				return err
			}
			if err := os.WriteFile(out, data, 0o644); err != nil {
				return exitWith(command.ExitFailure, "writing the eval file: %v", err)
			}
			fmt.Fprintf(os.Stderr, "wrote %s (%s, %s, %s); agent-sdk eval run %s --url %s runs it\n",
				out, nOf(max(1, len(ec.Conversation)), "message"), nOf(len(ec.Replay), "recorded answer"), nOf(len(ec.Checks), "check"), out, f.url)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the eval file to FILE (default: standard output)")
	return cmd
}

// nOf is "1 thing" or "n things".
func nOf(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// The eval file as session export writes it: the fields of api's types,
// the empty ones left out.
type (
	exportFile struct {
		Name  string       `yaml:"name"`
		Cases []exportCase `yaml:"cases"`
	}
	exportCase struct {
		Name         string         `yaml:"name"`
		Message      string         `yaml:"message,omitempty"`
		Conversation []string       `yaml:"conversation,omitempty"`
		Replay       []exportAnswer `yaml:"replay"`
		Checks       []exportCheck  `yaml:"checks,omitempty"`
	}
	exportCheck struct {
		Called  string         `yaml:"called,omitempty"`
		Args    map[string]any `yaml:"args,omitempty"`
		Result  any            `yaml:"result,omitempty"`
		NoError bool           `yaml:"noError,omitempty"`
	}
	exportAnswer struct {
		Text  string         `yaml:"text,omitempty"`
		Calls []exportCallOf `yaml:"calls,omitempty"`
	}
	exportCallOf struct {
		Tool  string         `yaml:"tool"`
		Input map[string]any `yaml:"input,omitempty"`
	}
)

// exportYAML writes an exported case as an eval file that eval run reads.
func exportYAML(c api.EvalCase) ([]byte, error) {
	ec := exportCase{Name: c.Name, Message: c.Message, Conversation: c.Conversation}
	for _, a := range c.Replay {
		ea := exportAnswer{Text: a.Text}
		for _, call := range a.Calls {
			ea.Calls = append(ea.Calls, exportCallOf{Tool: call.Tool, Input: call.Input})
		}
		ec.Replay = append(ec.Replay, ea)
	}
	for _, ch := range c.Checks {
		ec.Checks = append(ec.Checks, exportCheck{Called: ch.Called, Args: ch.Args, Result: ch.Result, NoError: ch.NoError})
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# An eval of session %s, written by agent-sdk session export: its model answers\n# are replayed; the checks are what its tool calls did. Run: agent-sdk eval run FILE\n", c.Name)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(exportFile{Name: c.Name, Cases: []exportCase{ec}}); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

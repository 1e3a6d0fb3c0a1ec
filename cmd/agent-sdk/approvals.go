package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/command"
)

func newApprovals() *cobra.Command {
	var (
		f      urlFlags
		status string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List calls waiting for approval (or decided ones, with --status)",
		Example: `  agent-sdk approvals --url http://127.0.0.1:3000/quickstart
  agent-sdk approvals --url http://127.0.0.1:3000/quickstart --status denied --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			list, _, err := c.Approvals(cmd.Context(), api.ApprovalStatus(status), 1000, "")
			if err != nil {
				return remoteError(err)
			}
			if asJSON {
				return printListing(os.Stdout, map[string][]api.Approval{"approvals": list})
			}
			if len(list) == 0 {
				fmt.Printf("no %s approvals\n", status)
			}
			for _, a := range list {
				where := "direct call"
				if a.SessionID != "" {
					where = "session " + a.SessionID
				}
				fmt.Printf("%s  %s  %s  %s  requested by %s, expires %s\n    input: %s\n", a.CallID, a.Tool, a.Status, where, a.RequestedBy,
					a.ExpiresAt.Format(time.RFC3339Nano), plainJSON(a.Input))
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&status, "status", "pending", "pending, approved, denied, expired, cancelled, or \"\" for all")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for machines")
	return cmd
}

func newDecide(approve bool) *cobra.Command {
	var (
		f      urlFlags
		reason string
		by     string
		input  string
	)
	use, short, example := "approve CALL", "Approve a call waiting for approval: it runs with the input it parked with",
		"  agent-sdk approve tool_promote_build_abc --url http://127.0.0.1:3000/quickstart"
	if !approve {
		use, short, example = "deny CALL", "Deny a call waiting for approval: the model (or caller) reads who denied it and why",
			`  agent-sdk deny tool_promote_build_abc --reason "not on a Friday" --url http://127.0.0.1:3000/quickstart`
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `.

A call is decided once: a second decision is refused (exit 2) with the first one;
an expired call cannot be decided (exit 2).`,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !approve && reason == "" {
				return exitWith(command.ExitRefused, "deny needs --reason: the model reads it")
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			req := api.ResolveRequest{Approved: &approve, Reason: reason, OnBehalfOf: by}
			if tok := cmp.Or(f.token, os.Getenv("AGENT_SDK_TOKEN")); strings.HasPrefix(tok, api.KeyPrefix) && !cmd.Flags().Changed("by") {
				req.OnBehalfOf = "" // a key decides as itself: only an admin may say whom it acts for
			}
			if input != "" {
				if !approve {
					return exitWith(command.ExitRefused, "--input edits a call being approved; deny takes none")
				}
				raw, err := readInputFlag(input)
				if err != nil {
					return exitWith(command.ExitRefused, "--input: %v", err)
				}
				req.Input = raw
			}
			a, err := c.Resolve(cmd.Context(), args[0], req, nil)
			if err != nil {
				return remoteError(err)
			}
			if a.Status == api.ApprovalPending && a.Quorum > 1 {
				// One approval of several (the tool's approver policy).
				fmt.Printf("%s pending: %d of %d approvals; it runs on the last\n", args[0], len(a.Approvals), a.Quorum)
				return nil
			}
			fmt.Printf("%s %s by %s\n", args[0], a.Status, a.DecidedBy)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why (required to deny)")
	cmd.Flags().StringVar(&by, "by", os.Getenv("USER"), "whom an admin (the host token) decides for, sent as onBehalfOf and recorded with the decision; not sent with an API key unless given")
	if approve {
		cmd.Flags().StringVar(&input, "input", "", "approve an edited input instead (JSON, or @FILE): checked against the tool's schema; what runs")
	}
	return cmd
}

// readInputFlag reads --input: JSON text, or @FILE.
func readInputFlag(v string) (json.RawMessage, error) {
	b := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if b, err = os.ReadFile(name); err != nil {
			return nil, err
		}
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("not JSON")
	}
	return json.RawMessage(b), nil
}

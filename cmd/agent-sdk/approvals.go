package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

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
			r, err := f.client()
			if err != nil {
				return err
			}
			var ans struct {
				Approvals []map[string]any `json:"approvals"`
			}
			if err := getJSON(cmd.Context(), r, http.MethodGet, "/approvals?limit=1000&status="+status, nil, &ans); err != nil {
				return err
			}
			if asJSON {
				return command.PrintJSON(os.Stdout, ans)
			}
			if len(ans.Approvals) == 0 {
				fmt.Printf("no %s approvals\n", status)
			}
			for _, a := range ans.Approvals {
				where := "direct call"
				if s, _ := a["sessionId"].(string); s != "" {
					where = "session " + s
				}
				input, _ := json.Marshal(a["input"])
				fmt.Printf("%s  %s  %s  %s  requested by %v, expires %v\n    input: %s\n", a["callId"], a["tool"], a["status"], where, a["requestedBy"], a["expiresAt"], input)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&status, "status", "pending", "pending, approved, denied, expired, or \"\" for all")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for machines")
	return cmd
}

func newDecide(approve bool) *cobra.Command {
	var (
		f      urlFlags
		reason string
		by     string
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
			r, err := f.client()
			if err != nil {
				return err
			}
			var ans struct {
				Approval map[string]any `json:"approval"`
			}
			body := map[string]any{"approved": approve, "reason": reason, "by": by}
			if err := getJSON(cmd.Context(), r, http.MethodPost, "/approvals/"+args[0], body, &ans); err != nil {
				return err
			}
			fmt.Printf("%s %s by %v\n", args[0], ans.Approval["status"], ans.Approval["decidedBy"])
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why (required to deny)")
	cmd.Flags().StringVar(&by, "by", os.Getenv("USER"), "who decides, recorded with the decision")
	return cmd
}

// waitCall polls a running host until a parked call is decided and run.
func waitCall(ctx context.Context, r *remote, callID string) (int, []byte, error) {
	t := time.NewTicker(300 * time.Millisecond)
	defer t.Stop()
	for {
		status, body, err := r.do(ctx, http.MethodGet, "/calls/"+callID, nil)
		if err != nil {
			return 0, nil, err
		}
		var s struct {
			Status string `json:"status"`
		}
		json.Unmarshal(body, &s)
		if status != http.StatusOK || (s.Status != "approval_pending" && s.Status != "running") {
			return status, body, nil
		}
		select {
		case <-ctx.Done():
			return 0, nil, exitWith(command.ExitFailure, "stopped waiting for call %s", callID)
		case <-t.C:
		}
	}
}

package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newCancel() *cobra.Command {
	var f urlFlags
	cmd := &cobra.Command{
		Use:   "cancel SESSION",
		Short: "Cancel a session's running turn, a turn waiting for approvals too",
		Long: `cancel asks the host at --url to cancel SESSION's running turn, which ends with
turn.failed (cancelled). A turn parked for approvals is cancelled too, whichever
host parked it: its pending calls are closed as cancelled (a decision after that
is refused with 409 already_resolved), a call approved but not yet run never
runs, and each call it left unanswered gets a result; the session then takes a
new message. A session with no running turn answers 409 no_running_turn (exit 2).`,
		Example: "  agent-sdk cancel sess_abc --url http://127.0.0.1:3000/quickstart",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			if err := c.Cancel(cmd.Context(), args[0]); err != nil {
				return remoteError(err)
			}
			fmt.Printf("cancelled the running turn of session %s\n", args[0])
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

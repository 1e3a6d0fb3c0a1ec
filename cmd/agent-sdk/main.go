// Command agent-sdk builds, serves and calls agents whose tools are typed Go
// functions or scripts.
//
//	agent-sdk init myagent --sdk ../agentsdk   # scaffold an agent
//	agent-sdk serve --dir myagent               # serve its HTTP API
//	agent-sdk call hello --dir myagent --input '{"name":"Ada"}'
//	agent-sdk call hello --url http://127.0.0.1:3000/myagent --input '{"name":"Ada"}'
//	agent-sdk tools --dir myagent
//
// Run agent-sdk help COMMAND for each command's flags and examples.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentsdk/agentsdk/internal/command"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRoot().ExecuteContext(ctx)
	stop()
	if err == nil {
		return
	}
	var exit *exitError
	if errors.As(err, &exit) {
		if exit.msg != "" {
			fmt.Fprintln(os.Stderr, "agent-sdk:", exit.msg)
		}
		os.Exit(exit.code)
	}
	fmt.Fprintln(os.Stderr, "agent-sdk:", err)
	os.Exit(command.ExitRefused)
}

// exitError ends the program with a given code, after printing msg if set.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func exitWith(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

package tool

import "context"

// Reporter receives a running call's progress and live output: the host
// gives one to each call ([CallInfo.Reporter]), which records them as
// action.progress and action.output events on the session's stream and
// passes them to a caller that asked to follow the call. Its methods must
// not block: a host coalesces what comes faster than it records.
type Reporter interface {
	Progress(done, total float64, message string)
	Output(text string)
}

// Progress reports how far the call has got: done out of total, in the
// tool's own units (total 0 when unknown), with an optional message. It
// returns at once; updates that come faster than the host records them are
// coalesced to the latest. Progress is for people following the call (the
// session's stream, a streaming direct call, an MCP client that asked for
// progress); the model gets only the final result. Outside a host, and
// after the handler returns, it does nothing.
func (c *Call) Progress(ctx context.Context, done, total float64, message string) {
	if c.reporter != nil {
		c.reporter.Progress(done, total, message)
	}
}

// Output reports live output of the call, such as a line of a build's
// log. Like Progress it returns at once, is batched by the host and is not
// fed to the model; a call's recorded output is capped (the host says
// where it was cut).
func (c *Call) Output(ctx context.Context, text string) {
	if c.reporter != nil && text != "" {
		c.reporter.Output(text)
	}
}

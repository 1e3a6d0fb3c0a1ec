package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// PollDefault is how often [Client.WaitCall] asks by default.
const PollDefault = 300 * time.Millisecond

// Tools lists the agent's tools, with their input schemas.
func (c *Client) Tools(ctx context.Context) ([]tool.Info, error) {
	var ans api.ToolList
	if err := c.call(ctx, "listTools", nil, nil, nil, &ans); err != nil {
		return nil, err
	}
	return ans.Tools, nil
}

// CallOptions modify a [Client.CallTool]. Nil means defaults.
type CallOptions struct {
	// SessionID runs the call in this session, as a turn of its own.
	SessionID string
	// Progress, if set, follows the call as it runs: the host streams its
	// progress and live output (api.ActionProgress, api.ActionOutput),
	// and Progress gets each before CallTool returns.
	Progress func(api.Payload)
	// NoWait asks the host to answer a call parked for approval at once
	// (Prefer: respond-async), with a [*PendingError], rather than after
	// waiting for a decision (its --approval-wait); [Client.WaitCall]
	// then waits for the outcome.
	NoWait bool
}

// CallTool calls a server tool directly, with no model turn. input is a
// json.RawMessage or []byte holding JSON, or a value that encodes to it;
// nil or empty means {}. The outcome's IsError says whether the tool failed; a
// refused call (unknown tool, invalid input, …) is a [*StatusError]. A
// call of a tool that needs approval for this input returns a
// [*PendingError] once the host stops waiting for a decision (at once
// with CallOptions.NoWait).
func (c *Client) CallTool(ctx context.Context, name string, input any, opts *CallOptions) (*api.Outcome, error) {
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	raw, err := inputJSON(input)
	if err != nil {
		return nil, fmt.Errorf("calling %s: %w", name, err)
	}
	var header http.Header
	hc := c.hc
	if o.Progress != nil {
		header, hc = http.Header{"Accept": {"text/event-stream"}}, c.stream
	}
	if o.NoWait {
		if header == nil {
			header = http.Header{}
		}
		header.Set("Prefer", "respond-async")
	}
	resp, err := c.send(ctx, hc, "callTool", []string{name}, nil, api.CallRequest{Input: raw, SessionID: o.SessionID}, header)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return readCallStream(resp, o.Progress)
	}
	if resp.StatusCode == http.StatusAccepted {
		var p PendingError
		if err := decodeAnswer(resp, &p.CallPending); err != nil {
			return nil, err
		}
		return nil, &p
	}
	var ans api.CallResponse
	if err := decodeAnswer(resp, &ans); err != nil {
		return nil, err
	}
	return &ans.Outcome, nil
}

// readCallStream reads a streamed call: its progress events, then its
// outcome (an outcome, a parked call, or an error).
func readCallStream(resp *http.Response, progress func(api.Payload)) (*api.Outcome, error) {
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, maxAnswerBytes)
	var kind, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && kind != "":
			if kind == "outcome" {
				return callStreamOutcome(resp, []byte(data))
			}
			if p := api.PayloadOf(api.Kind(kind)); p != nil && json.Unmarshal([]byte(data), p) == nil {
				progress(reflect.ValueOf(p).Elem().Interface().(api.Payload))
			}
			kind, data = "", ""
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the call's stream: %w", err)
	}
	return nil, errors.New("reading the call's stream: it ended without the outcome")
}

// callStreamOutcome decodes a streamed call's last event.
func callStreamOutcome(resp *http.Response, data []byte) (*api.Outcome, error) {
	var probe struct {
		OK     bool          `json:"ok"`
		Status api.CallState `json:"status"`
		Error  *api.Error    `json:"error"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("decoding the call's outcome: %w", err)
	}
	switch {
	case probe.Error != nil:
		return nil, &StatusError{Status: probe.Error.Status(), Err: probe.Error, Body: data}
	case probe.Status == api.CallAwaitingApproval:
		var p PendingError
		if err := json.Unmarshal(data, &p.CallPending); err != nil {
			return nil, fmt.Errorf("decoding the call's outcome: %w", err)
		}
		return nil, &p
	}
	var ans api.CallResponse
	if err := json.Unmarshal(data, &ans); err != nil {
		return nil, fmt.Errorf("decoding the call's outcome: %w", err)
	}
	return &ans.Outcome, nil
}

// inputJSON returns a call's input as JSON.
func inputJSON(input any) (json.RawMessage, error) {
	var raw []byte
	switch in := input.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		raw = in
	case []byte:
		raw = in
	default:
		b, err := encodeJSON(in)
		if err != nil {
			return nil, fmt.Errorf("encoding the input: %w", err)
		}
		return b, nil
	}
	if len(raw) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(raw) {
		return nil, errors.New("the input is not valid JSON")
	}
	return raw, nil
}

// CallStatus returns where a gated direct call stands: its outcome once
// decided and run (done), or that it is still waiting for a decision or
// running (waiting). Exactly one of the two is non-nil when err is nil.
func (c *Client) CallStatus(ctx context.Context, callID string) (done *api.CallDone, waiting *api.CallStatus, err error) {
	resp, err := c.send(ctx, c.hc, "callStatus", []string{callID}, nil, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := readAnswer(resp)
	if err != nil {
		return nil, nil, err
	}
	var st api.CallStatus
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, nil, fmt.Errorf("decoding the status of call %s: %w", callID, err)
	}
	if st.Status == api.CallAwaitingApproval || st.Status == api.CallRunning {
		return nil, &st, nil
	}
	done = new(api.CallDone)
	if err := json.Unmarshal(data, done); err != nil {
		return nil, nil, fmt.Errorf("decoding the outcome of call %s: %w", callID, err)
	}
	return done, nil, nil
}

// WaitCall asks every poll (PollDefault if not positive) until a gated
// direct call has its outcome, and returns it; or returns ctx's error
// when ctx ends first.
func (c *Client) WaitCall(ctx context.Context, callID string, poll time.Duration) (*api.CallDone, error) {
	if poll <= 0 {
		poll = PollDefault
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		done, _, err := c.CallStatus(ctx, callID)
		if err != nil || done != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return done, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// OpenAPI returns the host's OpenAPI document.
func (c *Client) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	var doc json.RawMessage
	if err := c.call(ctx, "openapi", nil, nil, nil, &doc); err != nil {
		return nil, err
	}
	return doc, nil
}

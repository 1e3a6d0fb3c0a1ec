package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentsdk/agentsdk/internal/command"
)

// urlFlags are the flags of the commands that talk to a running host.
type urlFlags struct {
	agentFlags
	url   string
	token string
}

func (f *urlFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "url", "", "the running host: http://127.0.0.1:3000/<slug> (required)")
	cmd.Flags().StringVar(&f.token, "token", "", "bearer token (default $AGENT_SDK_TOKEN, else <state>/token)")
	cmd.Flags().StringVar(&f.dir, "dir", ".", "the agent directory, whose state holds the token")
	cmd.Flags().StringVar(&f.state, "state", "", "state directory (default DIR/.agent-sdk)")
	cmd.MarkFlagRequired("url")
}

func (f *urlFlags) client() (*remote, error) { return f.remote(f.url, f.token) }

// getJSON calls the host and decodes a successful answer into v.
func getJSON(ctx context.Context, r *remote, method, path string, body, v any) error {
	status, data, err := r.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	if status >= 300 {
		return apiFailure(status, data)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return exitWith(command.ExitFailure, "the host's answer is not JSON: %v", err)
	}
	return nil
}

func newSessions() *cobra.Command {
	var (
		f      urlFlags
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:     "sessions",
		Short:   "List a running host's sessions, newest first",
		Example: "  agent-sdk sessions --url http://127.0.0.1:3000/quickstart",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.client()
			if err != nil {
				return err
			}
			var all []map[string]any
			cursor := ""
			for {
				var page struct {
					Sessions []map[string]any `json:"sessions"`
					Next     string           `json:"next"`
				}
				path := "/sessions?limit=" + strconv.Itoa(min(limit, 1000))
				if cursor != "" {
					path += "&cursor=" + cursor
				}
				if err := getJSON(cmd.Context(), r, http.MethodGet, path, nil, &page); err != nil {
					return err
				}
				all = append(all, page.Sessions...)
				if page.Next == "" || len(all) >= limit {
					break
				}
				cursor = page.Next
			}
			if len(all) > limit {
				all = all[:limit]
			}
			if asJSON {
				return command.PrintJSON(os.Stdout, map[string]any{"sessions": all})
			}
			if len(all) == 0 {
				fmt.Println("no sessions")
			}
			for _, s := range all {
				running := ""
				if t, _ := s["runningTurn"].(string); t != "" {
					running = "  running " + t
				}
				fmt.Printf("%s  %s  %v events  created %s%s\n", s["id"], s["channel"], s["lastSeq"], s["createdAt"], running)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&limit, "limit", 50, "how many sessions at most")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for machines")
	return cmd
}

func newSend() *cobra.Command {
	var (
		f       urlFlags
		channel string
		follow  bool
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "send SESSION MESSAGE",
		Short: "Send a message to a session (or \"new\" to open one); the model turn starts",
		Long: `send starts a model turn with MESSAGE in SESSION, or in a new session when SESSION
is "new", and prints the session and turn ids. With --follow it then prints the
turn's events until it ends, exiting 1 if it failed. A session whose turn is
still running answers 409 session_busy (exit 2).`,
		Example: `  agent-sdk send new "Inspect https://github.com/acme/checkout/pull/42" --url http://127.0.0.1:3000/quickstart --follow
  agent-sdk send sess_abc "And the tests?" --url http://127.0.0.1:3000/quickstart`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.client()
			if err != nil {
				return err
			}
			var ans struct {
				SessionID string `json:"sessionId"`
				TurnID    string `json:"turnId"`
			}
			if args[0] == "new" {
				err = getJSON(cmd.Context(), r, http.MethodPost, "/session", map[string]string{"channel": channel, "message": args[1]}, &ans)
			} else {
				err = getJSON(cmd.Context(), r, http.MethodPost, "/session/"+args[0]+"/messages", map[string]string{"message": args[1]}, &ans)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "session %s, turn %s\n", ans.SessionID, ans.TurnID)
			if !follow {
				fmt.Println(ans.SessionID)
				return nil
			}
			return tail(cmd.Context(), r, ans.SessionID, 0, ans.TurnID, asJSON)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&channel, "channel", "http", "the channel of a new session")
	cmd.Flags().BoolVar(&follow, "follow", false, "print the turn's events until it ends")
	cmd.Flags().BoolVar(&asJSON, "json", false, "with --follow, print events as JSON lines")
	return cmd
}

func newEvents() *cobra.Command {
	var (
		f        urlFlags
		after    int64
		noFollow bool
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "events SESSION",
		Short: "Print a session's event stream, following it as it grows",
		Long: `events prints SESSION's events from the start (or after --after N) and keeps
following the live stream until interrupted; --no-follow stops at the last
stored event. Human-readable by default, one JSON object a line with --json.`,
		Example: `  agent-sdk events sess_abc --url http://127.0.0.1:3000/quickstart
  agent-sdk events sess_abc --url http://127.0.0.1:3000/quickstart --json --after 10 --no-follow`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.client()
			if err != nil {
				return err
			}
			if noFollow {
				var ans struct {
					Events []json.RawMessage `json:"events"`
				}
				for {
					path := fmt.Sprintf("/session/%s/events?follow=false&after=%d&limit=10000", args[0], after)
					if err := getJSON(cmd.Context(), r, http.MethodGet, path, nil, &ans); err != nil {
						return err
					}
					for _, e := range ans.Events {
						printEvent(e, asJSON)
						var seq struct{ Seq int64 }
						json.Unmarshal(e, &seq)
						after = seq.Seq
					}
					if len(ans.Events) < 10000 {
						return nil
					}
				}
			}
			return tail(cmd.Context(), r, args[0], after, "", asJSON)
		},
	}
	f.register(cmd)
	cmd.Flags().Int64Var(&after, "after", 0, "start after this event's seq")
	cmd.Flags().BoolVar(&noFollow, "no-follow", false, "print the stored events and stop")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object a line")
	return cmd
}

// tail follows a session's SSE stream, printing events. With untilTurn set
// it returns when that turn ends (exit 1 if it failed).
func tail(ctx context.Context, r *remote, sessionID string, after int64, untilTurn string, asJSON bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/session/"+sessionID+"/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return exitWith(command.ExitFailure, "reaching the host: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return apiFailure(resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		printEvent(json.RawMessage(data), asJSON)
		var e struct {
			Kind   string `json:"kind"`
			TurnID string `json:"turnId"`
		}
		json.Unmarshal([]byte(data), &e)
		if untilTurn != "" && e.TurnID == untilTurn {
			switch e.Kind {
			case "turn.completed":
				return nil
			case "turn.failed":
				return &exitError{code: command.ExitToolError}
			}
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil {
		return exitWith(command.ExitFailure, "reading the event stream: %v", err)
	}
	return nil
}

// printEvent prints one event: JSON as it came, or a line for people.
func printEvent(raw json.RawMessage, asJSON bool) {
	if asJSON {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			raw = b.Bytes()
		}
		fmt.Printf("%s\n", raw)
		return
	}
	var e struct {
		Seq  int64           `json:"seq"`
		Kind string          `json:"kind"`
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return
	}
	var d map[string]any
	json.Unmarshal(e.Data, &d)
	summary := ""
	switch e.Kind {
	case "message.delta":
		summary = fmt.Sprintf("%q", d["text"])
	case "message":
		summary = fmt.Sprintf("%v: %v", d["role"], d["text"])
	case "actions.requested":
		var names []string
		if acts, ok := d["actions"].([]any); ok {
			for _, a := range acts {
				if m, ok := a.(map[string]any); ok {
					names = append(names, fmt.Sprintf("%v %v", m["tool"], m["callId"]))
				}
			}
		}
		summary = strings.Join(names, ", ")
	case "action.result":
		res, _ := json.Marshal(d["result"])
		if len(res) > 200 {
			res = append(res[:200], "…"...)
		}
		summary = fmt.Sprintf("%v %v isError=%v %s", d["tool"], d["callId"], d["isError"], res)
	case "turn.failed":
		summary = fmt.Sprintf("%v", d["reason"])
	case "turn.started", "session.created":
		b, _ := json.Marshal(d)
		summary = string(b)
	}
	fmt.Printf("%5d  %-18s %s\n", e.Seq, e.Kind, summary)
}

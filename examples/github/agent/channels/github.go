// Package channels is the GitHub example agent's channels, one per file.
//
//   - github: GitHub's webhook. Every pull request that is opened, reopened
//     or gets new commits is inspected (inspect_pr, called directly) and
//     handed to the model for a review, in one session per pull request.
package channels

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentsdk/agentsdk"
	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/channel"
	"github.com/agentsdk/agentsdk/examples/github/agent/tools"
	"github.com/agentsdk/agentsdk/tool"
)

// GitHub is the github channel. Its webhook is mounted at
// /<slug>/channels/github/webhook and admits only requests signed with
// GITHUB_WEBHOOK_SECRET (GitHub's X-Hub-Signature-256); the host's bearer
// token does not admit them.
var GitHub = channel.Define(channel.Config{
	Description: "GitHub pull requests to review, from the repository's webhook",
	Routes: []channel.Route{{
		Method:  "POST",
		Path:    "/webhook",
		Auth:    channel.HMACSHA256("X-Hub-Signature-256", "sha256=", "GITHUB_WEBHOOK_SECRET"),
		Handler: webhook,
	}},
	OnStart: onStart,
})

// reviewGuidelines is what every review session on the channel starts
// with: how a review is written for GitHub.
var reviewGuidelines = agentsdk.Prompt(`
	Review guidelines for GitHub pull requests (from the github channel):

	- Your answer is posted as the pull request's review, so write GitHub-flavoured Markdown for its author.
	- Open with one sentence on what the change does and whether it does it well.
	- List findings by importance: correctness and security first, then tests, then design, then style. Name the file (and line, when you know it) of each, and say why it matters.
	- Suggest a fix for every problem you raise; use a suggestion block for small ones.
	- Do not invent code you have not seen: if you only have the metadata, say what you would check in the diff.
	- When new commits arrive later in this session, review only what changed, and say which earlier findings are resolved.
	- End with exactly one verdict line: APPROVE, REQUEST_CHANGES or COMMENT.
`)

// onStart gives the model the review guidelines with the first message of
// every session on the channel — opened by the webhook, by another tool's
// Send, or over the API (POST /v1/session with "channel": "github") — once
// per session: later turns have them in the history.
func onStart(ctx context.Context, s *channel.Start) error {
	s.AddContext(reviewGuidelines)
	return nil
}

// reviewed are the pull_request actions that start a review.
var reviewed = map[string]string{
	"opened":      "was opened",
	"reopened":    "was reopened",
	"synchronize": "has new commits",
}

// pullRequestEvent is the part of GitHub's pull_request event the channel
// reads (https://docs.github.com/webhooks/webhook-events-and-payloads#pull_request).
type pullRequestEvent struct {
	Action      string       `json:"action"`
	Number      int          `json:"number"`
	PullRequest *pullRequest `json:"pull_request"`
	Repository  *struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	// Sender is who caused the event (opened the pull request, pushed).
	Sender struct {
		Login string `json:"login"`
	} `json:"sender"`
	// Before is the previous head, on synchronize.
	Before string `json:"before"`
}

type pullRequest struct {
	Number       int    `json:"number"`
	Title        string `json:"title"`
	Body         string `json:"body"`
	Draft        bool   `json:"draft"`
	ChangedFiles int    `json:"changed_files"`
	Additions    int    `json:"additions"`
	Deletions    int    `json:"deletions"`
	User         struct {
		Login string `json:"login"`
	} `json:"user"`
	Head struct {
		SHA string `json:"sha"`
		Ref string `json:"ref"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

// webhookAccepted is the answer to a pull request handed to the model.
type webhookAccepted struct {
	OK        bool   `json:"ok"`
	SessionID string `json:"sessionId"`
	CallID    string `json:"callId"`
	Key       string `json:"key"`
}

// webhook serves GitHub's deliveries. Its body was verified against
// X-Hub-Signature-256 before it runs.
func webhook(h tool.Handle, w http.ResponseWriter, r *http.Request) {
	event := r.Header.Get("X-GitHub-Event")
	payload, err := readPayload(r)
	if err != nil {
		fail(w, http.StatusBadRequest, api.CodeBadRequest, err.Error())
		return
	}
	switch event {
	case "":
		fail(w, http.StatusBadRequest, api.CodeBadRequest, "no X-GitHub-Event header: this route takes GitHub webhook deliveries")
		return
	case "ping":
		// Sent once when the webhook is created: the secret works.
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "event": "ping"})
		return
	case "pull_request":
	default:
		ignore(w, event, "only pull_request events are reviewed")
		return
	}

	var ev pullRequestEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		fail(w, http.StatusBadRequest, api.CodeMalformedJSON, "the pull_request payload is not valid JSON: "+err.Error())
		return
	}
	what, ok := reviewed[ev.Action]
	if !ok {
		ignore(w, event+"."+ev.Action, "only opened, reopened and synchronize are reviewed")
		return
	}
	in, err := inspectInput(ev)
	if err != nil {
		fail(w, http.StatusBadRequest, api.CodeBadRequest, "the pull_request payload: "+err.Error())
		return
	}
	key := fmt.Sprintf("%s#%d", in.Repo, in.Number)

	// The deterministic part first, with no model: size up the pull request.
	out, err := h.CallTool(r.Context(), "inspect_pr", in, nil)
	if err != nil {
		failWith(w, fmt.Errorf("inspecting %s: %w", key, err))
		return
	}
	if out.IsError {
		failWith(w, fmt.Errorf("inspecting %s: inspect_pr failed: %s", key, out.Result))
		return
	}
	var inspected tools.InspectPROutput
	if err := json.Unmarshal(out.Result, &inspected); err != nil {
		failWith(w, fmt.Errorf("inspecting %s: reading inspect_pr's result: %w", key, err))
		return
	}

	// Then the model, in the pull request's own session: the first event
	// opens it, as the GitHub user who caused it; later ones (new commits)
	// resume it.
	sender := ev.Sender.Login
	if sender == "" {
		sender = in.Author
	}
	prompt := reviewPrompt(ev, what, out.CallID, inspected, out.Result)
	sessionID, _, err := h.Send(r.Context(), "github", prompt, &tool.SendOptions{Key: key, Principal: "github:" + sender})
	if err != nil {
		if errors.Is(err, api.ErrSessionBusy) {
			err = fmt.Errorf("the review of %s is still running; redeliver this event once it has finished: %w", key, err)
		}
		failWith(w, err)
		return
	}
	// The host's request log names the call of an answer with this header.
	w.Header().Set("X-Agent-Call-Id", out.CallID)
	writeJSON(w, http.StatusAccepted, webhookAccepted{OK: true, SessionID: sessionID, CallID: out.CallID, Key: key})
}

// readPayload returns the event's JSON.
func readPayload(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the body: %w", err)
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	// GitHub sends the JSON as the body (content type application/json) or
	// as the form field payload (application/x-www-form-urlencoded); a JSON
	// body sent as a form (curl -d without a Content-Type) is read as JSON.
	if ct == "application/x-www-form-urlencoded" && !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("the form-encoded body: %w", err)
		}
		if !form.Has("payload") {
			return nil, errors.New("the form-encoded body has no payload field")
		}
		return []byte(form.Get("payload")), nil
	}
	return body, nil
}

// inspectInput takes inspect_pr's input from the event, refusing an event
// that lacks what a review needs.
func inspectInput(ev pullRequestEvent) (tools.InspectPRInput, error) {
	pr := ev.PullRequest
	var missing []string
	switch {
	case pr == nil:
		missing = append(missing, "pull_request")
	case ev.Repository == nil || ev.Repository.FullName == "":
		missing = append(missing, "repository.full_name")
	}
	if pr != nil {
		if pr.Number == 0 && ev.Number == 0 {
			missing = append(missing, "number")
		}
		if pr.Title == "" {
			missing = append(missing, "pull_request.title")
		}
		if pr.Head.SHA == "" {
			missing = append(missing, "pull_request.head.sha")
		}
		if pr.User.Login == "" {
			missing = append(missing, "pull_request.user.login")
		}
	}
	if len(missing) > 0 {
		return tools.InspectPRInput{}, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	number := pr.Number
	if number == 0 {
		number = ev.Number
	}
	if number < 0 || pr.ChangedFiles < 0 || pr.Additions < 0 || pr.Deletions < 0 {
		return tools.InspectPRInput{}, errors.New("number, changed_files, additions and deletions cannot be negative")
	}
	return tools.InspectPRInput{
		Repo:         ev.Repository.FullName,
		Number:       number,
		Title:        pr.Title,
		HeadSHA:      pr.Head.SHA,
		ChangedFiles: pr.ChangedFiles,
		Author:       pr.User.Login,
		Additions:    pr.Additions,
		Deletions:    pr.Deletions,
		BaseRef:      pr.Base.Ref,
		HeadRef:      pr.Head.Ref,
		Draft:        pr.Draft,
		Body:         pr.Body,
	}, nil
}

// reviewPrompt is the message that starts a review turn.
func reviewPrompt(ev pullRequestEvent, what, callID string, in tools.InspectPROutput, result json.RawMessage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Pull request %s %s: %q by @%s, head %s.\n", in.PR, what, in.Title, in.Author, in.HeadSHA)
	fmt.Fprintf(&b, "%s\n\n", in.URL)
	if ev.Action == "synchronize" && ev.Before != "" {
		fmt.Fprintf(&b, "The head moved from %s to %s. Review what changed since your last review in this session; do not repeat findings that still stand, say which are resolved.\n\n", ev.Before, in.HeadSHA)
	}
	fmt.Fprintf(&b, "inspect_pr (call %s) found:\n%s\n\n", callID, result)
	b.WriteString("Review the pull request: start from the concerns, go through the checklist, and end with one verdict: APPROVE, REQUEST_CHANGES or COMMENT.")
	return b.String()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// ignore answers an event the channel does not act on: accepted, so that
// GitHub records the delivery as successful, with what was ignored.
func ignore(w http.ResponseWriter, event, why string) {
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true, "ignored": event, "reason": why})
}

// fail answers an error in the API's shape: {"ok": false, "error": {…}}.
func fail(w http.ResponseWriter, status int, code api.Code, message string) {
	writeJSON(w, status, map[string]any{"ok": false, "error": api.Error{Code: code, Message: message}})
}

// failWith answers an error from the host with its code's status.
func failWith(w http.ResponseWriter, err error) {
	e := api.AsError(err)
	fail(w, e.Status(), e.Code, err.Error())
}

// Package tools is the GitHub example agent's tools, one per file.
//
//   - inspect_pr: a typed server tool that sizes up a pull request from its
//     metadata (what GitHub's pull_request webhook carries) and returns a
//     summary, the things worth a reviewer's attention and a checklist. The
//     github channel (agent/channels/github.go) calls it directly for every
//     pull request it receives, before the model reviews it; the model can
//     call it too.
//
// The tool works from its input alone, so that the example runs without a
// network or a GitHub token; a real one would also fetch the diff (with the
// GitHub MCP server through call.Host.MCP, or the REST API).
package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentsdk/agentsdk"
	"github.com/agentsdk/agentsdk/tool"
)

// InspectPRInput is inspect_pr's input: a pull request's metadata, as the
// pull_request webhook event carries it.
type InspectPRInput struct {
	Repo         string `json:"repo" jsonschema:"description=the repository as owner/name,pattern=^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"`
	Number       int    `json:"number" jsonschema:"description=the pull request's number,minimum=1"`
	Title        string `json:"title" jsonschema:"description=the pull request's title,minLength=1"`
	HeadSHA      string `json:"headSha" jsonschema:"description=the head commit's SHA (hex),pattern=^[0-9a-f]+$,minLength=7,maxLength=64"`
	ChangedFiles int    `json:"changedFiles" jsonschema:"description=how many files the pull request changes,minimum=0"`
	Author       string `json:"author" jsonschema:"description=the author's GitHub login,minLength=1"`
	Additions    int    `json:"additions,omitempty" jsonschema:"description=lines added,minimum=0"`
	Deletions    int    `json:"deletions,omitempty" jsonschema:"description=lines deleted,minimum=0"`
	BaseRef      string `json:"baseRef,omitempty" jsonschema:"the branch it merges into"`
	HeadRef      string `json:"headRef,omitempty" jsonschema:"the branch it merges from"`
	Draft        bool   `json:"draft,omitempty" jsonschema:"whether it is a draft"`
	Body         string `json:"body,omitempty" jsonschema:"the pull request's description"`
}

// InspectPROutput is inspect_pr's typed output.
type InspectPROutput struct {
	PR       string   `json:"pr" jsonschema:"the pull request as owner/name#number"`
	URL      string   `json:"url" jsonschema:"description=the pull request's page,format=uri"`
	Title    string   `json:"title"`
	Author   string   `json:"author"`
	HeadSHA  string   `json:"headSha"`
	Size     string   `json:"size" jsonschema:"description=the size class by changed files and lines,enum=XS,enum=S,enum=M,enum=L,enum=XL"`
	Summary  string   `json:"summary" jsonschema:"one line for people and the model"`
	Concerns []string `json:"concerns" jsonschema:"what deserves a reviewer's attention before reading the diff"`
	// Checklist is what the review must cover, in order.
	Checklist []string `json:"checklist" jsonschema:"what the review must cover"`
}

// InspectPR sizes up a pull request before it is reviewed.
var InspectPR = tool.Define(tool.Config{
	Description: agentsdk.Prompt(`
		Size up a GitHub pull request from its metadata before reviewing it:
		its size class, what deserves attention (a draft, a missing
		description, a large change, a WIP title) and a review checklist.
		Call it again with the new head SHA after new commits are pushed.
	`),
}, inspectPR)

func inspectPR(ctx context.Context, call *tool.Call, in InspectPRInput) (InspectPROutput, error) {
	short := in.HeadSHA[:min(7, len(in.HeadSHA))]
	size := sizeClass(in.ChangedFiles, in.Additions+in.Deletions)
	out := InspectPROutput{
		PR:        fmt.Sprintf("%s#%d", in.Repo, in.Number),
		URL:       fmt.Sprintf("https://github.com/%s/pull/%d", in.Repo, in.Number),
		Title:     in.Title,
		Author:    in.Author,
		HeadSHA:   in.HeadSHA,
		Size:      size,
		Concerns:  []string{},
		Checklist: []string{},
	}

	lines := ""
	if in.Additions+in.Deletions > 0 {
		lines = fmt.Sprintf(", +%d −%d", in.Additions, in.Deletions)
	}
	branches := ""
	if in.HeadRef != "" && in.BaseRef != "" {
		branches = fmt.Sprintf(", %s → %s", in.HeadRef, in.BaseRef)
	}
	out.Summary = fmt.Sprintf("%s by @%s at %s: %q, %s (%s%s%s)",
		out.PR, in.Author, short, in.Title, size, plural(in.ChangedFiles, "file"), lines, branches)

	concern := func(format string, a ...any) { out.Concerns = append(out.Concerns, fmt.Sprintf(format, a...)) }
	title := strings.ToLower(strings.TrimSpace(in.Title))
	switch {
	case in.Draft:
		concern("It is a draft: review the direction and the design, not merge readiness.")
	case strings.HasPrefix(title, "wip") || strings.HasPrefix(title, "[wip]") || strings.HasPrefix(title, "draft"):
		concern("The title says it is work in progress but it is not marked as a draft: ask whether it is ready.")
	}
	if strings.TrimSpace(in.Body) == "" {
		concern("It has no description: ask the author for the motivation and how it was tested.")
	}
	if len(in.Title) > 72 {
		concern("The title is %d characters long: a squash-merge commit subject wants 72 at most.", len(in.Title))
	}
	switch size {
	case "L":
		concern("It is large (%s): review it commit by commit and say which parts you could not check.", plural(in.ChangedFiles, "file"))
	case "XL":
		concern("It is very large (%s): suggest splitting it; review the riskiest files first.", plural(in.ChangedFiles, "file"))
	}
	if in.ChangedFiles == 0 {
		concern("It changes no files (yet): there is nothing to review but the description.")
	}
	if in.Deletions > 0 && in.Additions == 0 {
		concern("It only deletes code: check that nothing still uses what it removes.")
	}
	if in.BaseRef != "" && in.BaseRef != "main" && in.BaseRef != "master" {
		concern("It merges into %s, not the default branch: check that this is intended.", in.BaseRef)
	}

	check := func(item string) { out.Checklist = append(out.Checklist, item) }
	check("The change does what the title and description say, and nothing else.")
	check("New and changed behaviour is covered by tests; the tests would fail without the change.")
	check("Errors are handled and reported with enough context; nothing panics on bad input.")
	check("No secrets, credentials or personal data are added to the code, logs or fixtures.")
	if size == "L" || size == "XL" {
		check("Each commit builds and makes sense on its own, or the PR says why not.")
	}
	check("Public APIs, configuration and docs are updated where behaviour changes.")
	return out, nil
}

// sizeClass classifies a change by its files and changed lines, as the
// common size-label bots do; the larger of the two classes wins.
func sizeClass(files, lines int) string {
	classes := []string{"XS", "S", "M", "L", "XL"}
	byFiles := classIndex(files, []int{1, 5, 15, 40})
	byLines := classIndex(lines, []int{10, 100, 500, 1000})
	return classes[max(byFiles, byLines)]
}

func classIndex(n int, limits []int) int {
	for i, limit := range limits {
		if n <= limit {
			return i
		}
	}
	return len(limits)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

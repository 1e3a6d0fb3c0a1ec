package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/progress"
	"github.com/agentsdk/agentsdk/internal/turnloop"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/tool"
)

// The model's budget for a result (Options.ModelResultBytes). Model
// context windows are finite and tool outputs are how they usually blow
// up: a model's call whose result is larger than the budget has its
// result saved whole as an artifact of the session, and the model — and
// the session's stream — get a preview, the size and the artifact's name;
// the built-in read_result tool reads a byte range of it or searches it.
// Direct callers always get the whole result.

const (
	// readResultTool is the built-in reader of saved results.
	readResultTool = "read_result"
	// previewBytes is how much of a saved result the model sees at once.
	previewBytes = 2 << 10
)

// fitForModel returns what the model (and the session's stream) get of a
// model's call's result: the result itself within the budget, else a
// preview of it, saved whole as results/<callId>.txt.
func (h *Host) fitForModel(ctx context.Context, sessionID, turnID, callID string, out tool.Output) tool.Output {
	budget := h.opts.ModelResultBytes
	if budget <= 0 || len(out.Result) <= budget {
		return out
	}
	// Images go to the model as images, not text: only the text counts.
	if text, images := turnloop.ResultContent(out); len(images) > 0 && len(text) <= budget {
		return out
	}
	text := turnloop.ResultText(out)
	name := "results/" + callID + ".txt"
	a := artifacts{h: h, sessionID: sessionID, turnID: turnID, callID: callID}
	saved := map[string]any{"truncated": true, "size": len(text), "preview": progress.TruncateUTF8(text, previewBytes)}
	if _, err := a.Put(context.WithoutCancel(ctx), name, strings.NewReader(text), &tool.FilePutOptions{ContentType: "text/plain; charset=utf-8"}); err != nil {
		h.logger.Error("saving a large result", "call", callID, "err", err)
		saved["note"] = fmt.Sprintf("The result is %d bytes, over the %d you are given at once; this is its start (saving the rest failed).", len(text), budget)
	} else {
		saved["artifact"] = name
		saved["note"] = fmt.Sprintf("The result is %d bytes, over the %d you are given at once; this is its start. "+
			`Call %s with {"artifact": %q, "offset": N, "length": N} (up to %d bytes) to read more, or {"artifact": %q, "search": "text"} to find something in it.`,
			len(text), budget, readResultTool, name, budget, name)
	}
	b, _ := json.Marshal(saved)
	return tool.Output{Result: b, IsError: out.IsError}
}

// ReadResultInput is read_result's input.
type ReadResultInput struct {
	Artifact string `json:"artifact,omitempty" jsonschema:"the saved result's artifact name: results/<callId>.txt"`
	Call     string `json:"call,omitempty" jsonschema:"instead of artifact: the call id of a result cleared from the context"`
	Offset   int    `json:"offset,omitempty" jsonschema:"minimum=0,description=the byte to start at"`
	Length   int    `json:"length,omitempty" jsonschema:"minimum=1,description=how many bytes to read (default and most: the result budget)"`
	Search   string `json:"search,omitempty" jsonschema:"description=text to find instead of reading a range: each match's offset and the text around it"`
}

// readResult is the built-in read_result, as the model sees it; nil
// without a budget, or when the agent has a tool of that name.
func (h *Host) readResult() *tool.Tool {
	if h.opts.ModelResultBytes <= 0 {
		return nil
	}
	if _, taken := h.tools.Lookup(readResultTool); taken {
		return nil
	}
	budget := h.opts.ModelResultBytes
	t, err := tool.New(readResultTool, tool.Config{Description: "Read part of a tool result that was too large to give you whole " +
		"(its preview names the artifact), or of one cleared from the context (its stand-in names the call): a byte range, or the places where some text occurs."},
		func(ctx context.Context, call *tool.Call, in ReadResultInput) (any, error) {
			r, name, size, err := h.resultSource(ctx, call, in)
			if err != nil {
				return nil, err
			}
			defer r.Close()
			if in.Search != "" {
				return searchResult(r, name, in.Search, size)
			}
			length := in.Length
			if length <= 0 || length > budget {
				length = budget
			}
			if _, err := io.CopyN(io.Discard, r, int64(in.Offset)); err != nil && err != io.EOF {
				return nil, err
			}
			buf := make([]byte, length)
			n, err := io.ReadFull(r, buf)
			if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
				return nil, err
			}
			return map[string]any{"artifact": name, "offset": in.Offset, "length": n, "size": size, "text": string(buf[:n])}, nil
		})
	if err != nil {
		panic(err) // a definition of ours: a test catches it
	}
	return t
}

// resultSource opens what read_result reads: a saved result (an
// artifact under results/), or the result of a call of the session's
// model turns, as the stream keeps it.
func (h *Host) resultSource(ctx context.Context, call *tool.Call, in ReadResultInput) (io.ReadCloser, string, int64, error) {
	if in.Call != "" {
		text, err := h.callResult(ctx, call.Session.ID, in.Call)
		if err != nil {
			return nil, "", 0, err
		}
		return io.NopCloser(strings.NewReader(text)), in.Call, int64(len(text)), nil
	}
	if !strings.HasPrefix(in.Artifact, "results/") {
		return nil, "", 0, fmt.Errorf("%s reads saved results (results/<callId>.txt) and results of calls (call) only", readResultTool)
	}
	r, info, err := call.Artifacts.Get(ctx, in.Artifact)
	if err != nil {
		return nil, "", 0, err
	}
	return r, in.Artifact, info.Size, nil
}

// callResult is the text of a model's call's result in a session, read
// from its stream.
func (h *Host) callResult(ctx context.Context, sessionID, callID string) (string, error) {
	if sessionID == "" {
		return "", fmt.Errorf("%s reads a call's result in a session only", readResultTool)
	}
	var text string
	found := false
	err := eachEvent(ctx, h.log, sessionID, func(e api.Event) {
		if found || e.Kind != api.KindActionResult {
			return
		}
		if r, err := api.Decode[api.ActionResult](e); err == nil && r.CallID == callID && !r.Direct {
			text, found = turnloop.ResultText(tool.Output{Result: r.Result}), true
		}
	})
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("no result of a call %q in this session", callID)
	}
	return text, nil
}

// searchResult finds text in a saved result: the first 20 matches, each
// with its offset and 80 bytes around it.
func searchResult(r io.Reader, name, text string, size int64) (any, error) {
	data, err := io.ReadAll(io.LimitReader(r, 256<<20))
	if err != nil {
		return nil, err
	}
	type match struct {
		Offset int    `json:"offset"`
		Text   string `json:"text"`
	}
	var matches []match
	count := 0
	hay := string(data)
	for at := 0; ; {
		i := strings.Index(hay[at:], text)
		if i < 0 {
			break
		}
		i += at
		count++
		if len(matches) < 20 {
			from, to := max(0, i-80), min(len(hay), i+len(text)+80)
			matches = append(matches, match{Offset: i, Text: hay[from:to]})
		}
		at = i + max(1, len(text))
	}
	return map[string]any{"artifact": name, "size": size, "count": count, "matches": matches}, nil
}

// modelTools are the tools a model turn is offered: the agent's, and
// read_result when results may be saved.
func (h *Host) modelTools() []model.Tool {
	specs := h.toolSpecs()
	if h.builtinReader != nil {
		t := h.builtinReader
		specs = append(specs, model.Tool{Name: t.Name(), Description: t.Description(), InputSchema: t.InputSchema()})
	}
	return specs
}

// lookupForModel finds a tool a model may call: the agent's, or the
// built-in reader.
func (h *Host) lookupForModel(name string) (*tool.Tool, bool) {
	if t, ok := h.tools.Lookup(name); ok {
		return t, true
	}
	if h.builtinReader != nil && name == readResultTool {
		return h.builtinReader, true
	}
	return nil, false
}

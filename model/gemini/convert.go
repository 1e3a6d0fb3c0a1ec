package gemini

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"google.golang.org/genai"

	"github.com/agentsdk/agentsdk/model"
)

// A thought signature travels in a model.Reasoning block's Signature as
// "gemini:" then the part it came on and the signature in base64:
//
//	gemini:thought:<sig>    a thought part: the block's Text, sealed
//	gemini:text:<sig>       the answer's text part
//	gemini:call:<id>:<sig>  the function call with that id
//
// The prefix lets any other provider tell a Gemini block from its own.
const (
	signaturePrefix = "gemini:"
	onThought       = signaturePrefix + "thought:"
	onText          = signaturePrefix + "text:"
	onCall          = signaturePrefix + "call:"
)

func thoughtSignature(sig []byte) string { return onThought + b64(sig) }

func textSignature(sig []byte) string { return onText + b64(sig) }

func callSignature(id string, sig []byte) string { return onCall + id + ":" + b64(sig) }

func b64(sig []byte) string { return base64.StdEncoding.EncodeToString(sig) }

// signatures are a message's thought signatures by the part they go on.
type signatures struct {
	text  []byte
	calls map[string][]byte // by call id
}

// readSignatures reads a message's reasoning blocks: the sealed thoughts,
// to be sent back as they came, and the other parts' signatures. Blocks
// that are not Gemini's, or not well formed, are left out.
func readSignatures(blocks []model.Reasoning) (thoughts []*genai.Part, sigs signatures) {
	sigs.calls = map[string][]byte{}
	for _, b := range blocks {
		switch s := b.Signature; {
		case strings.HasPrefix(s, onThought):
			if sig := decode(strings.TrimPrefix(s, onThought)); sig != nil {
				thoughts = append(thoughts, &genai.Part{Thought: true, Text: b.Text, ThoughtSignature: sig})
			}
		case strings.HasPrefix(s, onText):
			sigs.text = decode(strings.TrimPrefix(s, onText))
		case strings.HasPrefix(s, onCall):
			rest := strings.TrimPrefix(s, onCall)
			if i := strings.LastIndexByte(rest, ':'); i > 0 {
				if sig := decode(rest[i+1:]); sig != nil {
					sigs.calls[rest[:i]] = sig
				}
			}
		}
	}
	return thoughts, sigs
}

func decode(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil
	}
	return b
}

// contents converts the conversation: the model's messages with their
// thoughts, text and function calls, each with the signature it came
// with; the user's text, and the results of calls as functionResponse
// parts (named after their call, as Gemini wants), their images as
// inlineData parts beside them.
func contents(msgs []model.Message) []*genai.Content {
	names := map[string]string{} // call id → function name
	out := make([]*genai.Content, 0, len(msgs))
	for _, m := range msgs {
		var parts []*genai.Part
		if m.Role == model.Assistant {
			thoughts, sigs := readSignatures(m.Reasoning)
			parts = append(parts, thoughts...)
			if m.Text != "" {
				parts = append(parts, &genai.Part{Text: m.Text, ThoughtSignature: sigs.text})
			}
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Name
				fc := &genai.FunctionCall{Name: c.Name, Args: objectOrEmpty(c.Input)}
				if !strings.HasPrefix(c.ID, madeIDPrefix) {
					fc.ID = c.ID
				}
				parts = append(parts, &genai.Part{FunctionCall: fc, ThoughtSignature: sigs.calls[c.ID]})
			}
			if len(parts) > 0 {
				out = append(out, &genai.Content{Role: genai.RoleModel, Parts: parts})
			}
			continue
		}
		var images []*genai.Part
		for _, r := range m.ToolResults {
			name := names[r.CallID]
			if name == "" {
				name = r.CallID
			}
			response := map[string]any{"output": r.Content}
			if r.IsError {
				response = map[string]any{"error": r.Content}
			}
			fr := &genai.FunctionResponse{Name: name, Response: response}
			if !strings.HasPrefix(r.CallID, madeIDPrefix) {
				fr.ID = r.CallID
			}
			parts = append(parts, &genai.Part{FunctionResponse: fr})
			for _, im := range r.Images {
				if im.Name != "" {
					images = append(images, &genai.Part{Text: name + ": " + im.Name})
				}
				images = append(images, &genai.Part{InlineData: &genai.Blob{MIMEType: im.MimeType, Data: im.Data}})
			}
		}
		parts = append(parts, images...)
		if m.Text != "" {
			parts = append(parts, &genai.Part{Text: m.Text})
		}
		if len(parts) > 0 {
			out = append(out, &genai.Content{Role: genai.RoleUser, Parts: parts})
		}
	}
	return out
}

// objectOrEmpty returns a call's input for the history: Gemini's args are
// an object, and a malformed input is not one.
func objectOrEmpty(raw json.RawMessage) map[string]any {
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return map[string]any{}
	}
	return obj
}

// tools declares the tools as functions, their input schemas passed as
// JSON Schema unchanged (parametersJsonSchema).
func tools(in []model.Tool) []*genai.Tool {
	if len(in) == 0 {
		return nil
	}
	decls := make([]*genai.FunctionDeclaration, 0, len(in))
	for _, t := range in {
		d := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
		if len(t.InputSchema) > 0 {
			d.ParametersJsonSchema = t.InputSchema
		}
		decls = append(decls, d)
	}
	return []*genai.Tool{{FunctionDeclarations: decls}}
}

package modeltest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/model"
)

// A cassette is one file of a recording directory, <key>.json: a
// request, normalised, and the answers recorded for it, in the order they
// were given (a request asked again, a retry after a failure, may have
// got another answer). The format is the JSON of the types below, indented;
// the key is the first 16 hex digits of the SHA-256 of the request's
// compact JSON (see [Key]), read again from the request when a cassette
// is loaded, so a file's name is only a name.
//
// The request is normalised so that what does not change what a model is
// asked changes no key: the prompt-cache key (a session's id) is left out,
// text is kept as its lines (a diff names the line that changed), JSON (a
// call's input, a tool's schema) is compacted, and an image is its type,
// size and SHA-256.
type cassette struct {
	Request request  `json:"request"`
	Answers []answer `json:"answers"`
}

// request is a [model.Request], normalised.
type request struct {
	System    []string  `json:"system,omitempty"`
	Messages  []message `json:"messages"`
	Tools     []toolDef `json:"tools,omitempty"`
	MaxTokens int       `json:"maxTokens,omitempty"`
}

type message struct {
	Role        string       `json:"role"`
	Reasoning   []reasoning  `json:"reasoning,omitempty"`
	Text        []string     `json:"text,omitempty"`
	ToolCalls   []toolCall   `json:"toolCalls,omitempty"`
	ToolResults []toolResult `json:"toolResults,omitempty"`
}

type reasoning struct {
	Text      []string `json:"text,omitempty"`
	Signature string   `json:"signature,omitempty"`
	Redacted  string   `json:"redacted,omitempty"`
}

// toolCall is a call's input as JSON when it is valid JSON (compacted),
// else as the text the model sent.
type toolCall struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input,omitempty"`
	InputText *string         `json:"inputText,omitempty"`
}

type toolResult struct {
	CallID  string   `json:"callId"`
	Content []string `json:"content,omitempty"`
	Images  []image  `json:"images,omitempty"`
	IsError bool     `json:"isError,omitempty"`
}

type image struct {
	MimeType string `json:"mimeType"`
	Name     string `json:"name,omitempty"`
	Bytes    int    `json:"bytes"`
	SHA256   string `json:"sha256"`
}

type toolDef struct {
	Name            string          `json:"name"`
	Description     []string        `json:"description,omitempty"`
	InputSchema     json.RawMessage `json:"inputSchema,omitempty"`
	InputSchemaText *string         `json:"inputSchemaText,omitempty"`
}

// answer is one recorded answer: its chunks as they streamed, and the
// error it ended with, if it failed.
type answer struct {
	Chunks []chunk      `json:"chunks"`
	Error  *errorRecord `json:"error,omitempty"`
}

type chunk struct {
	Text          string     `json:"text,omitempty"`
	ReasoningText string     `json:"reasoningText,omitempty"`
	Reasoning     *reasoning `json:"reasoning,omitempty"`
	ToolCall      *toolCall  `json:"toolCall,omitempty"`
	End           *endRecord `json:"end,omitempty"`
}

type endRecord struct {
	Usage      *usage `json:"usage,omitempty"`
	Model      string `json:"model,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
}

// usage is a [model.Usage].
type usage struct {
	InputTokens      int64 `json:"inputTokens"`
	OutputTokens     int64 `json:"outputTokens"`
	CacheReadTokens  int64 `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int64 `json:"cacheWriteTokens,omitempty"`
	ReasoningTokens  int64 `json:"reasoningTokens,omitempty"`
}

// errorRecord is a [*model.Error] (any other error is recorded as it
// classifies: [model.Classify]).
type errorRecord struct {
	Reason     model.Reason `json:"reason"`
	Status     int          `json:"status,omitempty"`
	RetryAfter string       `json:"retryAfter,omitempty"`
	Message    string       `json:"message,omitempty"`
}

// lines is s as its lines; nil for "".
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// unlines joins lines back.
func unlines(l []string) string { return strings.Join(l, "\n") }

// jsonOrText is b compacted if it is valid JSON, else b as text.
func jsonOrText(b []byte) (json.RawMessage, *string) {
	if len(b) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	if json.Valid(b) && json.Compact(&buf, b) == nil {
		return buf.Bytes(), nil
	}
	s := string(b)
	return nil, &s
}

// bytesOf is what jsonOrText split, as bytes (compacted JSON).
func bytesOf(j json.RawMessage, text *string) []byte {
	if text != nil {
		return []byte(*text)
	}
	if len(j) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, j) != nil {
		return j
	}
	return buf.Bytes()
}

func newReasoning(r model.Reasoning) reasoning {
	return reasoning{Text: lines(r.Text), Signature: r.Signature, Redacted: r.Redacted}
}

func (r reasoning) model() model.Reasoning {
	return model.Reasoning{Text: unlines(r.Text), Signature: r.Signature, Redacted: r.Redacted}
}

func newToolCall(c model.ToolCall) toolCall {
	in, text := jsonOrText(c.Input)
	return toolCall{ID: c.ID, Name: c.Name, Input: in, InputText: text}
}

func (c toolCall) model() model.ToolCall {
	return model.ToolCall{ID: c.ID, Name: c.Name, Input: bytesOf(c.Input, c.InputText)}
}

// normalise is req as a cassette keeps it.
func normalise(req *model.Request) request {
	out := request{System: lines(req.System), MaxTokens: req.MaxTokens, Messages: make([]message, len(req.Messages))}
	for i, m := range req.Messages {
		nm := message{Role: string(m.Role), Text: lines(m.Text)}
		for _, r := range m.Reasoning {
			nm.Reasoning = append(nm.Reasoning, newReasoning(r))
		}
		for _, c := range m.ToolCalls {
			nm.ToolCalls = append(nm.ToolCalls, newToolCall(c))
		}
		for _, r := range m.ToolResults {
			tr := toolResult{CallID: r.CallID, Content: lines(r.Content), IsError: r.IsError}
			for _, img := range r.Images {
				sum := sha256.Sum256(img.Data)
				tr.Images = append(tr.Images, image{MimeType: img.MimeType, Name: img.Name, Bytes: len(img.Data), SHA256: hex.EncodeToString(sum[:])})
			}
			nm.ToolResults = append(nm.ToolResults, tr)
		}
		out.Messages[i] = nm
	}
	for _, t := range req.Tools {
		schema, text := jsonOrText(t.InputSchema)
		out.Tools = append(out.Tools, toolDef{Name: t.Name, Description: lines(t.Description), InputSchema: schema, InputSchemaText: text})
	}
	return out
}

// key is the key of a normalised request.
func (r *request) key() string {
	b, err := json.Marshal(r)
	if err != nil {
		// Only valid JSON is kept as JSON: this cannot happen.
		panic(fmt.Sprintf("modeltest: marshalling a normalised request: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Key is the key of the cassette of req: the first 16 hex digits of the
// SHA-256 of its normalised JSON. Requests that differ only in what the
// normalisation leaves out (the prompt-cache key, JSON's spacing) have
// the same key.
func Key(req *model.Request) string {
	r := normalise(req)
	return r.key()
}

// newChunk is c as a cassette keeps it.
func newChunk(c model.Chunk) chunk {
	out := chunk{Text: c.Text, ReasoningText: c.ReasoningText}
	if c.Reasoning != nil {
		r := newReasoning(*c.Reasoning)
		out.Reasoning = &r
	}
	if c.ToolCall != nil {
		tc := newToolCall(*c.ToolCall)
		out.ToolCall = &tc
	}
	if e := c.End; e != nil {
		out.End = &endRecord{Model: e.Model, StopReason: e.StopReason}
		if u := e.Usage; u != nil {
			out.End.Usage = &usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
				CacheWriteTokens: u.CacheWriteTokens, ReasoningTokens: u.ReasoningTokens}
		}
	}
	return out
}

// model is the chunk c recorded.
func (c chunk) model() model.Chunk {
	out := model.Chunk{Text: c.Text, ReasoningText: c.ReasoningText}
	if c.Reasoning != nil {
		r := c.Reasoning.model()
		out.Reasoning = &r
	}
	if c.ToolCall != nil {
		tc := c.ToolCall.model()
		if len(tc.Input) == 0 {
			tc.Input = json.RawMessage("{}")
		}
		out.ToolCall = &tc
	}
	if e := c.End; e != nil {
		out.End = &model.End{Model: e.Model, StopReason: e.StopReason}
		if u := e.Usage; u != nil {
			out.End.Usage = &model.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
				CacheWriteTokens: u.CacheWriteTokens, ReasoningTokens: u.ReasoningTokens}
		}
	}
	return out
}

func newErrorRecord(err error) *errorRecord {
	e := model.Classify(err)
	r := &errorRecord{Reason: e.Reason, Status: e.Status, Message: e.Message}
	if r.Message == "" {
		r.Message = e.Error()
	}
	if e.RetryAfter > 0 {
		r.RetryAfter = e.RetryAfter.String()
	}
	return r
}

func (r *errorRecord) model() *model.Error {
	e := &model.Error{Reason: r.Reason, Status: r.Status, Message: r.Message}
	if d, err := time.ParseDuration(r.RetryAfter); err == nil {
		e.RetryAfter = d
	}
	return e
}

// file is the cassette file of key in dir.
func file(dir, key string) string { return filepath.Join(dir, key+".json") }

// write writes c to path, whole or not at all.
func (c *cassette) write(path string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("encoding the cassette: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cassette-*")
	if err != nil {
		return fmt.Errorf("writing the cassette: %w", err)
	}
	_, err = tmp.Write(buf.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing the cassette %s: %w", path, err)
	}
	return nil
}

// readCassette reads and checks the cassette at path.
func readCassette(path string) (*cassette, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the cassette: %w", err)
	}
	var c cassette
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("reading the cassette %s: %w", path, err)
	}
	if len(c.Answers) == 0 {
		return nil, fmt.Errorf("reading the cassette %s: it has no answers", path)
	}
	for i, a := range c.Answers {
		if a.Error == nil && (len(a.Chunks) == 0 || a.Chunks[len(a.Chunks)-1].End == nil) {
			return nil, errors.New("reading the cassette " + path + fmt.Sprintf(": answer %d neither ends (a last chunk with \"end\") nor fails (\"error\")", i+1))
		}
	}
	return &c, nil
}

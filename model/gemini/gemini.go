// Package gemini is the Gemini API provider for model turns, through
// Google's official SDK (google.golang.org/genai). Import it for its side
// effect of registering the provider "gemini".
//
// The API key is model.apiKey, else GEMINI_API_KEY, else GOOGLE_API_KEY;
// the base URL is model.baseURL, else GOOGLE_GEMINI_BASE_URL, else the
// SDK's (https://generativelanguage.googleapis.com/). The provider always
// speaks the Gemini API, never Vertex AI, whatever GOOGLE_GENAI_USE_VERTEXAI
// says, and the SDK neither retries nor resumes a stream: the turn loop
// retries. (The SDK still logs a warning through the standard log package
// when both GEMINI_API_KEY and GOOGLE_API_KEY are set.)
//
// Thinking (model.thinking.budgetTokens) sets Gemini's thinking budget and
// asks for the thoughts, which stream as reasoning. The thought signatures
// Gemini seals its reasoning with — on a function call, a text or a thought
// — travel in [model.Reasoning] blocks whose Signature starts with
// "gemini:", and are sent back on the same parts in later requests, as
// Gemini 2.5 and 3 want them (Gemini 3 refuses a function call whose
// signature was dropped). A block of text without a signature is only
// shown, never sent back.
//
// Gemini's usage is normalised as [model.Usage] says: InputTokens is
// promptTokenCount less cachedContentTokenCount, OutputTokens is
// candidatesTokenCount plus thoughtsTokenCount.
package gemini

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"os"
	"strings"

	"google.golang.org/genai"

	"github.com/agentsdk/agentsdk/model"
)

func init() { model.Register("gemini", New) }

// New returns the provider for cfg.
func New(cfg model.Config) (model.Provider, error) {
	if cfg.Name == "" {
		return nil, errors.New("gemini: model.name is required, such as gemini-2.5-flash")
	}
	key := firstSet(cfg.APIKey, os.Getenv("GEMINI_API_KEY"), os.Getenv("GOOGLE_API_KEY"))
	if key == "" {
		return nil, errors.New("gemini: no API key: set GEMINI_API_KEY (or GOOGLE_API_KEY, or model.apiKey in agent/agent.yaml)")
	}
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:     key,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: &http.Client{Transport: transport{base: http.DefaultTransport}},
		HTTPOptions: genai.HTTPOptions{
			BaseURL: firstSet(cfg.BaseURL, os.Getenv("GOOGLE_GEMINI_BASE_URL")),
			// One attempt: the turn loop retries, and says so on the stream.
			RetryOptions: &genai.HTTPRetryOptions{Attempts: genai.Ptr[int32](1)},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("gemini: creating the client: %w", err)
	}
	return &provider{client: client, cfg: cfg}, nil
}

func firstSet(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

type provider struct {
	client *genai.Client
	cfg    model.Config
}

// Stream sends the request and yields text and thought deltas as they
// come, each function call once its part arrives (Gemini sends a call
// whole), the thought signatures as reasoning blocks before what they
// seal, and last the answer's end with its usage.
func (p *provider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		config := &genai.GenerateContentConfig{
			MaxOutputTokens: int32(model.MaxTokensFor(req, p.cfg)),
			Tools:           tools(req.Tools),
			// Resuming a dropped stream is a retry: the turn loop's.
			AutomaticContinuation: genai.Ptr(false),
		}
		if req.System != "" {
			config.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: req.System}}}
		}
		if t := p.cfg.Thinking; t != nil {
			config.ThinkingConfig = &genai.ThinkingConfig{ThinkingBudget: genai.Ptr(int32(t.BudgetTokens)), IncludeThoughts: true}
		}
		x := &exchange{}
		ctx := context.WithValue(ctx, exchangeKey{}, x)
		a := answer{yield: yield}
		for resp, err := range p.client.Models.GenerateContentStream(ctx, p.cfg.Name, contents(req.Messages), config) {
			if err != nil {
				yield(model.Chunk{}, classify(ctx, x, err))
				return
			}
			if !a.add(resp) {
				return
			}
		}
		if x.readErr != nil { // the stream broke off; the SDK saw its end
			yield(model.Chunk{}, classify(ctx, x, x.readErr))
			return
		}
		a.finish()
	}
}

// answer turns a stream of responses into chunks.
type answer struct {
	yield    func(model.Chunk, error) bool
	stopped  bool // yield said stop
	nonce    string
	calls    int
	thought  strings.Builder // the thought run streaming, not yet a block
	thinking bool
	end      model.End
	usage    *genai.GenerateContentResponseUsageMetadata
}

func (a *answer) emit(c model.Chunk) bool {
	if !a.stopped && !a.yield(c, nil) {
		a.stopped = true
	}
	return !a.stopped
}

// add reads one response of the stream; false means stop.
func (a *answer) add(resp *genai.GenerateContentResponse) bool {
	if resp.ModelVersion != "" {
		a.end.Model = resp.ModelVersion
	}
	if resp.UsageMetadata != nil { // each is the total so far
		a.usage = resp.UsageMetadata
	}
	if a.nonce == "" {
		a.nonce = resp.ResponseID
	}
	if f := resp.PromptFeedback; f != nil && f.BlockReason != "" {
		a.end.StopReason = string(f.BlockReason)
	}
	if len(resp.Candidates) == 0 || resp.Candidates[0] == nil {
		return true
	}
	cand := resp.Candidates[0]
	if cand.FinishReason != "" {
		a.end.StopReason = string(cand.FinishReason)
	}
	if cand.Content == nil {
		return true
	}
	for _, part := range cand.Content.Parts {
		if part != nil && !a.part(part) {
			return false
		}
	}
	return true
}

func (a *answer) part(part *genai.Part) bool {
	if part.Thought {
		a.thinking = true
		if part.Text != "" {
			a.thought.WriteString(part.Text)
			if !a.emit(model.Chunk{ReasoningText: part.Text}) {
				return false
			}
		}
		if len(part.ThoughtSignature) > 0 { // the signature closes the run
			return a.closeThought(part.ThoughtSignature)
		}
		return true
	}
	if !a.closeThought(nil) {
		return false
	}
	switch {
	case part.FunctionCall != nil:
		c := a.toolCall(part.FunctionCall)
		if len(part.ThoughtSignature) > 0 && !a.emit(model.Chunk{Reasoning: &model.Reasoning{Signature: callSignature(c.ID, part.ThoughtSignature)}}) {
			return false
		}
		return a.emit(model.Chunk{ToolCall: c})
	default:
		if part.Text != "" && !a.emit(model.Chunk{Text: part.Text}) {
			return false
		}
		if len(part.ThoughtSignature) > 0 {
			return a.emit(model.Chunk{Reasoning: &model.Reasoning{Signature: textSignature(part.ThoughtSignature)}})
		}
	}
	return true
}

// closeThought ends the thought run streaming, if any, as a block: sealed
// by sig, or without one (then it is only shown).
func (a *answer) closeThought(sig []byte) bool {
	if !a.thinking {
		return true
	}
	block := &model.Reasoning{Text: a.thought.String()}
	if len(sig) > 0 {
		block.Signature = thoughtSignature(sig)
	}
	a.thought.Reset()
	a.thinking = false
	return a.emit(model.Chunk{Reasoning: block})
}

// toolCall converts a function call, giving it an id if Gemini gave none
// (it usually does not): the response's id and the call's place in it,
// unique in the conversation.
func (a *answer) toolCall(fc *genai.FunctionCall) *model.ToolCall {
	a.calls++
	id := fc.ID
	if id == "" {
		if a.nonce == "" {
			a.nonce = randomNonce()
		}
		id = fmt.Sprintf("%s%s_%d", madeIDPrefix, a.nonce, a.calls)
	}
	input := []byte("{}")
	if fc.Args != nil {
		if b, err := json.Marshal(fc.Args); err == nil {
			input = b
		}
	}
	return &model.ToolCall{ID: id, Name: fc.Name, Input: input}
}

// madeIDPrefix starts the ids this package makes for calls Gemini gave
// none: they are not sent back to Gemini, which never saw them.
const madeIDPrefix = "gemini_"

func randomNonce() string {
	b := make([]byte, 6)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// finish yields the end of a stream that ended normally.
func (a *answer) finish() {
	if !a.closeThought(nil) {
		return
	}
	if u := a.usage; u != nil {
		a.end.Usage = &model.Usage{
			InputTokens:     int64(u.PromptTokenCount) - int64(u.CachedContentTokenCount),
			CacheReadTokens: int64(u.CachedContentTokenCount),
			OutputTokens:    int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount),
			ReasoningTokens: int64(u.ThoughtsTokenCount),
		}
	}
	end := a.end
	a.emit(model.Chunk{End: &end})
}

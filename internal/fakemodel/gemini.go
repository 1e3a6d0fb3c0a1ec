package fakemodel

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// GeminiURL is the base URL for the Gemini client (google.golang.org/genai's
// HTTPOptions.BaseURL, or GOOGLE_GEMINI_BASE_URL).
func (s *Server) GeminiURL() string { return s.URL }

// GeminiUsage is the usageMetadata a Gemini answer reports, in the API's
// words (used by the gemini wire). promptTokenCount includes the cached
// part and totalTokenCount is worked out.
type GeminiUsage struct {
	PromptTokenCount        int
	CachedContentTokenCount int
	CandidatesTokenCount    int
	ThoughtsTokenCount      int
}

// GeminiError shapes the error of a Reply with a Status (used by the
// gemini wire).
type GeminiError struct {
	// Message is the error's message; "fake failure <status>" if empty.
	// (A context-length refusal says "The input token count (N) exceeds
	// the maximum number of tokens allowed (M).")
	Message string
	// RetryDelay, if set, is sent as a google.rpc.RetryInfo detail.
	RetryDelay time.Duration
	// InStream sends the error as an event of a 200 answer, after the
	// reply's text, as Gemini does when a stream fails midway.
	InStream bool
}

// GeminiInvalidKey is an API key the Gemini wire refuses, as the API
// refuses a wrong key: 400 INVALID_ARGUMENT with the reason
// API_KEY_INVALID. A request without a key gets 403 PERMISSION_DENIED.
const GeminiInvalidKey = "invalid-key"

// geminiStatusNames are Google's canonical status names of the HTTP statuses.
var geminiStatusNames = map[int]string{
	400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
	409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 501: "NOT_IMPLEMENTED",
	503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}

// geminiError writes Google's error JSON.
func geminiError(w http.ResponseWriter, status int, message string, details ...any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(geminiErrorBody(status, message, details))
}

func geminiErrorBody(status int, message string, details []any) map[string]any {
	name, ok := geminiStatusNames[status]
	if !ok {
		name = "UNKNOWN"
	}
	e := map[string]any{"code": status, "message": message, "status": name}
	if len(details) > 0 {
		e["details"] = details
	}
	return map[string]any{"error": e}
}

// gemini answers POST /v1beta/models/{model}:streamGenerateContent with
// the next reply, streamed as the API streams with alt=sse: thought
// deltas, text deltas, then the function calls together, each answer a
// GenerateContentResponse; and :generateContent with the same reply as
// one GenerateContentResponse. A call's Input must be a JSON object (the
// API cannot send anything else): one that is not ends the answer with
// MALFORMED_FUNCTION_CALL, as Gemini does. Calls come without ids, as
// Gemini's usually do. The first call of an answer carries a thought
// signature, as does the end of an answer with thoughts and no calls; for
// a gemini-3 model, a request whose current turn drops or alters the
// signature of a call is refused as Gemini 3 refuses it.
//
// A :generateContent request asking for JSON (generationConfig
// responseMimeType application/json) is a harness's side question, not a
// model step: Gemini CLI's router and next-speaker checks. It gets
// [GeminiSideAnswer] as its text, takes no reply and is not among
// [Server.Requests], so that the script answers the streamed steps only.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request) {
	modelName, method, _ := strings.Cut(r.PathValue("call"), ":")
	body, _ := io.ReadAll(r.Body)
	if method == "generateContent" && geminiWantsJSON(body) {
		if geminiKeyRefused(w, r) {
			return
		}
		answer := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": GeminiSideAnswer}}},
			"finishReason": "STOP", "index": 0}
		writeJSON(w, http.StatusOK, map[string]any{"candidates": []any{answer}, "modelVersion": modelName, "responseId": "fake-side",
			"usageMetadata": map[string]any{"promptTokenCount": Tokens(body), "candidatesTokenCount": 20, "totalTokenCount": Tokens(body) + 20}})
		return
	}
	s.keep(body)
	if n, window, over := s.overWindow(body); over {
		geminiError(w, http.StatusBadRequest, fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", n, window))
		return
	}
	streamed := method == "streamGenerateContent"
	if !streamed && method != "generateContent" {
		geminiError(w, http.StatusNotFound, fmt.Sprintf("method %q of models/%s is not served by this fake", method, modelName))
		return
	}
	reply := s.take()
	if geminiKeyRefused(w, r) {
		return
	}
	if strings.HasPrefix(modelName, "gemini-3") {
		if msg := geminiUnsignedCall(body); msg != "" {
			geminiError(w, http.StatusBadRequest, msg)
			return
		}
	}
	if !wait(r, reply) {
		return
	}
	ge := reply.GeminiError
	if ge == nil {
		ge = &GeminiError{}
	}
	if reply.Status != 0 && (!ge.InStream || !streamed) {
		geminiError(w, reply.Status, ge.message(reply.Status), ge.details()...)
		return
	}
	if streamed {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	}

	nonce := make([]byte, 8)
	rand.Read(nonce)
	respID := hex.EncodeToString(nonce)
	usage := reply.GeminiUsage
	if u := reply.Usage; usage == nil && u != nil {
		// The wire-neutral figures in Gemini's fields: the prompt counts
		// its cached part, the candidates do not count the thoughts.
		usage = &GeminiUsage{PromptTokenCount: int(u.Input + u.CacheRead + u.CacheWrite), CachedContentTokenCount: int(u.CacheRead),
			CandidatesTokenCount: int(u.Output - u.Reasoning), ThoughtsTokenCount: int(u.Reasoning)}
	}
	if usage == nil {
		usage = &GeminiUsage{PromptTokenCount: 10, CandidatesTokenCount: 5, ThoughtsTokenCount: 4 * len(reply.Thoughts)}
	}
	partial := map[string]any{"promptTokenCount": usage.PromptTokenCount, "totalTokenCount": usage.PromptTokenCount}
	var whole []any // a generateContent answer's parts, gathered
	send := func(parts []any, finish string, usageMetadata any) {
		if !streamed {
			whole = geminiGather(whole, parts)
			if finish == "" {
				return
			}
			parts = whole
		}
		// An answer without parts has none in its content, as the API
		// leaves an empty list out: Gemini CLI takes a null list for one
		// with parts and fails on it.
		content := map[string]any{"role": "model"}
		if len(parts) > 0 {
			content["parts"] = parts
		}
		cand := map[string]any{"content": content, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		answer := map[string]any{"candidates": []any{cand}, "usageMetadata": usageMetadata, "modelVersion": modelName, "responseId": respID}
		if !streamed {
			writeJSON(w, http.StatusOK, answer)
			return
		}
		sse(w, "", answer)
	}
	for _, t := range reply.Thoughts {
		send([]any{map[string]any{"text": t, "thought": true}}, "", partial)
	}
	for i, t := range reply.Text {
		pace(r, reply, i)
		send([]any{map[string]any{"text": t}}, "", partial)
	}
	if ge.InStream && streamed {
		sse(w, "", geminiErrorBody(reply.Status, ge.message(reply.Status), ge.details()))
		return
	}
	var calls, last []any
	finish := "STOP"
	for i, c := range reply.Calls {
		var args map[string]any
		if json.Unmarshal([]byte(c.Input), &args) != nil || args == nil {
			finish = "MALFORMED_FUNCTION_CALL"
			break
		}
		part := map[string]any{"functionCall": map[string]any{"name": c.Name, "args": args}}
		if i == 0 {
			part["thoughtSignature"] = geminiCallSignature(c.Name, args)
		}
		calls = append(calls, part)
	}
	if len(calls) > 0 {
		send(calls, "", partial)
	}
	if len(reply.Calls) == 0 && len(reply.Thoughts) > 0 {
		// The signature of an answer without calls comes in a part of its
		// own, with no text, at the end.
		last = []any{map[string]any{"text": "", "thoughtSignature": geminiTextSignature(reply.Thoughts)}}
	}
	send(last, finish, map[string]any{
		"promptTokenCount":        usage.PromptTokenCount,
		"cachedContentTokenCount": usage.CachedContentTokenCount,
		"candidatesTokenCount":    usage.CandidatesTokenCount,
		"thoughtsTokenCount":      usage.ThoughtsTokenCount,
		"totalTokenCount":         usage.PromptTokenCount + usage.CandidatesTokenCount + usage.ThoughtsTokenCount,
	})
}

// GeminiSideAnswer is the text of the fake's answer to a Gemini request
// for JSON (a harness's side question, see the gemini wire): one object
// holding the fields Gemini CLI's router and next-speaker checks ask for,
// saying the task is simple, the user speaks next and the flash model
// will do.
const GeminiSideAnswer = `{"complexity_reasoning":"simple","complexity_score":1,"reasoning":"the user speaks next","next_speaker":"user","model_choice":"flash"}`

// geminiWantsJSON reports whether a request asks for a JSON answer.
func geminiWantsJSON(body []byte) bool {
	var req struct {
		GenerationConfig struct {
			ResponseMimeType string `json:"responseMimeType"`
		} `json:"generationConfig"`
	}
	return json.Unmarshal(body, &req) == nil && req.GenerationConfig.ResponseMimeType == "application/json"
}

// geminiKeyRefused refuses a request without a valid API key as the API
// does, and reports whether it did.
func geminiKeyRefused(w http.ResponseWriter, r *http.Request) bool {
	key := r.Header.Get("x-goog-api-key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	switch key {
	case "":
		geminiError(w, http.StatusForbidden, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
		return true
	case GeminiInvalidKey:
		geminiError(w, http.StatusBadRequest, "API key not valid. Please pass a valid API key.",
			map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"})
		return true
	}
	return false
}

// geminiGather adds an answer's parts to those gathered for one
// generateContent answer, joining text deltas into one part (thoughts
// apart), as the unstreamed API answers.
func geminiGather(whole, parts []any) []any {
	for _, p := range parts {
		part := p.(map[string]any)
		text, isText := part["text"].(string)
		if n := len(whole); isText && part["thoughtSignature"] == nil && n > 0 {
			prev := whole[n-1].(map[string]any)
			if prevText, ok := prev["text"].(string); ok && prev["thought"] == part["thought"] && prev["thoughtSignature"] == nil {
				whole[n-1] = with(prev, "text", prevText+text)
				continue
			}
		}
		whole = append(whole, part)
	}
	return whole
}

func (e *GeminiError) message(status int) string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("fake failure %d", status)
}

func (e *GeminiError) details() []any {
	if e.RetryDelay <= 0 {
		return nil
	}
	return []any{
		map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{
			map[string]any{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}}},
		map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": fmt.Sprintf("%gs", e.RetryDelay.Seconds())},
	}
}

// geminiCallSignature is the fake's thought signature of a call: opaque bytes
// (not text), the same for the same call, so that it can be checked.
func geminiCallSignature(name string, args map[string]any) string {
	b, _ := json.Marshal(args)
	sum := sha256.Sum256([]byte("fake signature\x00" + name + "\x00" + string(b)))
	return base64.StdEncoding.EncodeToString(sum[:20])
}

func geminiTextSignature(thoughts []string) string {
	sum := sha256.Sum256([]byte("fake signature\x00" + strings.Join(thoughts, "")))
	return base64.StdEncoding.EncodeToString(sum[:20])
}

// geminiUnsignedCall checks a request as Gemini 3 does: in the current
// turn (after the last user content with text), the first function call of
// every model content must carry the signature it came with. It returns
// the refusal's message, or "".
func geminiUnsignedCall(req []byte) string {
	var body struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text             *string `json:"text"`
				ThoughtSignature string  `json:"thoughtSignature"`
				FunctionCall     *struct {
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if json.Unmarshal(req, &body) != nil {
		return ""
	}
	turn := 0
	for i, c := range body.Contents {
		for _, p := range c.Parts {
			if c.Role == "user" && p.Text != nil {
				turn = i
			}
		}
	}
	for i, c := range body.Contents[turn:] {
		if c.Role != "model" {
			continue
		}
		for _, p := range c.Parts {
			if p.FunctionCall == nil {
				continue
			}
			if p.ThoughtSignature != geminiCallSignature(p.FunctionCall.Name, p.FunctionCall.Args) {
				return fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, "+
					"and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. "+
					"Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", p.FunctionCall.Name, turn+i+1)
			}
			break // only the first call of a content is signed
		}
	}
	return ""
}

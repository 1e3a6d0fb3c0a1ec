package fakemodel

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
)

// How the fake counts and caches, so that a test measures caching instead
// of assuming it:
//
//   - Tokens: a token per four bytes of the request's body as sent
//     ([Tokens]); a prefix's tokens are the bytes of its blocks' JSON over
//     four. The hard window ([Server.SetWindow]) compares a request's
//     Tokens with it.
//   - Anthropic: explicit breakpoints, as the Messages API documents them.
//     The prompt is tools, then system blocks, then messages' content
//     blocks, in that order; a block with cache_control is a breakpoint
//     (at most 4; none on thinking blocks). A prefix is identified by the
//     hash of the model and every block up to it, cache_control left out.
//     At each breakpoint the fake looks back, block by block, at most
//     [anthropicLookback] blocks, for a prefix an earlier request wrote:
//     the longest found is cache_read_input_tokens. Each breakpoint whose
//     prefix has [cacheMinTokens] or more is written;
//     cache_creation_input_tokens is what lies between the read and the
//     last breakpoint, when that one was not cached yet; input_tokens is
//     the rest. Entries never expire (the API's live five minutes, renewed
//     on each read).
//   - OpenAI: automatic prefix caching per prompt_cache_key (requests
//     without one share a cache): the prompt is the tools then the
//     messages, as sent; cached_tokens is the longest prefix shared with
//     an earlier request of the same key, counted as OpenAI counts it: 0
//     under [cacheMinTokens], else that many plus whole steps of
//     [openaiCacheStep] tokens.

// cacheMinTokens is the shortest prefix either API caches: 1,024 tokens
// (Anthropic's for Sonnet and Opus 4; its Haiku and Opus 4.5 want more).
const cacheMinTokens = 1024

// anthropicLookback is how many blocks before a breakpoint the Messages
// API checks for a prefix it cached, in its words "about 20".
const anthropicLookback = 20

// openaiCacheStep is the step, in tokens, in which OpenAI's cache hits
// grow past the first 1,024.
const openaiCacheStep = 128

// anthropicMaxBreakpoints is the most cache_control blocks a request may
// hold.
const anthropicMaxBreakpoints = 4

// Tokens is the fake's count of a request's tokens: a token per four bytes
// of its body, at least one.
func Tokens(body []byte) int64 { return max(1, int64(len(body)/4)) }

// SetWindow gives the fake a hard context window of this many tokens
// (counted by [Tokens]): a request over it is refused with the provider's
// own context-length error (Anthropic's 400 "prompt is too long: N tokens
// > M maximum", OpenAI's 400 context_length_exceeded, Gemini's 400 "The
// input token count (N) exceeds …"), before any scripted reply is taken.
// 0, the default, is no window.
func (s *Server) SetWindow(tokens int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.window = tokens
}

// overWindow returns the request's tokens and the window when the request
// does not fit it.
func (s *Server) overWindow(body []byte) (n, window int64, over bool) {
	s.mu.Lock()
	window = s.window
	s.mu.Unlock()
	n = Tokens(body)
	return n, window, window > 0 && n > window
}

// Usages returns the usage each complete Anthropic or OpenAI (chat or
// Responses) answer reported, in order (a request refused, failed or cut
// off reports none): what a test sums to measure the share of input read
// from the cache.
func (s *Server) Usages() []Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.usages)
}

// reported remembers an answer's usage.
func (s *Server) reported(u Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usages = append(s.usages, u)
}

// caches is what the fake's prompt caches hold. The Server's mutex guards
// it.
type caches struct {
	anthropic map[[sha256.Size]byte]bool // prefixes written at breakpoints
	openai    map[string]map[uint64]bool // prompt_cache_key → prefixes seen, at each step
}

// anthropicBlock is a content block (or a tool, or a system block) of a
// Messages API request: its top-level fields, undecoded. A content given
// as a string is one text block.
type anthropicBlock map[string]json.RawMessage

// anthropicContent is a message's content or the system prompt: a string,
// or blocks.
type anthropicContent []anthropicBlock

// UnmarshalJSON reads a string as one text block.
func (c *anthropicContent) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*c = anthropicContent{{"type": json.RawMessage(`"text"`), "text": b}}
		return nil
	}
	return json.Unmarshal(b, (*[]anthropicBlock)(c))
}

// str is the block's field as a string, "" if it is not one.
func (b anthropicBlock) str(key string) string {
	var s string
	_ = json.Unmarshal(b[key], &s)
	return s
}

// size is the length of the block's JSON, cache_control left out.
func (b anthropicBlock) size() int64 {
	n := int64(1) // the braces, less the last comma
	for k, v := range b {
		if k != "cache_control" {
			n += int64(len(k) + 3 + len(v) + 1) // "k":v,
		}
	}
	return n
}

// anthropicPrefix is one block boundary of a request's prompt: the hash of
// everything up to and including the block, its tokens, and whether the
// block is a breakpoint.
type anthropicPrefix struct {
	hash   [sha256.Size]byte
	tokens int64
	marked bool
}

// anthropicPrefixes are the block boundaries of a request, in the API's
// order (tools, system, messages), or the API's refusal of its
// breakpoints.
func anthropicPrefixes(req *anthropicRequest) ([]anthropicPrefix, string) {
	var (
		out   []anthropicPrefix
		prev  [sha256.Size]byte
		bytes int64
		marks int
	)
	prev = sha256.Sum256([]byte("model\x00" + req.Model))
	add := func(kind string, b anthropicBlock) {
		h := sha256.New()
		h.Write(prev[:])
		h.Write([]byte(kind))
		keys := make([]string, 0, len(b))
		for k := range b {
			if k != "cache_control" {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			h.Write([]byte(k))
			h.Write([]byte{0})
			h.Write(b[k])
			h.Write([]byte{0})
		}
		h.Sum(prev[:0])
		bytes += b.size()
		_, marked := b["cache_control"]
		if marked {
			marks++
		}
		out = append(out, anthropicPrefix{hash: prev, tokens: bytes / 4, marked: marked})
	}
	for _, t := range req.Tools {
		add("\x00tool\x00", t)
	}
	for _, b := range req.System {
		add("\x00system\x00", b)
	}
	for i, m := range req.Messages {
		for j, b := range m.Content {
			if _, ok := b["cache_control"]; ok {
				if typ := b.str("type"); typ == "thinking" || typ == "redacted_thinking" {
					return nil, fmt.Sprintf("messages.%d.content.%d.%s.cache_control: Extra inputs are not permitted", i, j, typ)
				}
			}
			kind := "\x00block\x00"
			if j == 0 {
				kind = "\x00message\x00" + m.Role + "\x00"
			}
			add(kind, b)
		}
	}
	if marks > anthropicMaxBreakpoints {
		return nil, fmt.Sprintf("A maximum of %d blocks with cache_control may be provided. Found %d.", anthropicMaxBreakpoints, marks)
	}
	return out, ""
}

// anthropicCache works out what a request reads from the cache and writes
// to it, and returns the writes to commit once the request is answered.
func (s *Server) anthropicCache(prefixes []anthropicPrefix) (read, write int64, commit func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := -1
	for b, p := range prefixes {
		if !p.marked {
			continue
		}
		last = b
		for j := b; j >= 0 && j > b-anthropicLookback; j-- {
			if s.cache.anthropic[prefixes[j].hash] {
				read = max(read, prefixes[j].tokens)
				break
			}
		}
	}
	if last >= 0 && !s.cache.anthropic[prefixes[last].hash] && prefixes[last].tokens >= cacheMinTokens {
		write = prefixes[last].tokens - read
	}
	return read, write, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.cache.anthropic == nil {
			s.cache.anthropic = map[[sha256.Size]byte]bool{}
		}
		for _, p := range prefixes {
			if p.marked && p.tokens >= cacheMinTokens {
				s.cache.anthropic[p.hash] = true
			}
		}
	}
}

// openaiRequest is what the fake reads of a chat completions request.
type openaiRequest struct {
	Model          string            `json:"model"`
	Messages       []json.RawMessage `json:"messages"`
	Tools          []json.RawMessage `json:"tools"`
	PromptCacheKey string            `json:"prompt_cache_key"`
}

// openaiCache works out the cached tokens of a request, and returns the
// prefixes to remember once it is answered.
func (s *Server) openaiCache(req *openaiRequest) (cached int64, commit func()) {
	var prompt []byte
	for _, t := range req.Tools {
		prompt = append(prompt, t...)
	}
	for _, m := range req.Messages {
		prompt = append(prompt, m...)
	}
	h := fnv.New64a()
	h.Write([]byte(req.Model + "\x00"))
	var steps []uint64 // the hash of the prompt's first cacheMinTokens + k·step tokens
	done := 0
	for n := cacheMinTokens * 4; n <= len(prompt); n += openaiCacheStep * 4 {
		h.Write(prompt[done:n])
		done = n
		steps = append(steps, h.Sum64())
	}
	s.mu.Lock()
	seen := s.cache.openai[req.PromptCacheKey]
	for k, sum := range steps {
		if !seen[sum] {
			break
		}
		cached = int64(cacheMinTokens + k*openaiCacheStep)
	}
	s.mu.Unlock()
	return cached, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.cache.openai == nil {
			s.cache.openai = map[string]map[uint64]bool{}
		}
		seen := s.cache.openai[req.PromptCacheKey]
		if seen == nil {
			seen = map[uint64]bool{}
			s.cache.openai[req.PromptCacheKey] = seen
		}
		for _, sum := range steps {
			seen[sum] = true
		}
	}
}

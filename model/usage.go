package model

// Usage is what one model call consumed, as its provider reported it,
// normalised so that every provider's figures mean the same:
//
//   - InputTokens is input read at the full price: neither read from the
//     prompt cache nor written to it (Anthropic's input_tokens; OpenAI's
//     prompt_tokens less its cached_tokens; Gemini's promptTokenCount less
//     cachedContentTokenCount).
//   - OutputTokens is every token generated, reasoning included (OpenAI's
//     completion_tokens; Gemini's candidatesTokenCount plus
//     thoughtsTokenCount); ReasoningTokens is the part of it spent on
//     reasoning, where the provider says.
//   - CacheReadTokens and CacheWriteTokens are input read from and written
//     to the prompt cache.
//
// So a call's cost is each figure times its price, and InputTokens +
// CacheReadTokens + CacheWriteTokens is the whole prompt.
type Usage struct {
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	ReasoningTokens  int64
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens:  u.ReasoningTokens + v.ReasoningTokens,
	}
}

// PromptTokens is the whole prompt the call sent: full-price input and
// cached input together.
func (u Usage) PromptTokens() int64 { return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens }

// Total is every token of the call, in and out.
func (u Usage) Total() int64 { return u.PromptTokens() + u.OutputTokens }

// End closes a streamed answer: the last chunk a provider yields when the
// stream ended normally. Usage is nil when the provider reported none (some
// OpenAI-compatible servers).
type End struct {
	Usage *Usage
	// Model is the model that answered, as the provider names it (it may
	// be more precise than the configured name).
	Model string
	// StopReason is why the answer ended, in the provider's words
	// ("end_turn", "tool_use", "stop", "length", "STOP", …).
	StopReason string
}

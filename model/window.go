package model

// Windows are models' context windows, in tokens: the most a request
// (its system prompt, tools and messages) and its answer may hold
// together. Names resolve as [Prices.Lookup]'s do: a snapshot finds its
// model.
type Windows map[string]int64

// Lookup finds name's window.
func (ws Windows) Lookup(name string) (int64, bool) { return lookup(ws, name) }

// DefaultWindows is the shipped table of context windows, as the
// providers published them on [PricesTaken]. A model with a larger
// window in beta (Anthropic's 1M-token Sonnet) has its standard one here;
// agent.yaml's model.contextWindow sets another.
func DefaultWindows() Windows {
	return Windows{
		"claude-opus-4-5":   200_000,
		"claude-opus-4-1":   200_000,
		"claude-opus-4":     200_000,
		"claude-sonnet-4-5": 200_000,
		"claude-sonnet-4":   200_000,
		"claude-3-7-sonnet": 200_000,
		"claude-haiku-4-5":  200_000,
		"claude-3-5-haiku":  200_000,

		"gpt-5":        400_000,
		"gpt-5-mini":   400_000,
		"gpt-5-nano":   400_000,
		"gpt-4.1":      1_047_576,
		"gpt-4.1-mini": 1_047_576,
		"gpt-4.1-nano": 1_047_576,
		"gpt-4o":       128_000,
		"gpt-4o-mini":  128_000,
		"o3":           200_000,
		"o4-mini":      200_000,

		"gemini-2.5-pro":        1_048_576,
		"gemini-2.5-flash":      1_048_576,
		"gemini-2.5-flash-lite": 1_048_576,
		"gemini-2.0-flash":      1_048_576,
	}
}

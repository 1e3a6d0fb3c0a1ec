package anthropic

import (
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// markCache places the request's prompt-cache breakpoints (cache_control:
// ephemeral), at most the API's four, where the next request will share
// the prefix:
//
//  1. the last tool: the tools are the start of every request's prompt;
//  2. the system prompt's last block: tools and system are a prefix that
//     stays while the conversation changes (compacted, say);
//  3. the last block of the last message: the next call of the turn, or
//     the next turn, reads everything up to here from the cache;
//  4. the last block of the message before the last assistant message:
//     where the previous request put (3), so that the cache it wrote is
//     read even when the answer since then holds more blocks than the
//     API looks back over (about 20, many parallel tool calls).
//
// Thinking blocks cannot carry a breakpoint: a message's last block that
// can is marked instead. The tools are marked in the order given: a
// caller that lists them stably (the host lists them by name) keeps the
// prefix; sorting them here would hide an unstable order from this
// provider only.
func markCache(params *sdk.MessageNewParams) {
	if n := len(params.Tools); n > 0 {
		if cc := params.Tools[n-1].GetCacheControl(); cc != nil {
			*cc = sdk.NewCacheControlEphemeralParam()
		}
	}
	if n := len(params.System); n > 0 {
		params.System[n-1].CacheControl = sdk.NewCacheControlEphemeralParam()
	}
	msgs := params.Messages
	last := len(msgs) - 1
	if last < 0 {
		return
	}
	markLast(msgs[last])
	for i := last - 1; i > 0; i-- {
		if isAssistant(msgs[i]) {
			for j := i - 1; j >= 0 && !markLast(msgs[j]); j-- {
			}
			return
		}
	}
}

// markLast puts a breakpoint on the last block of m that can carry one,
// and reports whether there was one.
func markLast(m sdk.MessageParam) bool {
	var blocks []sdk.ContentBlockParamUnion
	switch {
	case m.OfUser != nil:
		blocks = m.OfUser.Content
	case m.OfAssistant != nil:
		blocks = m.OfAssistant.Content
	}
	for k := len(blocks) - 1; k >= 0; k-- {
		b := blocks[k]
		if b.OfText != nil && b.OfText.Text == "" {
			continue // the API refuses a breakpoint on an empty text block
		}
		if cc := b.GetCacheControl(); cc != nil { // nil for thinking blocks
			*cc = sdk.NewCacheControlEphemeralParam()
			return true
		}
	}
	return false
}

func isAssistant(m sdk.MessageParam) bool { return m.OfAssistant != nil }

package openai

// The fake this package's tests talk to, on loopback, stands for OpenAI
// itself: it is sent prompt_cache_key.
func init() { cacheKeyHosts["127.0.0.1"] = true }

// TakesCacheKey is takesCacheKey, for the tests.
var TakesCacheKey = takesCacheKey

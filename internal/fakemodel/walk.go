package fakemodel

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// A walk over a request's JSON that finds its members and elements
// without decoding or copying them: the fake reads every request of a
// long session, and encoding/json would cost it several passes over the
// body (validation, then each level). It trusts its input to be JSON (the
// SDKs write it); a walk that fails says so, and the caller decodes
// instead.

// members calls f with each member of the object b: its key and its raw
// value, a slice of b. It reports whether b is an object it could walk.
func members(b []byte, f func(key string, value []byte)) bool {
	i := space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = space(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) {
		if b[i] != '"' {
			return false
		}
		end := skipString(b, i)
		if end < 0 {
			return false
		}
		key := string(b[i+1 : end-1])
		if (bytes.IndexByte(b[i:end], '\\') >= 0 || !utf8.Valid(b[i:end])) && json.Unmarshal(b[i:end], &key) != nil {
			return false
		}
		i = space(b, end)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		start := space(b, i+1)
		end = skip(b, start)
		if end < 0 {
			return false
		}
		f(key, b[start:end])
		i = space(b, end)
		switch {
		case i < len(b) && b[i] == ',':
			i = space(b, i+1)
		case i < len(b) && b[i] == '}':
			return true
		default:
			return false
		}
	}
	return false
}

// elements calls f with each element of the array b, a slice of b. It
// reports whether b is an array it could walk.
func elements(b []byte, f func(value []byte)) bool {
	i := space(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = space(b, i+1)
	if i < len(b) && b[i] == ']' {
		return true
	}
	for i < len(b) {
		end := skip(b, i)
		if end < 0 {
			return false
		}
		f(b[i:end])
		i = space(b, end)
		switch {
		case i < len(b) && b[i] == ',':
			i = space(b, i+1)
		case i < len(b) && b[i] == ']':
			return true
		default:
			return false
		}
	}
	return false
}

// skip returns the end of the value that starts at b[i], or -1.
func skip(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = skipString(b, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	for i < len(b) && bytes.IndexByte([]byte(",}] \t\r\n"), b[i]) < 0 {
		i++ // a number, true, false or null
	}
	return i
}

// skipString returns the end of the string that starts at b[i], or -1.
func skipString(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		escapes := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			escapes++
		}
		if escapes%2 == 0 {
			return j + 1
		}
		j++
	}
}

// space skips white space from b[i].
func space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// walkAnthropic reads what the fake needs of a Messages API request;
// false means it could not, and the caller decodes it instead.
func walkAnthropic(body []byte, req *anthropicRequest) bool {
	ok := true
	check := func(walked bool) { ok = ok && walked }
	block := func(v []byte) anthropicBlock {
		b := anthropicBlock{}
		check(members(v, func(k string, v []byte) { b[k] = v }))
		return b
	}
	content := func(v []byte) anthropicContent {
		if len(v) > 0 && v[0] == '"' {
			return anthropicContent{{"type": json.RawMessage(`"text"`), "text": v}}
		}
		var c anthropicContent
		check(elements(v, func(v []byte) { c = append(c, block(v)) }))
		return c
	}
	check(members(body, func(k string, v []byte) {
		switch k {
		case "model":
			check(json.Unmarshal(v, &req.Model) == nil)
		case "max_tokens":
			check(json.Unmarshal(v, &req.MaxTokens) == nil)
		case "thinking":
			check(json.Unmarshal(v, &req.Thinking) == nil)
		case "tools":
			req.Tools = nil // the last of a repeated key, as encoding/json
			check(elements(v, func(v []byte) { req.Tools = append(req.Tools, block(v)) }))
		case "system":
			req.System = content(v)
		case "messages":
			req.Messages = nil
			check(elements(v, func(v []byte) {
				var m anthropicMessage
				check(members(v, func(k string, v []byte) {
					switch k {
					case "role":
						check(json.Unmarshal(v, &m.Role) == nil)
					case "content":
						m.Content = content(v)
					}
				}))
				req.Messages = append(req.Messages, m)
			}))
		}
	}))
	return ok
}

// walkOpenAI reads what the fake needs of a chat completions request;
// false means it could not, and the caller decodes it instead.
func walkOpenAI(body []byte, req *openaiRequest) bool {
	ok := true
	check := func(walked bool) { ok = ok && walked }
	check(members(body, func(k string, v []byte) {
		switch k {
		case "model":
			check(json.Unmarshal(v, &req.Model) == nil)
		case "prompt_cache_key":
			check(json.Unmarshal(v, &req.PromptCacheKey) == nil)
		case "messages":
			req.Messages = nil
			check(elements(v, func(v []byte) { req.Messages = append(req.Messages, v) }))
		case "tools":
			req.Tools = nil
			check(elements(v, func(v []byte) { req.Tools = append(req.Tools, v) }))
		}
	}))
	return ok
}

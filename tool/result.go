package tool

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// Result is a rich tool result in the shape of MCP's CallToolResult: a list
// of content items and whether the call failed. A handler that returns a
// Result (or *Result) has it passed on as is.
type Result struct {
	Content []Content `json:"content"`
	// StructuredContent is an optional JSON value beside the content.
	StructuredContent any  `json:"structuredContent,omitempty"`
	IsError           bool `json:"isError,omitempty"`
}

// Content is one item of a [Result]: text, an image, audio, or an embedded
// resource. Build them with [Text], [Image], [Audio] and [EmbeddedResource].
type Content struct {
	Type     string    `json:"type"` // "text", "image", "audio" or "resource"
	Text     string    `json:"text,omitempty"`
	Data     string    `json:"data,omitempty"` // base64, for image and audio
	MimeType string    `json:"mimeType,omitempty"`
	Resource *Resource `json:"resource,omitempty"`
}

// Resource is an embedded resource: text or a base64 blob, named by a URI.
type Resource struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"` // base64
}

// Text returns a text content item.
func Text(s string) Content { return Content{Type: "text", Text: s} }

// Image returns an image content item holding data, base64-encoded.
func Image(data []byte, mimeType string) Content {
	return Content{Type: "image", Data: base64.StdEncoding.EncodeToString(data), MimeType: mimeType}
}

// Audio returns an audio content item holding data, base64-encoded.
func Audio(data []byte, mimeType string) Content {
	return Content{Type: "audio", Data: base64.StdEncoding.EncodeToString(data), MimeType: mimeType}
}

// EmbeddedResource returns a resource content item.
func EmbeddedResource(r Resource) Content { return Content{Type: "resource", Resource: &r} }

// validate checks that every content item is complete.
func (r *Result) validate() error {
	for i, c := range r.Content {
		if err := c.validate(); err != nil {
			return fmt.Errorf("content[%d]: %w", i, err)
		}
	}
	return nil
}

func (c Content) validate() error {
	switch c.Type {
	case "text":
		return nil
	case "image", "audio":
		if c.MimeType == "" {
			return fmt.Errorf("%s content needs a mimeType", c.Type)
		}
		if _, err := base64.StdEncoding.DecodeString(c.Data); err != nil {
			return fmt.Errorf("%s content data is not base64: %w", c.Type, err)
		}
		return nil
	case "resource":
		if c.Resource == nil || c.Resource.URI == "" {
			return errors.New("resource content needs a resource with a uri")
		}
		return nil
	case "":
		return errors.New("content item has no type")
	}
	return fmt.Errorf("unknown content type %q (want text, image, audio or resource)", c.Type)
}

// Output is a call's normalised result.
type Output struct {
	// Result is JSON: the string a handler returned, the [Result] envelope it
	// returned, or any other value encoded; for a failed call, a string
	// saying what went wrong.
	Result json.RawMessage
	// IsError reports a failed call: the handler returned an error,
	// panicked, timed out, returned a Result with IsError, or returned a
	// value that cannot be encoded as JSON.
	IsError bool
}

// ErrorOutput returns the Output of a failed call with message as its result.
func ErrorOutput(message string) Output {
	b, _ := json.Marshal(message) // a string always encodes
	return Output{Result: b, IsError: true}
}

// normalise turns what a handler returned into an Output, refusing a
// result over limit (0: none) before it is encoded where it can tell.
func normalise(v any, err error, limit int64) Output {
	if err != nil {
		return ErrorOutput(err.Error())
	}
	size := int64(0)
	if limit > 0 {
		if size = sizeAtLeast(v, limit); size > limit {
			return tooLarge(size, limit, true)
		}
	}
	out := normaliseValue(v, int(size))
	if limit > 0 && int64(len(out.Result)) > limit {
		return tooLarge(int64(len(out.Result)), limit, false)
	}
	return out
}

// normaliseValue encodes what a handler returned; size is a lower bound of
// its length when known (0: not).
func normaliseValue(v any, size int) Output {
	switch v := v.(type) {
	case string:
		return Output{Result: appendJSONString(make([]byte, 0, max(size+size/8, len(v)+2)), v)}
	case Result:
		return normaliseResult(&v)
	case *Result:
		if v == nil {
			return Output{Result: json.RawMessage("null")}
		}
		return normaliseResult(v)
	case json.RawMessage:
		if !json.Valid(v) {
			return ErrorOutput("the tool returned a json.RawMessage that is not valid JSON")
		}
		return Output{Result: v}
	}
	if encodable(v) {
		if b, ok := appendJSON(make([]byte, 0, max(size+size/8, 64)), v, 0); ok {
			return Output{Result: b}
		}
	}
	b, merr := json.Marshal(v)
	if merr != nil {
		return ErrorOutput("the tool's result cannot be encoded as JSON: " + merr.Error())
	}
	return Output{Result: b}
}

func normaliseResult(r *Result) Output {
	if err := r.validate(); err != nil {
		return ErrorOutput("the tool returned an invalid Result: " + err.Error())
	}
	if r.Content == nil {
		r = &Result{Content: []Content{}, StructuredContent: r.StructuredContent, IsError: r.IsError}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return ErrorOutput("the tool's result cannot be encoded as JSON: " + err.Error())
	}
	return Output{Result: b, IsError: r.IsError}
}

package tool

import (
	"slices"
	"strconv"
	"strings"

	"github.com/agentsdk/agentsdk/internal/jsonscan"
)

// maxDuplicateKeys bounds the duplicate keys one error lists.
const maxDuplicateKeys = 20

// duplicateKeyMessage is the violation of a key an object repeats.
const duplicateKeyMessage = "is a duplicate key: an object may have each key only once"

// duplicateKeys refuses input in which an object repeats a key, at any
// depth, listing each repeated key once, in the order they come; "a" and "\u0061" counting as the same key. JSON decoders keep
// the last value of a repeated key, or the first, or fail, so such input
// means different things to whoever reads it: a person approving
// {"environment":"staging","environment":"production"} would see staging
// while the tool ran with production. It returns nil for input without
// repeated keys, and for text that is not JSON, which the validator
// refuses with the reason.
func (t *Tool) duplicateKeys(raw []byte) *InputError {
	found, err := jsonscan.DuplicateKeys(raw, maxDuplicateKeys)
	if err != nil || len(found) == 0 {
		return nil
	}
	vs := make([]Violation, 0, len(found))
	for _, p := range found {
		v := Violation{Path: stepsPath(p), Message: duplicateKeyMessage}
		if !slices.Contains(vs, v) { // a key repeated more than once
			vs = append(vs, v)
		}
	}
	return &InputError{Tool: t.name, Violations: vs}
}

// stepsPath renders a path in the notation of [Violation.Path]:
// input.items[2].name.
func stepsPath(p []jsonscan.Step) string {
	var b strings.Builder
	b.WriteString("input")
	for _, s := range p {
		if s.Index >= 0 {
			b.WriteString("[" + strconv.Itoa(s.Index) + "]")
		} else {
			b.WriteString(propertySuffix(s.Key))
		}
	}
	return b.String()
}

package api_test

import (
	"strings"
	"testing"
)

func TestProbe(t *testing.T) {
	b := string(generate(t))
	i := strings.Index(b, `"components"`)
	for _, bad := range []string{`"type": "strnig"`, `"$ref": "#/components/schemas/Nope"`} {
		s := b[:i] + strings.Replace(b[i:], `"type": "boolean"`, bad, 1)
		t.Run(bad, func(t *testing.T) { checkSchemas(t, []byte(s)) })
	}
}

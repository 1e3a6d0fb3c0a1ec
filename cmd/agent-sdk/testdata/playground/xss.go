package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

// xss returns markup in its result, as a page it fetched might: the
// playground must show it as text.
var _ = tool.Define(tool.Config{
	Description: "Fetch a page's title (its result holds markup).",
}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
	return map[string]string{
		"title":   "<script>alert(1)</script>",
		"snippet": "<img src=x onerror=alert(2)>",
	}, nil
})

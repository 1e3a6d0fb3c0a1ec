package badtools

import "github.com/agentsdk/agentsdk/tool"

type other struct {
	N int `json:"n"`
}

// Mismatch has an approval predicate over the wrong input type.
var Mismatch = tool.Define(tool.Config{
	Description:   "a tool whose approval predicate takes another type",
	NeedsApproval: tool.When(func(in other) bool { return in.N > 1 }),
}, handle)

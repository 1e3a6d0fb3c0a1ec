package badtools

import "github.com/agentsdk/agentsdk/tool"

// BadName is defined in a file whose name is not a valid tool name.
var BadName = tool.Define(tool.Config{Description: "a tool named after a bad file name"}, handle)

package tools

import (
	"context"
	"strings"

	"github.com/agentsdk/agentsdk/tool"
)

// ReportInput is report's input.
type ReportInput struct {
	Quarter string `json:"quarter" jsonschema:"such as Q3"`
}

// report leaves an artifact in its session: reports/<quarter>.txt.
var _ = tool.Define(tool.Config{
	Description: "Write a quarterly report as an artifact of the session.",
}, func(ctx context.Context, call *tool.Call, in ReportInput) (any, error) {
	name := "reports/" + in.Quarter + ".txt"
	body := "Quarterly report " + in.Quarter + "\nwidgets sold: 42\n"
	info, err := call.Artifacts.Put(ctx, name, strings.NewReader(body), &tool.FilePutOptions{ContentType: "text/plain; charset=utf-8"})
	if err != nil {
		return nil, err
	}
	return map[string]any{"artifact": info.Name, "size": info.Size}, nil
})

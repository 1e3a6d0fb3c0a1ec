package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

// ConfigureTarget is a nested object of configure's input.
type ConfigureTarget struct {
	Region   string `json:"region" jsonschema:"enum=eu-west,enum=us-east,enum=ap-south,description=where it runs"`
	Replicas int    `json:"replicas" jsonschema:"minimum=1,maximum=9,description=how many copies"`
}

// ConfigureInput is configure's input: the playground makes a form of it
// (a text field, a fieldset with a select and a number, a list of text
// fields and a checkbox).
type ConfigureInput struct {
	Service string          `json:"service" jsonschema:"the service to configure"`
	Target  ConfigureTarget `json:"target"`
	Tags    []string        `json:"tags,omitempty" jsonschema:"labels to attach"`
	DryRun  bool            `json:"dryRun,omitempty" jsonschema:"only say what would change"`
}

// configure answers what it was given.
var _ = tool.Define(tool.Config{
	Description: "Configure a service's placement (a typed input for the playground's form).",
}, func(ctx context.Context, call *tool.Call, in ConfigureInput) (any, error) {
	return map[string]any{"configured": in.Service, "region": in.Target.Region, "replicas": in.Target.Replicas, "tags": in.Tags, "dryRun": in.DryRun}, nil
})

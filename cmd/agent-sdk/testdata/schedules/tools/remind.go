package tools

import (
	"context"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// RemindInput is remind's input.
type RemindInput struct {
	Key     string `json:"key"`
	InMs    int    `json:"inMs"`
	Message string `json:"message"`
}

// remind sets a reminder on the calling session, due in InMs.
var _ = tool.Define(tool.Config{Description: "Wake this session later with a message."}, func(ctx context.Context, call *tool.Call, in RemindInput) (tool.Reminder, error) {
	return call.Host.Reminders.Set(ctx, in.Key, time.Now().Add(time.Duration(in.InMs)*time.Millisecond), in.Message)
})

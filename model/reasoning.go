package model

// ReasoningEfforts are the values [Config.ReasoningEffort] takes, least
// reasoning first.
var ReasoningEfforts = []string{"minimal", "low", "medium", "high"}

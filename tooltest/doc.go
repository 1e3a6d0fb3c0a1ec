// Package tooltest runs an agent's tools in a Go test the way a host's
// direct call runs them — the same validation, the same approval
// predicate, the same [tool.Tool.Run] (timeout, panics, result
// normalisation, output checks) — with the host's services in memory: no
// host, no store, no HTTP, no model. A tool's test runs in milliseconds
// under go test.
//
// In the package that defines the tools (agent/tools), where
// [tool.Registered] sees them:
//
//	func TestInspectPR(t *testing.T) {
//		out := tooltest.Call(t, "inspect_pr", `{"prUrl":"https://github.com/acme/checkout/pull/42"}`)
//		if out.Err != nil || out.IsError {
//			t.Fatalf("inspect_pr: %v", out)
//		}
//		var report struct{ Ready bool }
//		out.Decode(t, &report)
//	}
//
// A kit made with [New] keeps its services between calls, so a test can
// seed them and look at them afterwards: [Kit.KV] and [Kit.Files] (and the
// session's [Kit.Artifacts], [Kit.Reminders]) are the call.Host services a
// handler reaches, held in memory; the messages a tool sends with
// call.Send are recorded ([Kit.Sent]), and so are the tools it calls with
// call.CallTool ([Kit.ToolCalls]), which run through the kit as well
// unless [Options.Stubs] answers for them.
//
// An [Outcome] is what a direct call reports: the envelope (ToolName,
// CallID, IsError, Result, DurationMs); for a call that did not run, Err
// is the *api.Error a host returns (unknown_tool, agent_tool,
// invalid_input with every violation, for errors.As to the tool package's
// typed errors). A call whose tool needs approval for that input does not
// run: its Outcome is Parked, as a host would park it, and
// [Kit.CallApproved] runs it as a person's approval would.
//
// The kit links neither package host nor a store. What it leaves out: the
// tools' concurrency limits (MaxConcurrent, Exclusive), session streams
// (no events are recorded, and Follow has nothing to follow unless
// [Options.Follow] says), agent tools (scripts, which a direct call
// refuses too), and durability.
package tooltest

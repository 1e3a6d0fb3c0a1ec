package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/agentsdk/agentsdk/internal/define"
)

// TimeoutDefault is how long a call may run when [Config.Timeout] is zero.
const TimeoutDefault = 60 * time.Second

// Execution is where a tool runs.
type Execution string

const (
	// Server tools run in the host's process.
	Server Execution = "server"
	// Agent tools are scripts that run where the agent runs, with their
	// JSON input on stdin and their result on stdout.
	Agent Execution = "agent"
)

// Config describes a tool to [Define], [New], [DefineScript] or [NewScript].
type Config struct {
	// Description tells the model what the tool does and when to use it.
	// It is required; [agentsdk.Prompt] helps with long ones.
	Description string

	// InputSchema is the input's JSON Schema, for handlers whose input is
	// json.RawMessage and for agent tools: [RawSchema] or [SchemaOf]. For
	// other handlers it is inferred from the input type and must be left
	// zero. Without it, a raw handler or a script accepts any object.
	InputSchema Schema

	// NeedsApproval gates calls on a person's sign-off: [Always], or
	// [When] with a predicate over the validated input.
	NeedsApproval Approval

	// Approval is who may decide the tool's parked calls: roles,
	// four-eyes, a quorum, whether an approver may edit the input. Nil:
	// one decision by anyone with the approve permission, as without
	// policies. See [ApprovalPolicy].
	Approval *ApprovalPolicy

	// Timeout bounds each call; zero means [TimeoutDefault].
	Timeout time.Duration

	// ApprovalTimeout is how long a call waiting for approval stays
	// pending before it expires (and counts as denied); zero means the
	// host's default.
	ApprovalTimeout time.Duration

	// MaxConcurrent bounds how many calls of the tool run at once on a
	// host, across model turns, direct calls and sessions; zero means no
	// bound. See limits.go.
	MaxConcurrent int
	// Exclusive runs calls one at a time per session ([PerSession]) or per
	// key from the input ([ExclusiveBy]).
	Exclusive Exclusive
	// BusyWait is how long a call waits for its turn when the tool is at
	// a limit before it is refused as busy; zero means BusyWaitDefault.
	BusyWait time.Duration
	// MaxResultBytes caps a result's JSON; over it the call is an isError
	// result saying the limit and the size. Zero means the host's cap
	// (host.Options.MaxResultBytes, default MaxResultBytesDefault).
	MaxResultBytes int64

	// Callers are the roles (agent.yaml's auth.roles) whose principals may
	// call the tool directly, over HTTP or MCP; empty: every principal
	// whose roles have the call permission. A model turn's calls are not
	// affected: whoever may send the session a message may have its model
	// call the tool.
	Callers []string
}

// Tool is a defined tool. It is immutable and safe for concurrent use.
type Tool struct {
	name        string
	description string
	execution   Execution
	schema      *compiledSchema
	approval    Approval
	timeout     time.Duration
	approvalTTL time.Duration
	pos         string // file:line of the definition, "" if unknown
	script      string

	maxConcurrent  int
	exclusive      Exclusive
	busyWait       time.Duration
	maxResultBytes int64
	callers        []string
	policy         *ApprovalPolicy

	// decode decodes valid input into a *In, the handler's input type;
	// handler, approval and exclusive keys take that *In.
	decode func(json.RawMessage) (any, error)
	// decodeFlat, when In is flat (flatdecode.go), decodes input of its
	// usual shape faster; false: decode (and its checks) must.
	decodeFlat func(json.RawMessage) (any, bool)
	handler    func(context.Context, *Call, any) (any, error)
	output     *compiledSchema // nil: no declared output (output.go)

	// overrunning counts the handlers running on after Run returned
	// without them (Overrunning).
	overrunning atomic.Int64
}

// Info describes a tool to people, models and programs.
type Info struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Execution   Execution       `json:"execution"`
	// Approval is "never", "always" or "conditional" (decided per input).
	Approval string `json:"approval"`
	// OutputSchema is the JSON Schema of the tool's results, when its
	// handler returns a concrete object type; absent otherwise.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// ApprovalPolicy is who decides its parked calls ([Config.Approval]),
	// absent without a policy.
	ApprovalPolicy *ApprovalPolicy `json:"approvalPolicy,omitempty"`
}

// Name returns the tool's name, as models see it.
func (t *Tool) Name() string { return t.name }

// Description returns the description written for the model.
func (t *Tool) Description() string { return t.description }

// InputSchema returns the input's JSON Schema.
func (t *Tool) InputSchema() json.RawMessage { return t.schema.raw }

// Execution returns where the tool runs.
func (t *Tool) Execution() Execution { return t.execution }

// Timeout returns how long a call may run.
func (t *Tool) Timeout() time.Duration { return t.timeout }

// ApprovalTimeout returns how long a parked call of this tool stays
// pending, or zero for the host's default.
func (t *Tool) ApprovalTimeout() time.Duration { return t.approvalTTL }

// Callers returns the roles that may call the tool directly ([Config.Callers]);
// empty means every caller with the call permission. The slice is the
// tool's own: do not change it.
func (t *Tool) Callers() []string { return t.callers }

// Script returns an agent tool's script, or "" for a server tool.
func (t *Tool) Script() string { return t.script }

// Position returns the file:line where the tool was defined, if known.
func (t *Tool) Position() string { return t.pos }

// Approval returns "never", "always" or "conditional".
func (t *Tool) Approval() string { return t.approval.Mode() }

// Info describes the tool.
func (t *Tool) Info() Info {
	return Info{
		Name:         t.name,
		Description:  t.description,
		InputSchema:  t.schema.raw,
		Execution:    t.execution,
		Approval:     t.approval.Mode(),
		OutputSchema: t.OutputSchema(),

		ApprovalPolicy: t.policy.clone(),
	}
}

// Handler is the Go function behind a server tool. It receives the validated
// input; what it returns is normalised by [Tool.Run]. Out is any for a
// handler whose results are free-form; a concrete struct (or map) type
// declares the tool's output: its schema is inferred from Out, shown with
// the tool, and every result is checked against it.
type Handler[In, Out any] func(ctx context.Context, call *Call, in In) (Out, error)

// Define defines a server tool and registers it for [Registered]. The tool's
// name is the base name of the file that calls Define (inspect_pr.go defines
// inspect_pr), its input schema is inferred from In, and its output schema
// from Out when that is a struct (or a map) rather than any:
//
//	var _ = tool.Define(tool.Config{Description: "…"},
//		func(ctx context.Context, call *tool.Call, in InspectPRInput) (PRReport, error) { … })
//
// Call it once per file, at package level. A definition that is invalid, or
// a second tool in the same file, is an error that [Registered] reports with
// the file and line; Define itself then returns nil.
func Define[In, Out any](cfg Config, handler Handler[In, Out]) *Tool {
	file, line := define.Caller()
	t, err := newServer(define.NameFromFile(file), fmt.Sprintf("%s:%d", file, line), cfg, handler)
	return registry.add(t, err, file, line)
}

// New returns a server tool with an explicit name, for programs that
// assemble their own [Set]. It is not registered.
func New[In, Out any](name string, cfg Config, handler Handler[In, Out]) (*Tool, error) {
	file, line := define.Caller()
	return newServer(name, fmt.Sprintf("%s:%d", file, line), cfg, handler)
}

// DefineScript defines an agent tool and registers it for [Registered]: a
// script (starting with a #! line) that runs where the agent runs, with its
// JSON input on stdin and its result on stdout. The name comes from the
// defining file, as for [Define]; the input schema from
// [Config.InputSchema].
func DefineScript(cfg Config, script string) *Tool {
	file, line := define.Caller()
	t, err := newScript(define.NameFromFile(file), fmt.Sprintf("%s:%d", file, line), cfg, script)
	return registry.add(t, err, file, line)
}

// NewScript returns an agent tool with an explicit name. It is not
// registered.
func NewScript(name string, cfg Config, script string) (*Tool, error) {
	file, line := define.Caller()
	return newScript(name, fmt.Sprintf("%s:%d", file, line), cfg, script)
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func newServer[In, Out any](name, pos string, cfg Config, handler Handler[In, Out]) (*Tool, error) {
	t, err := newTool(name, pos, cfg)
	if err != nil {
		return nil, err
	}
	if handler == nil {
		return nil, fmt.Errorf("tool %s: the handler is nil", name)
	}
	in := reflect.TypeFor[In]()
	var schema Schema
	if in == rawMessageType {
		schema = cfg.InputSchema
		if schema.IsZero() {
			schema = RawSchema(`{"type":"object"}`)
		}
		t.decode = decodeRaw
	} else {
		if !cfg.InputSchema.IsZero() {
			return nil, fmt.Errorf("tool %s: Config.InputSchema is only for json.RawMessage input; the schema of %s is inferred", name, in)
		}
		schema = SchemaOf[In]()
		t.decode = func(raw json.RawMessage) (any, error) {
			v := new(In) // a pointer goes into the interface as it is: one allocation, not two
			err := json.Unmarshal(raw, v)
			return v, err
		}
		if flat := newFlatDecoder(in); flat != nil {
			t.decodeFlat = func(raw json.RawMessage) (any, bool) {
				v := new(In)
				return v, flat.decode(raw, unsafe.Pointer(v))
			}
		}
	}
	if t.schema, err = schema.compile(); err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	if err := cfg.NeedsApproval.checkType(in); err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	if err := cfg.Exclusive.checkType(in); err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	if t.output, err = outputSchema(reflect.TypeFor[Out]()); err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	t.execution = Server
	t.handler = func(ctx context.Context, call *Call, v any) (any, error) { return handler(ctx, call, *v.(*In)) }
	return t, nil
}

// decodeRaw is decode for json.RawMessage input: a copy of the input, so
// that what the handler does with its bytes leaves Input.JSON as it was.
func decodeRaw(raw json.RawMessage) (any, error) {
	v := bytes.Clone(raw)
	return (*json.RawMessage)(&v), nil
}

func newScript(name, pos string, cfg Config, script string) (*Tool, error) {
	t, err := newTool(name, pos, cfg)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(script, "#!") {
		return nil, fmt.Errorf("tool %s: the script must start with a #! line, such as #!/usr/bin/env bash", name)
	}
	schema := cfg.InputSchema
	if schema.IsZero() {
		schema = RawSchema(`{"type":"object"}`)
	}
	if t.schema, err = schema.compile(); err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	if err := cfg.NeedsApproval.checkType(rawMessageType); err != nil {
		return nil, fmt.Errorf("tool %s: %w (an agent tool's input is json.RawMessage)", name, err)
	}
	if err := cfg.Exclusive.checkType(rawMessageType); err != nil {
		return nil, fmt.Errorf("tool %s: %w (an agent tool's input is json.RawMessage)", name, err)
	}
	t.execution = Agent
	t.script = script
	t.decode = decodeRaw
	return t, nil
}

func newTool(name, pos string, cfg Config) (*Tool, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.Description) == "" {
		return nil, fmt.Errorf("tool %s: Config.Description is required: it tells the model what the tool does", name)
	}
	if err := cfg.Approval.check(); err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	if cfg.Timeout < 0 || cfg.ApprovalTimeout < 0 || cfg.BusyWait < 0 || cfg.MaxConcurrent < 0 || cfg.MaxResultBytes < 0 {
		return nil, fmt.Errorf("tool %s: Config.Timeout, ApprovalTimeout, BusyWait, MaxConcurrent and MaxResultBytes cannot be negative", name)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = TimeoutDefault
	}
	busyWait := cfg.BusyWait
	if busyWait == 0 {
		busyWait = BusyWaitDefault
	}
	return &Tool{name: name, description: cfg.Description, approval: cfg.NeedsApproval, timeout: timeout, approvalTTL: cfg.ApprovalTimeout, pos: pos, callers: slices.Clone(cfg.Callers),
		policy: cfg.Approval.clone(), maxConcurrent: cfg.MaxConcurrent, exclusive: cfg.Exclusive, busyWait: busyWait, maxResultBytes: cfg.MaxResultBytes}, nil
}

func (s Schema) compile() (*compiledSchema, error) {
	if s.err != nil {
		return nil, s.err
	}
	return compileSchema(s.raw)
}

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckName reports whether name can name a tool: 1 to 64 letters, digits,
// '_' or '-'.
func CheckName(name string) error {
	if !validName.MatchString(name) {
		if name == "" {
			return errors.New("a tool name cannot be empty")
		}
		return fmt.Errorf("invalid tool name %q: use 1 to 64 letters, digits, '_' or '-'", name)
	}
	return nil
}

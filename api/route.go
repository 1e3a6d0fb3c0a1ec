package api

import (
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
)

// Route is one endpoint of the HTTP API. The server mounts exactly these,
// the OpenAPI document describes exactly these, and the client calls them.
type Route struct {
	// Name identifies the route: the server's handler and the OpenAPI
	// operationId.
	Name   string
	Method string
	// Path is a net/http pattern under /<slug>/v1, or from the root when
	// Root is set (/healthz).
	Path string
	Root bool
	// Public routes need no bearer token (/healthz); every other route
	// answers 401 without one.
	Public bool
	// Permission is what the caller's roles need to be answered
	// (403 forbidden naming it otherwise); "" only on public routes.
	Permission Permission
	// Idempotent routes take an [IdempotencyHeader]: the first request
	// with a key runs and its answer is kept; a retry with the same key
	// and the same request gets that answer again and runs nothing. The
	// server applies it, the client sends a fresh key (and retries with it
	// when the connection fails), and the OpenAPI document declares the
	// header and its error codes, all from this field.
	Idempotent bool
	// Summary says what it does in one line; About adds detail.
	Summary string
	About   string
	// Params are the query parameters and headers it reads (the
	// Idempotency-Key header aside: see Idempotent).
	Params []Param
	// Request is the type of its JSON body, nil for none; OptionalBody
	// says an empty body is taken as the zero value.
	Request      any
	OptionalBody bool
	// Responses are its successful answers, the first the usual one.
	Responses []Response
	// Errors are the codes it can answer besides unauthorized, malformed
	// requests and internal.
	Errors []Code
}

// Param is a query parameter or header of a route.
type Param struct {
	Name  string
	In    string // "query" or "header"
	Type  string // JSON Schema type: "integer", "string" or "boolean"
	About string
}

// Response is one successful answer of a route.
type Response struct {
	Status int
	// Body is the type of the JSON body; nil with ContentType for others.
	Body        any
	ContentType string // default application/json
	About       string
}

// IdempotencyHeader carries a request's Idempotency-Key, on the routes that
// are [Route.Idempotent]: 1 to MaxIdempotencyKey printable ASCII
// characters.
const IdempotencyHeader = "Idempotency-Key"

// MaxIdempotencyKey is the longest Idempotency-Key taken, in bytes.
const MaxIdempotencyKey = 255

// Query parameters shared by the listings.
var (
	paramLimit  = Param{Name: "limit", In: "query", Type: "integer", About: "how many at most (1 to 1000)"}
	paramCursor = Param{Name: "cursor", In: "query", Type: "string", About: "the next cursor of the previous page"}
)

// Routes lists the HTTP API.
var Routes = []Route{
	{Name: "healthz", Method: http.MethodGet, Path: "/healthz", Root: true, Public: true, Summary: "Liveness; needs no token.",
		About:     "200 while the host can reach its store and open a file in its state directory (checked at most once a second); else 503 unhealthy, saying which.",
		Responses: []Response{{Status: http.StatusOK, Body: OKResponse{}}}, Errors: []Code{CodeUnhealthy}},
	{Name: "readyz", Method: http.MethodGet, Path: "/readyz", Root: true, Public: true, Summary: "Readiness, for load balancers; needs no token.",
		About:     "What /healthz checks, and 503 unhealthy once the server is shutting down (draining), so that a load balancer sends it no new requests.",
		Responses: []Response{{Status: http.StatusOK, Body: OKResponse{}}}, Errors: []Code{CodeUnhealthy}},
	{Name: "openapi", Permission: PermRead, Method: http.MethodGet, Path: "/openapi.json", Summary: "The OpenAPI 3.1 document of this API.",
		Responses: []Response{{Status: http.StatusOK, ContentType: "application/json", About: "an OpenAPI 3.1 document"}}},
	{Name: "listTools", Permission: PermRead, Method: http.MethodGet, Path: "/tools", Summary: "The agent's tools, with their input schemas.",
		Responses: []Response{{Status: http.StatusOK, Body: ToolList{}}}},
	{Name: "callTool", Permission: PermCall, Method: http.MethodPost, Path: "/tools/{name}", Summary: "Call a server tool directly, with no model turn.",
		Idempotent: true, Request: CallRequest{},
		Responses: []Response{
			{Status: http.StatusOK, Body: CallResponse{}, About: "the call ran; isError says whether its result is an error"},
			{Status: http.StatusAccepted, Body: CallPending{}, About: "the tool needs approval for this input: the call is parked"},
		},
		Errors: []Code{CodeUnknownTool, CodeAgentTool, CodeInvalidInput, CodeBodyTooLarge, CodeSessionNotFound, CodeSessionBusy}},
	{Name: "createSession", Permission: PermMessage, Method: http.MethodPost, Path: "/session", Summary: "Open a session, and start a model turn if a message is given.",
		Idempotent: true, Request: CreateSessionRequest{}, OptionalBody: true,
		Responses: []Response{{Status: http.StatusCreated, Body: TurnStartedResponse{}}},
		Errors:    []Code{CodeEmptyMessage, CodeMessageTooBig, CodeInvalidChannel, CodeUnknownRuntime}},
	{Name: "listSessions", Permission: PermRead, Method: http.MethodGet, Path: "/sessions", Summary: "Sessions, newest first.",
		Params:    []Param{paramLimit, paramCursor},
		Responses: []Response{{Status: http.StatusOK, Body: SessionList{}}},
		Errors:    []Code{CodeBadQuery, CodeBadCursor}},
	{Name: "getSession", Permission: PermRead, Method: http.MethodGet, Path: "/session/{id}", Summary: "A session.",
		Responses: []Response{{Status: http.StatusOK, Body: SessionResponse{}}},
		Errors:    []Code{CodeSessionNotFound}},
	{Name: "sendMessage", Permission: PermMessage, Method: http.MethodPost, Path: "/session/{id}/messages", Summary: "Send a message: a model turn starts.",
		Idempotent: true,
		Request:    SendRequest{},
		Responses:  []Response{{Status: http.StatusAccepted, Body: TurnStartedResponse{}}},
		Errors:     []Code{CodeSessionNotFound, CodeSessionBusy, CodeEmptyMessage, CodeMessageTooBig}},
	{Name: "cancelTurn", Permission: PermMessage, Method: http.MethodPost, Path: "/session/{id}/cancel", Summary: "Cancel the running turn; it ends with turn.failed (cancelled).",
		About:     "A turn parked for approvals is cancelled too, whichever host parked it: its pending calls are closed (status cancelled; a decision after that is 409 already_resolved), a call approved but not yet run never runs, and each call left unanswered gets a result. A turn running, not parked, on another host is no_running_turn.",
		Responses: []Response{{Status: http.StatusOK, Body: OKResponse{}}},
		Errors:    []Code{CodeSessionNotFound, CodeNoRunningTurn}},
	{Name: "compactSession", Permission: PermMessage, Method: http.MethodPost, Path: "/session/{id}/compact", Summary: "Compact the conversation now: its older part is summarised (context.compacted).",
		About:     "Runs as a turn of its own (kind compact): turn.started, the summary's model.usage, context.compacted, turn.completed. Compacted is false, with Reason, when there is too little to summarise (the last turns are kept verbatim).",
		Responses: []Response{{Status: http.StatusOK, Body: CompactResponse{}}},
		Errors:    []Code{CodeSessionNotFound, CodeSessionBusy}},
	{Name: "events", Permission: PermRead, Method: http.MethodGet, Path: "/session/{id}/events",
		Summary: "Its event stream (SSE), or with ?follow=false its stored events.",
		About:   "Server-Sent Events: id is the event's seq, event its kind, data the Event as JSON; a reconnection resumes after Last-Event-ID (or ?after=N); \": ping\" comments keep an idle stream open. With ?follow=false, the stored events as JSON.",
		Params: []Param{
			{Name: "after", In: "query", Type: "integer", About: "start after this seq"},
			{Name: "follow", In: "query", Type: "boolean", About: "false: answer the stored events as JSON and stop"},
			{Name: "limit", In: "query", Type: "integer", About: "with follow=false, how many at most (1 to 10000)"},
			{Name: "Last-Event-ID", In: "header", Type: "integer", About: "resume after this seq (SSE reconnection)"},
		},
		Responses: []Response{
			{Status: http.StatusOK, ContentType: "text/event-stream", Body: Event{}, About: "the stream; each data line is an Event"},
			{Status: http.StatusOK, Body: EventList{}, About: "with follow=false"},
		},
		Errors: []Code{CodeSessionNotFound, CodeBadQuery}},
	{Name: "resolveInSession", Permission: PermApprove, Method: http.MethodPost, Path: "/session/{id}/approvals/{callId}", Summary: "Decide a call parked in this session.",
		Request:   ResolveRequest{},
		Responses: []Response{{Status: http.StatusOK, Body: ApprovalResponse{}}},
		Errors: []Code{CodeApprovalNotFound, CodeAlreadyResolved, CodeApprovalExpired, CodeInvalidInput,
			CodeRequesterCannotApprove, CodeNotAnApprover, CodeAlreadyApprovedByYou, CodeOnBehalfNotAllowed, CodeEditNotAllowed}},
	{Name: "resolve", Permission: PermApprove, Method: http.MethodPost, Path: "/approvals/{callId}", Summary: "Decide a parked call, exactly once (or approve it as one of its quorum; with input, edited).",
		Request:   ResolveRequest{},
		Responses: []Response{{Status: http.StatusOK, Body: ApprovalResponse{}}},
		Errors: []Code{CodeApprovalNotFound, CodeAlreadyResolved, CodeApprovalExpired, CodeInvalidInput,
			CodeRequesterCannotApprove, CodeNotAnApprover, CodeAlreadyApprovedByYou, CodeOnBehalfNotAllowed, CodeEditNotAllowed}},
	{Name: "listApprovals", Permission: PermRead, Method: http.MethodGet, Path: "/approvals", Summary: "Parked and decided calls, oldest first.",
		Params: []Param{
			{Name: "status", In: "query", Type: "string", About: "pending, approved, denied, expired or cancelled"},
			paramLimit, paramCursor,
		},
		Responses: []Response{{Status: http.StatusOK, Body: ApprovalList{}}},
		Errors:    []Code{CodeBadQuery, CodeBadCursor}},
	{Name: "usage", Permission: PermReadAll, Method: http.MethodGet, Path: "/usage", Summary: "What model calls consumed across sessions: tokens and cost, in total and by principal, channel, model or session.",
		Params: []Param{
			{Name: "from", In: "query", Type: "string", About: "the first instant counted: RFC 3339 or a date (YYYY-MM-DD, UTC); default: the beginning"},
			{Name: "to", In: "query", Type: "string", About: "the instant after the last one counted (a date counts up to its start); default: now and on"},
			{Name: "by", In: "query", Type: "string", About: "principal, channel, model or session; default: the total only"},
		},
		Responses: []Response{{Status: http.StatusOK, Body: UsageReport{}}},
		Errors:    []Code{CodeBadQuery}},
	{Name: "callStatus", Permission: PermRead, Method: http.MethodGet, Path: "/calls/{callId}", Summary: "A gated direct call: waiting, running, or its outcome.",
		Responses: []Response{
			{Status: http.StatusOK, Body: CallDone{}, About: "the call has its outcome"},
			{Status: http.StatusOK, Body: CallStatus{}, About: "still waiting for a decision, or running"},
		},
		Errors: []Code{CodeApprovalNotFound}},
	{Name: "listArtifacts", Permission: PermRead, Method: http.MethodGet, Path: "/session/{id}/artifacts", Summary: "The session's artifacts.",
		Responses: []Response{{Status: http.StatusOK, Body: ArtifactList{}}},
		Errors:    []Code{CodeSessionNotFound}},
	{Name: "getArtifact", Permission: PermRead, Method: http.MethodGet, Path: "/session/{id}/artifacts/{name...}", Summary: "An artifact's content, with the content type it was stored with.",
		Responses: []Response{{Status: http.StatusOK, ContentType: "application/octet-stream", About: "the content, as an attachment"}},
		Errors:    []Code{CodeSessionNotFound, CodeArtifactNotFound, CodeBadName}},
	{Name: "runnerClaim", Permission: PermAdmin, Method: http.MethodPost, Path: "/runner/claim", Summary: "A runner claims a cloud turn to run (agent-sdk runner).",
		About:   "Waits up to waitMs for a cloud session's turn that is ready to run (new, or its parked calls all answered), takes its lease for the runner and answers what the runner needs to run it.",
		Request: RunnerClaimRequest{},
		Responses: []Response{
			{Status: http.StatusOK, Body: RunnerClaim{}, About: "a claimed turn"},
			{Status: http.StatusNoContent, About: "no turn to run within waitMs"},
		}},
	{Name: "runnerReport", Permission: PermAdmin, Method: http.MethodPost, Path: "/runner/turns/{sessionId}/{turnId}", Summary: "A runner reports a claimed turn's events, renews its lease, or ends its claim.",
		Request:   RunnerReport{},
		Responses: []Response{{Status: http.StatusOK, Body: OKResponse{}}},
		Errors:    []Code{CodeSessionNotFound, CodeLeaseLost, CodeInvalidReport}},
	{Name: "runnerAdmit", Permission: PermAdmin, Method: http.MethodPost, Path: "/runner/turns/{sessionId}/{turnId}/admit", Summary: "A runner asks whether a cloud turn's next model call is within the usage limits.",
		Request:   RunnerAdmit{},
		Responses: []Response{{Status: http.StatusOK, Body: RunnerAdmitted{}}},
		Errors:    []Code{CodeSessionNotFound, CodeLeaseLost, CodeOverBudget}},
	{Name: "runnerPermission", Permission: PermAdmin, Method: http.MethodPost, Path: "/runner/turns/{sessionId}/{turnId}/permission", Summary: "A runner's harness asks permission for one of its own calls: parked for a person, and waited on.",
		About:     "The first request parks the call (action.approval_requested); each waits up to waitMs for the decision. An approval is claimed for the runner, whose harness then runs the call and whose report carries its result; withdraw decides a call nobody will run denied.",
		Request:   RunnerPermission{},
		Responses: []Response{{Status: http.StatusOK, Body: RunnerDecision{}}},
		Errors:    []Code{CodeSessionNotFound, CodeLeaseLost, CodeBadRequest}},
	{Name: "listSchedules", Permission: PermRead, Method: http.MethodGet, Path: "/schedules", Summary: "The agent's schedules, each with its next run and last runs.",
		Responses: []Response{{Status: http.StatusOK, Body: ScheduleList{}}}},
	{Name: "runSchedule", Permission: PermAdmin, Method: http.MethodPost, Path: "/schedules/{name}/run", Summary: "Run a schedule now, once, outside its ticks.",
		About:     "The run starts in the background; the answer is the run as it started. Its end is in listSchedules' lastRuns.",
		Responses: []Response{{Status: http.StatusAccepted, Body: ScheduleRunResponse{}}},
		Errors:    []Code{CodeScheduleNotFound, CodeScheduleBusy, CodeNoJobs}},
	{Name: "runEval", Permission: PermAdmin, Method: http.MethodPost, Path: "/evals", Summary: "Run an eval's cases as a batch, each in a session of its own on the eval channel.",
		About:      "The batch runs in the background as durable jobs; poll getEval until its status is completed.",
		Idempotent: true,
		Request:    EvalRunRequest{},
		Responses:  []Response{{Status: http.StatusAccepted, Body: EvalBatchResponse{}}},
		Errors:     []Code{CodeInvalidEval, CodeNoJobs}},
	{Name: "listEvals", Permission: PermRead, Method: http.MethodGet, Path: "/evals", Summary: "Eval batches, newest first (without their cases).",
		Params:    []Param{paramLimit, paramCursor},
		Responses: []Response{{Status: http.StatusOK, Body: EvalList{}}},
		Errors:    []Code{CodeBadCursor, CodeNoJobs}},
	{Name: "getEval", Permission: PermRead, Method: http.MethodGet, Path: "/evals/{id}", Summary: "An eval batch with each case's result, checks and session.",
		Responses: []Response{{Status: http.StatusOK, Body: EvalBatchResponse{}}},
		Errors:    []Code{CodeEvalNotFound, CodeNoJobs}},
	{Name: "createKey", Permission: PermAdmin, Method: http.MethodPost, Path: "/keys", Summary: "Create an API key: its secret is in this answer only.",
		About:     "The key is ask_<id>_<secret>, sent as Authorization: Bearer. The host keeps only the secret's SHA-256. Roles must be the host's (agent.yaml auth.roles and the defaults).",
		Request:   CreateKeyRequest{},
		Responses: []Response{{Status: http.StatusCreated, Body: KeyCreated{}}},
		Errors:    []Code{CodeInvalidKey}},
	{Name: "listKeys", Permission: PermAdmin, Method: http.MethodGet, Path: "/keys", Summary: "The API keys, oldest first, without their secrets.",
		Responses: []Response{{Status: http.StatusOK, Body: KeyList{}}}},
	{Name: "revokeKey", Permission: PermAdmin, Method: http.MethodPost, Path: "/keys/{id}/revoke", Summary: "Revoke an API key: every host refuses it (401) from the next request.",
		About:     "It answers once every host sharing the store refuses the key: about a second after the revocation commits (a host trusts a key it read for a second). Revoking a revoked key changes nothing and answers it as it stands.",
		Responses: []Response{{Status: http.StatusOK, Body: KeyResponse{}}},
		Errors:    []Code{CodeKeyNotFound}},
	{Name: "listAudit", Permission: PermAdmin, Method: http.MethodGet, Path: "/audit", Summary: "The audit log, in seq order: who decided which call, signed in, raised a budget; each entry with the hash of the one before it.",
		About: "Page with after: each page's next. The head is the log's last entry when the page was read. agent-sdk audit verify checks the chain.",
		Params: []Param{
			{Name: "after", In: "query", Type: "integer", About: "entries after this seq (default 0: from the first)"},
			{Name: "limit", In: "query", Type: "integer", About: "how many at most (1 to 1000; default 1000)"},
		},
		Responses: []Response{{Status: http.StatusOK, Body: AuditList{}}}},
}

// Pattern returns the route's net/http pattern for an API under
// /<slug>/v1: "POST /myagent/v1/tools/{name}".
func (r Route) Pattern(slug string) string {
	return r.Method + " " + r.FullPath(slug)
}

// FullPath returns the route's path for an API under /<slug>/v1.
func (r Route) FullPath(slug string) string {
	if r.Root {
		return r.Path
	}
	return "/" + slug + "/v1" + r.Path
}

// Codes returns every error code the route can answer, sorted: its Errors,
// unauthorized and forbidden unless it is public, the codes of a request
// body that cannot be read when it takes one, bad_query when it reads
// parameters, the codes of an Idempotency-Key when it is idempotent, and
// internal.
func (r Route) Codes() []Code {
	set := map[Code]bool{CodeInternal: true}
	for _, code := range r.Errors {
		set[code] = true
	}
	if !r.Public {
		set[CodeUnauthorized], set[CodeForbidden] = true, true
	}
	if r.Request != nil {
		set[CodeBadRequest], set[CodeMalformedJSON], set[CodeBodyTooLarge] = true, true, true
	}
	if len(r.Params) > 0 {
		set[CodeBadQuery] = true
	}
	if r.Idempotent {
		set[CodeBadIdempotencyKey], set[CodeIdempotencyInProgress], set[CodeIdempotencyKeyReused] = true, true, true
	}
	return slices.Sorted(maps.Keys(set))
}

var validSlug = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckSlug reports whether slug can prefix the API's paths: 1 to 64
// letters, digits, '.', '_' or '-', starting with a letter or digit.
func CheckSlug(slug string) error {
	if !validSlug.MatchString(slug) {
		return fmt.Errorf("invalid slug %q: use 1 to 64 letters, digits, '.', '_' or '-'", slug)
	}
	return nil
}

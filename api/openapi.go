package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentsdk/agentsdk/tool"
)

// The document's parts, in the order they are written. Schemas are maps
// (see [schema]); everything else is typed.
type (
	document struct {
		OpenAPI    string                           `json:"openapi"`
		Info       docInfo                          `json:"info"`
		Servers    []docServer                      `json:"servers"`
		Paths      map[string]map[string]*operation `json:"paths"`
		Components docComponents                    `json:"components"`
	}
	docInfo struct {
		Title       string `json:"title"`
		Version     string `json:"version"`
		Description string `json:"description"`
	}
	docServer struct {
		URL string `json:"url"`
	}
	docComponents struct {
		Schemas         map[string]any            `json:"schemas"`
		SecuritySchemes map[string]securityScheme `json:"securitySchemes"`
	}
	securityScheme struct {
		Type        string `json:"type"`
		Scheme      string `json:"scheme"`
		Description string `json:"description"`
	}
	operation struct {
		OperationID string                `json:"operationId"`
		Summary     string                `json:"summary,omitempty"`
		Description string                `json:"description,omitempty"`
		Security    []map[string][]string `json:"security,omitempty"`
		// Permission is the route's (Route.Permission), as an extension.
		Permission  Permission           `json:"x-permission,omitempty"`
		Parameters  []parameter          `json:"parameters,omitempty"`
		RequestBody *requestBody         `json:"requestBody,omitempty"`
		Responses   map[string]*response `json:"responses"`
	}
	parameter struct {
		Name        string `json:"name"`
		In          string `json:"in"`
		Required    bool   `json:"required,omitempty"`
		Description string `json:"description,omitempty"`
		Schema      schema `json:"schema"`
	}
	requestBody struct {
		Required bool                  `json:"required"`
		Content  map[string]*mediaType `json:"content"`
	}
	response struct {
		Description string                `json:"description"`
		Content     map[string]*mediaType `json:"content,omitempty"`
	}
	mediaType struct {
		Schema schema `json:"schema,omitempty"`
	}
)

const (
	openAPIVersion = "3.1.0"
	jsonType       = "application/json"
	bearerScheme   = "bearer"
)

// OpenAPI returns the OpenAPI 3.1 document, as JSON, of the HTTP API of an
// agent served under /<slug>/v1 (and /healthz at the root). It describes
// every route of [Routes]: its parameters, its request and response bodies,
// whose schemas are reflected from their Go types into components, and
// its error answers, grouped by status, each an [ErrorResponse] with the
// codes it can carry. Every route but /healthz takes the bearer token.
//
// Each server tool of tools also has a path of its own,
// /<slug>/v1/tools/<name> beside the generic /<slug>/v1/tools/{name},
// whose request body holds that tool's input schema; the schema's $defs
// become components named tool.<name>.<def>. Agent tools, which cannot be
// called directly, have none.
//
// The same slug and tools, in any order, give the same bytes.
func OpenAPI(slug string, tools []tool.Info) ([]byte, error) {
	if err := CheckSlug(slug); err != nil {
		return nil, fmt.Errorf("building the OpenAPI document: %w", err)
	}
	c := newComponents()
	doc := document{
		OpenAPI: openAPIVersion,
		Info: docInfo{
			Title:   slug + " agent API",
			Version: "v1",
			Description: fmt.Sprintf("The HTTP API of the %s agent: its tools, sessions, event streams and approvals. "+
				`Every route but /healthz needs the bearer token. An error is {"ok": false, "error": {"code": …, "message": …}} `+
				"with the code's HTTP status.", slug),
		},
		Servers: []docServer{{URL: "/"}},
		Paths:   map[string]map[string]*operation{},
	}
	for _, r := range Routes {
		if err := doc.add(c.operation(r, slug)); err != nil {
			return nil, err
		}
	}
	if err := addTools(&doc, c, slug, tools); err != nil {
		return nil, err
	}
	if c.err != nil {
		return nil, fmt.Errorf("building the OpenAPI document: %w", c.err)
	}
	doc.Components = docComponents{
		Schemas: c.schemas,
		SecuritySchemes: map[string]securityScheme{bearerScheme: {
			Type: "http", Scheme: "bearer", Description: "the host's API token",
		}},
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encoding the OpenAPI document: %w", err)
	}
	return b.Bytes(), nil
}

// add puts op at its path and method, refusing a second one there.
func (d *document) add(path, method string, op *operation) error {
	item := d.Paths[path]
	if item == nil {
		item = map[string]*operation{}
		d.Paths[path] = item
	}
	method = strings.ToLower(method)
	if prev := item[method]; prev != nil {
		return fmt.Errorf("building the OpenAPI document: %s and %s are both %s %s", prev.OperationID, op.OperationID, method, path)
	}
	item[method] = op
	return nil
}

// operation describes a route, and returns its OpenAPI path and method.
func (c *components) operation(r Route, slug string) (string, string, *operation) {
	_, pattern, _ := strings.Cut(r.Pattern(slug), " ")
	path, params := pathParams(pattern)
	op := &operation{OperationID: r.Name, Summary: r.Summary, Parameters: params, Permission: r.Permission}
	if !r.Public {
		op.Security = []map[string][]string{{bearerScheme: {}}}
	}
	for _, p := range r.Params {
		if (p.In != "query" && p.In != "header") || !slices.Contains([]string{"integer", "string", "boolean"}, p.Type) {
			c.fail(fmt.Errorf("route %s: parameter %s is a %q in %q, not an integer, string or boolean in the query or a header", r.Name, p.Name, p.Type, p.In))
		}
		op.Parameters = append(op.Parameters, parameter{Name: p.Name, In: p.In, Description: p.About, Schema: schema{"type": p.Type}})
	}
	if r.Idempotent {
		op.Parameters = append(op.Parameters, parameter{Name: IdempotencyHeader, In: "header",
			Description: "makes retries safe: the first request with a key runs and its answer is kept; a retry with the same key and request gets that answer again (with Idempotent-Replayed: true) and runs nothing",
			Schema:      schema{"type": "string", "minLength": 1, "maxLength": MaxIdempotencyKey, "pattern": `^[\x20-\x7e]+$`}})
	}
	if r.Request != nil {
		t := reflect.TypeOf(r.Request)
		body := c.ref(t)
		c.closed(t)
		op.RequestBody = &requestBody{Required: !r.OptionalBody, Content: map[string]*mediaType{jsonType: {Schema: body}}}
	}
	op.Responses = c.responses(r)
	return path, r.Method, op
}

// pathPattern matches the wildcards of a net/http pattern.
var pathPattern = regexp.MustCompile(`\{[^}]*\}`)

// pathParams turns a net/http pattern into an OpenAPI path, {name...}
// becoming {name}, and returns its path parameters.
func pathParams(pattern string) (string, []parameter) {
	var params []parameter
	path := pathPattern.ReplaceAllStringFunc(pattern, func(w string) string {
		name := strings.Trim(w, "{}")
		if name == "$" {
			return "" // {$}: the path ends there
		}
		p := parameter{Name: strings.TrimSuffix(name, "..."), In: "path", Required: true, Schema: schema{"type": "string"}}
		if p.Name != name {
			p.Description = "the rest of the path, '/' included"
		}
		params = append(params, p)
		return "{" + p.Name + "}"
	})
	return path, params
}

// responses describes a route's answers: its successful ones, several at
// one status and content type being oneOf their bodies, and its errors.
func (c *components) responses(r Route) map[string]*response {
	byStatus := map[int][]Response{}
	for _, resp := range r.Responses {
		byStatus[resp.Status] = append(byStatus[resp.Status], resp)
	}
	out := map[string]*response{}
	for status, resps := range byStatus {
		bodies := map[string][]schema{} // by content type
		abouts := make([]string, len(resps))
		for i, resp := range resps {
			ct := cmp.Or(resp.ContentType, jsonType)
			bodies[ct] = append(bodies[ct], c.body(resp.Body, ct))
			abouts[i] = about(resp, len(resps) > 1)
		}
		o := &response{Description: strings.Join(abouts, "\n"), Content: map[string]*mediaType{}}
		for ct, schemas := range bodies {
			o.Content[ct] = &mediaType{Schema: oneOf(schemas)}
		}
		out[strconv.Itoa(status)] = o
	}
	errBody := map[string]*mediaType{jsonType: {Schema: c.ref(reflect.TypeFor[ErrorResponse]())}}
	for status, codes := range errorCodes(r) {
		lines := make([]string, len(codes))
		for i, code := range codes {
			lines[i] = fmt.Sprintf("- `%s`: %s", code, code.Description())
		}
		out[strconv.Itoa(status)] = &response{Description: strings.Join(lines, "\n"), Content: errBody}
	}
	return out
}

// body returns the schema of a response body: its type's, any object for
// JSON of no given type, and none for other content.
func (c *components) body(body any, contentType string) schema {
	switch {
	case body != nil:
		return c.ref(reflect.TypeOf(body))
	case contentType == jsonType:
		return schema{"type": "object"}
	}
	return nil
}

// oneOf returns the one schema given, or a oneOf of several.
func oneOf(schemas []schema) schema {
	schemas = slices.DeleteFunc(schemas, func(s schema) bool { return s == nil })
	switch len(schemas) {
	case 0:
		return nil
	case 1:
		return schemas[0]
	}
	return schema{"oneOf": schemas}
}

// about says what a successful answer is: its About, or its status text.
// One of several at a status is labelled with its body's type, or its
// content type.
func about(resp Response, labelled bool) string {
	text := cmp.Or(resp.About, http.StatusText(resp.Status))
	if !labelled {
		return text
	}
	label := resp.ContentType
	if resp.Body != nil {
		label = reflect.TypeOf(resp.Body).Name()
	}
	return "- " + label + ": " + text
}

// errorCodes groups by status the codes a route can answer (Route.Codes).
func errorCodes(r Route) map[int][]Code {
	byStatus := map[int][]Code{}
	for _, code := range r.Codes() {
		byStatus[code.Status()] = append(byStatus[code.Status()], code)
	}
	return byStatus
}

// addTools adds a path of its own for each server tool: the call route
// (the one that takes a [CallRequest]) with the tool's name in the path
// and its input schema in the request body.
func addTools(doc *document, c *components, slug string, tools []tool.Info) error {
	i := slices.IndexFunc(Routes, func(r Route) bool { _, ok := r.Request.(CallRequest); return ok })
	if i < 0 {
		return fmt.Errorf("building the OpenAPI document: no route takes a CallRequest")
	}
	seen := map[string]bool{}
	for _, t := range tools {
		if t.Execution != tool.Server {
			continue
		}
		if err := tool.CheckName(t.Name); err != nil {
			return fmt.Errorf("building the OpenAPI document: %w", err)
		}
		if seen[t.Name] {
			return fmt.Errorf("building the OpenAPI document: two tools are named %s", t.Name)
		}
		seen[t.Name] = true
		input, err := c.toolInput(t.Name, t.InputSchema)
		if err != nil {
			return fmt.Errorf("building the OpenAPI document: %w", err)
		}
		r := Routes[i]
		r.Name, r.Summary = "callTool_"+t.Name, "Call the "+t.Name+" tool directly, with no model turn."
		r.Path = strings.Replace(r.Path, "{name}", t.Name, 1)
		r.Errors = slices.DeleteFunc(slices.Clone(r.Errors), func(code Code) bool {
			return code == CodeUnknownTool || code == CodeAgentTool // it is a server tool
		})
		path, method, op := c.operation(r, slug)
		op.Description = fmt.Sprintf("%s\n\nApproval: %s.", t.Description, t.Approval)
		body := c.object(reflect.TypeFor[CallRequest]())
		body["properties"].(schema)["input"] = input
		body["additionalProperties"] = false
		op.RequestBody.Content[jsonType].Schema = body
		if t.OutputSchema != nil {
			output, err := c.toolOutput(t.Name, t.OutputSchema)
			if err != nil {
				return fmt.Errorf("building the OpenAPI document: %w", err)
			}
			// A result that is not an error has the tool's output schema.
			ok := op.Responses["200"].Content[jsonType]
			ok.Schema = schema{"allOf": []any{ok.Schema, schema{
				"if":   schema{"properties": schema{"isError": schema{"const": false}}},
				"then": schema{"properties": schema{"result": output}},
			}}}
		}
		if err := doc.add(path, method, op); err != nil {
			return err
		}
	}
	return nil
}

package api_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
)

// okField reports whether a body type has a top-level (or embedded) bool
// field encoded as "ok".
func okField(t reflect.Type) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			if okField(f.Type) {
				return true
			}
		case name == "ok" && f.Type.Kind() == reflect.Bool:
			return true
		}
	}
	return false
}

// Every JSON success answer of every route carries "ok": true (README, The
// HTTP API). The exceptions are not envelopes: the OpenAPI document (its
// root takes no "ok" member), an artifact's content, and the event stream,
// whose data lines are events.
func TestEveryJSONAnswerHasOK(t *testing.T) {
	notEnvelopes := map[string]bool{"openapi": true}
	for _, r := range api.Routes {
		for _, resp := range r.Responses {
			if resp.ContentType != "" && resp.ContentType != "application/json" {
				continue // not JSON: a stream, a file
			}
			if resp.Body == nil {
				if resp.Status != http.StatusNoContent && !notEnvelopes[r.Name] {
					t.Errorf("route %s answers %d with JSON of no declared body type", r.Name, resp.Status)
				}
				continue
			}
			typ := reflect.TypeOf(resp.Body)
			if typ.Kind() != reflect.Struct || !okField(typ) {
				t.Errorf("route %s answers %d with %s, which has no \"ok\" field", r.Name, resp.Status, typ)
			}
		}
	}
}

// The answers of the schedule and eval routes, encoded, begin with
// "ok": true and keep every field of the record they carry.
func TestScheduleAndEvalEnvelopes(t *testing.T) {
	for _, tc := range []struct {
		name string
		body any
		want string
	}{
		{"ScheduleList", api.ScheduleList{OK: true, Schedules: []api.ScheduleInfo{}}, `{"ok":true,"schedules":[]}`},
		{"ScheduleRunResponse", api.ScheduleRunResponse{OK: true, ScheduleRun: api.ScheduleRun{ID: "run_1", Schedule: "tick", Status: api.RunRunning}},
			`{"ok":true,"id":"run_1","schedule":"tick","tick":"0001-01-01T00:00:00Z","status":"running","startedAt":"0001-01-01T00:00:00Z"}`},
		{"EvalList", api.EvalList{OK: true, Batches: []api.EvalBatch{}}, `{"ok":true,"batches":[]}`},
		{"EvalBatchResponse", api.EvalBatchResponse{OK: true, EvalBatch: api.EvalBatch{ID: "eval_1", Name: "smoke", Status: api.EvalQueued, Total: 1}},
			`{"ok":true,"id":"eval_1","name":"smoke","status":"queued","createdAt":"0001-01-01T00:00:00Z","score":0,"passed":0,"total":1,"concurrency":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// Exactly the routes that start something take an Idempotency-Key, and
// the OpenAPI document declares the header, and its error codes, on
// exactly those.
func TestIdempotentRoutes(t *testing.T) {
	want := []string{"callTool", "createSession", "runEval", "sendMessage"}
	var got []string
	for _, r := range api.Routes {
		if r.Idempotent {
			got = append(got, r.Name)
			if r.Method != http.MethodPost {
				t.Errorf("route %s is idempotent but a %s", r.Name, r.Method)
			}
			if !slices.Contains(r.Codes(), api.CodeIdempotencyKeyReused) || !slices.Contains(r.Codes(), api.CodeBadIdempotencyKey) {
				t.Errorf("route %s: Codes() = %v, without the Idempotency-Key's", r.Name, r.Codes())
			}
		} else if slices.Contains(r.Codes(), api.CodeIdempotencyKeyReused) {
			t.Errorf("route %s is not idempotent but answers %s", r.Name, api.CodeIdempotencyKeyReused)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("idempotent routes = %v, want %v", got, want)
	}

	raw, err := api.OpenAPI("agent", nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Parameters  []struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, item := range doc.Paths {
		for _, op := range item {
			for _, p := range op.Parameters {
				if p.In == "header" && p.Name == api.IdempotencyHeader {
					declared = append(declared, op.OperationID)
				}
			}
		}
	}
	slices.Sort(declared)
	if !slices.Equal(declared, want) {
		t.Errorf("the OpenAPI document declares %s on %v, want %v", api.IdempotencyHeader, declared, want)
	}
}

// Every route but the public ones declares a permission of the fixed set,
// and the public ones none.
func TestEveryRouteHasAPermission(t *testing.T) {
	for _, r := range api.Routes {
		switch {
		case r.Public && r.Permission != "":
			t.Errorf("public route %s declares permission %q", r.Name, r.Permission)
		case !r.Public && !r.Permission.Valid():
			t.Errorf("route %s declares permission %q, not one of %v", r.Name, r.Permission, api.Permissions)
		}
	}
	for name, perms := range api.DefaultRoles {
		if err := api.CheckRoleName(name); err != nil {
			t.Error(err)
		}
		for _, p := range perms {
			if !p.Valid() {
				t.Errorf("default role %s has permission %q", name, p)
			}
		}
	}
}

package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func indent(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		t.Fatalf("indenting %s: %v", raw, err)
	}
	b.WriteByte('\n')
	return b.Bytes()
}

type flatInput struct {
	PRURL string `json:"prUrl" jsonschema:"description=the pull request URL,format=uri"`
	Mode  string `json:"mode,omitempty" jsonschema:"description=words or lines,enum=words,enum=lines"`
	Count int    `json:"count" jsonschema:"minimum=1,maximum=10,default=3"`
	Note  string `json:"note" jsonschema:"a free-form note, commas and all"`
	Skip  string `json:"-"`
	Code  string `json:"code" jsonschema:"pattern=^[A-Z]{3}$,minLength=3,maxLength=3"`
}

type address struct {
	Street string `json:"street"`
	City   string `json:"city,omitempty"`
}

type nestedInput struct {
	Home     address            `json:"home"`
	Work     *address           `json:"work"`
	Tags     []string           `json:"tags,omitempty" jsonschema:"description=labels,minItems=1,uniqueItems=true"`
	Labels   map[string]int     `json:"labels,omitempty"`
	Visits   []address          `json:"visits"`
	When     time.Time          `json:"when"`
	Deadline *time.Time         `json:"deadline"`
	Extra    map[string]address `json:"extra,omitempty"`
	Any      any                `json:"any,omitempty"`
	Ratio    float64            `json:"ratio"`
	Enabled  *bool              `json:"enabled"`
}

type base struct {
	ID string `json:"id" jsonschema:"the record id"`
}

type embeddedInput struct {
	base
	Name string `json:"name"`
}

type treeInput struct {
	Value    string      `json:"value"`
	Children []treeInput `json:"children,omitempty"`
}

func TestSchemaInference(t *testing.T) {
	tests := []struct {
		name   string
		schema tool.Schema
	}{
		{"flat", tool.SchemaOf[flatInput]()},
		{"nested", tool.SchemaOf[nestedInput]()},
		{"embedded", tool.SchemaOf[embeddedInput]()},
		{"recursive", tool.SchemaOf[treeInput]()},
		{"pointer", tool.SchemaOf[*flatInput]()},
		{"map", tool.SchemaOf[map[string]string]()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, err := tool.NewScript("s", tool.Config{Description: "d", InputSchema: tt.schema}, "#!/bin/sh\n")
			if err != nil {
				t.Fatalf("defining a tool with the schema: %v", err)
			}
			golden(t, "schemas/"+tt.name+".json", indent(t, tl.InputSchema()))
		})
	}
}

func TestSchemaInferenceErrors(t *testing.T) {
	tests := []struct {
		name   string
		schema tool.Schema
		want   string
	}{
		{"string", tool.SchemaOf[string](), "a tool's input must be a struct"},
		{"slice", tool.SchemaOf[[]int](), "a tool's input must be a struct"},
		{"int map", tool.SchemaOf[map[int]string](), "a tool's input must be a struct"},
		{"chan field", tool.SchemaOf[struct {
			C chan int `json:"c"`
		}](), "field input.C is a chan int"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tool.NewScript("s", tool.Config{Description: "d", InputSchema: tt.schema}, "#!/bin/sh\n")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestRawSchema(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		wantErr string
	}{
		{"object", `{"type":"object","properties":{"a":{"type":"string"}}}`, ""},
		{"not json", `{"type":`, "parsing input schema"},
		{"not an object schema", `{"type":"string"}`, `must describe an object`},
		{"no type", `{"properties":{}}`, `must describe an object`},
		{"bad keyword value", `{"type":"object","properties":{"a":{"type":"strnig"}}}`, "compiling input schema"},
		{"bad pattern", `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`, "compiling input schema"},
		{"remote ref", `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`, "must be self-contained"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tool.New("raw", tool.Config{Description: "d", InputSchema: tool.RawSchema(tt.schema)},
				func(ctx context.Context, call *tool.Call, in json.RawMessage) (any, error) { return nil, nil })
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

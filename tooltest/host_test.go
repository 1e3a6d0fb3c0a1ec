package tooltest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/tool"
	"github.com/agentsdk/agentsdk/tooltest"
)

// newHost is a real host on the memory store with the registered tools:
// what the kit is checked against.
func newHost(t *testing.T) *host.Host {
	t.Helper()
	set, err := tool.Registered()
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// The kit reports what a host's direct call reports, call for call: the
// result, isError, and for a call that did not run the same *api.Error
// (code, message, violations); a call a host parks is one the kit says
// is parked.
func TestOutcomesMatchTheHost(t *testing.T) {
	h := newHost(t)
	kit := tooltest.New(t, nil)
	for _, c := range []struct{ tool, input string }{
		{"greet", `{"name":"Ada"}`},
		{"greet", `{"name":"Ada","times":2}`},
		{"greet", `{}`},
		{"greet", ``},
		{"greet", `{"name":"","times":9,"nmae":"x"}`},
		{"greet", `{"name":"a","name":"b"}`},
		{"greet", `{"name":`},
		{"greet", `[1,2]`},
		{"greet", `{"times":1e400}`},
		{"gret", `{}`},
		{"deploy", `{"env":"staging"}`},
		{"deploy", `{"env":"prod"}`},
		{"deploy", `{"env":"dev"}`},
		{"crash", `{"how":"error"}`},
		{"crash", `{"how":"panic"}`},
		{"crash", `{"how":"hang"}`},
		{"crash", `{"how":"bad-output"}`},
		{"lint", `{"path":"x.go"}`},
	} {
		want, hostErr := h.CallTool(t.Context(), c.tool, []byte(c.input), nil)
		got := kit.Call(c.tool, c.input)
		name := c.tool + " " + c.input
		var pending *host.ApprovalPendingError
		switch {
		case errors.As(hostErr, &pending):
			if !got.Parked || got.Err == nil {
				t.Errorf("%s: the host parked it; the kit says parked %v, err %v", name, got.Parked, got.Err)
			}
		case hostErr != nil:
			var wantAE, gotAE *api.Error
			if !errors.As(hostErr, &wantAE) || !errors.As(got.Err, &gotAE) {
				t.Errorf("%s: host %v, kit %v", name, hostErr, got.Err)
				continue
			}
			if gotAE.Code != wantAE.Code || gotAE.Message != wantAE.Message || !reflect.DeepEqual(gotAE.Violations, wantAE.Violations) || !reflect.DeepEqual(gotAE.Available, wantAE.Available) {
				t.Errorf("%s:\nhost %s %q %v\nkit  %s %q %v", name, wantAE.Code, wantAE.Message, wantAE.Violations, gotAE.Code, gotAE.Message, gotAE.Violations)
			}
			if !reflect.DeepEqual(got.Violations, wantAE.Violations) {
				t.Errorf("%s: the outcome's violations %v, the host's %v", name, got.Violations, wantAE.Violations)
			}
		default:
			if got.Err != nil || got.Parked || got.IsError != want.IsError || !bytes.Equal(got.Result, want.Result) || got.ToolName != want.ToolName {
				t.Errorf("%s:\nhost isError %v %s\nkit  isError %v %s (err %v, parked %v)", name, want.IsError, want.Result, got.IsError, got.Result, got.Err, got.Parked)
			}
		}
	}
}

// The kit's KV and Files answer a sequence of operations as the host's
// (on the memory store) do.
func TestServicesMatchTheHost(t *testing.T) {
	ctx := t.Context()
	hostKV, hostFiles := newHost(t).Handle().Host.KV, newHost(t).Handle().Host.Files
	kit := tooltest.New(t, nil)
	type kvStep func(context.Context, tool.KV) (any, error)
	for i, step := range []kvStep{
		func(ctx context.Context, kv tool.KV) (any, error) { return kv.Get(ctx, "a") },
		func(ctx context.Context, kv tool.KV) (any, error) { return kv.Set(ctx, "a", []byte("1"), nil) },
		func(ctx context.Context, kv tool.KV) (any, error) { return kv.Set(ctx, "a", []byte("2"), nil) },
		func(ctx context.Context, kv tool.KV) (any, error) {
			return kv.CompareAndSet(ctx, "a", 1, []byte("3"), nil)
		},
		func(ctx context.Context, kv tool.KV) (any, error) {
			return kv.CompareAndSet(ctx, "a", 2, []byte("3"), nil)
		},
		func(ctx context.Context, kv tool.KV) (any, error) {
			return kv.CompareAndSet(ctx, "b", 0, []byte("x"), nil)
		},
		func(ctx context.Context, kv tool.KV) (any, error) {
			return kv.CompareAndSet(ctx, "b", 0, []byte("y"), nil)
		},
		func(ctx context.Context, kv tool.KV) (any, error) { return kv.CompareAndSet(ctx, "c", -1, nil, nil) },
		func(ctx context.Context, kv tool.KV) (any, error) { return kv.Set(ctx, "", nil, nil) },
		func(ctx context.Context, kv tool.KV) (any, error) { return kv.Set(ctx, "bad\x00key", nil, nil) },
		func(ctx context.Context, kv tool.KV) (any, error) {
			return kv.Set(ctx, strings.Repeat("k", 513), nil, nil)
		},
		func(ctx context.Context, kv tool.KV) (any, error) {
			return kv.Set(ctx, "big", make([]byte, tool.MaxValueBytes+1), nil)
		},
		func(ctx context.Context, kv tool.KV) (any, error) {
			return kv.Set(ctx, "ttl", nil, &tool.KVSetOptions{TTL: -time.Second})
		},
		func(ctx context.Context, kv tool.KV) (any, error) {
			return kv.Set(ctx, "ttl", []byte("t"), &tool.KVSetOptions{TTL: time.Hour})
		},
		func(ctx context.Context, kv tool.KV) (any, error) { return kv.Set(ctx, "p/1", nil, nil) },
		func(ctx context.Context, kv tool.KV) (any, error) { return kv.Set(ctx, "p/2", nil, nil) },
		func(ctx context.Context, kv tool.KV) (any, error) { return kv.Set(ctx, "p/3", nil, nil) },
		func(ctx context.Context, kv tool.KV) (any, error) {
			return listKV(kv.List(ctx, "p/", &tool.KVListOptions{Limit: 2}))
		},
		func(ctx context.Context, kv tool.KV) (any, error) {
			return listKV(kv.List(ctx, "p/", &tool.KVListOptions{Limit: 2, Cursor: "p/2"}))
		},
		func(ctx context.Context, kv tool.KV) (any, error) { return listKV(kv.List(ctx, "", nil)) },
		func(ctx context.Context, kv tool.KV) (any, error) { return nil, kv.Delete(ctx, "a") },
		func(ctx context.Context, kv tool.KV) (any, error) { return nil, kv.Delete(ctx, "a") },
		func(ctx context.Context, kv tool.KV) (any, error) { return kv.Get(ctx, "a") },
		func(ctx context.Context, kv tool.KV) (any, error) { return kv.Set(ctx, "a", []byte("again"), nil) },
	} {
		want, wantErr := step(ctx, hostKV)
		got, gotErr := step(ctx, kit.KV)
		compare(t, "kv step", i, comparable(want), wantErr, comparable(got), gotErr)
	}

	type fileStep func(context.Context, tool.Files) (any, error)
	put := func(name, content, contentType string) fileStep {
		return func(ctx context.Context, f tool.Files) (any, error) {
			var opts *tool.FilePutOptions
			if contentType != "" {
				opts = &tool.FilePutOptions{ContentType: contentType}
			}
			return f.Put(ctx, name, strings.NewReader(content), opts)
		}
	}
	for i, step := range []fileStep{
		func(ctx context.Context, f tool.Files) (any, error) { return f.Stat(ctx, "r/a.txt") },
		put("r/a.txt", "hello", ""),
		put("r/b.txt", "world", "text/plain"),
		put("r/c.txt", "", ""),
		put("../x", "no", ""),
		put("/abs", "no", ""),
		put("a//b", "no", ""),
		put("r/.tmp-x", "no", ""),
		put("back\\slash", "no", ""),
		func(ctx context.Context, f tool.Files) (any, error) { return f.Stat(ctx, "r/b.txt") },
		func(ctx context.Context, f tool.Files) (any, error) {
			rc, info, err := f.Get(ctx, "r/a.txt")
			if err != nil {
				return nil, err
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			return []any{string(b), comparable(info)}, err
		},
		func(ctx context.Context, f tool.Files) (any, error) {
			_, _, err := f.Get(ctx, "r/none")
			return nil, err
		},
		func(ctx context.Context, f tool.Files) (any, error) {
			return listFiles(f.List(ctx, "r/", &tool.FileListOptions{Limit: 2}))
		},
		func(ctx context.Context, f tool.Files) (any, error) {
			return listFiles(f.List(ctx, "r/", &tool.FileListOptions{Cursor: "r/b.txt"}))
		},
		func(ctx context.Context, f tool.Files) (any, error) { return nil, f.Delete(ctx, "r/a.txt") },
		func(ctx context.Context, f tool.Files) (any, error) { return nil, f.Delete(ctx, "r/a.txt") },
		func(ctx context.Context, f tool.Files) (any, error) { return f.Stat(ctx, "r/a.txt") },
	} {
		want, wantErr := step(ctx, hostFiles)
		got, gotErr := step(ctx, kit.Files)
		compare(t, "files step", i, comparable(want), wantErr, comparable(got), gotErr)
	}
}

// compare checks a step's answers: the same value, and errors that are
// both nil or both matching the same sentinels.
func compare(t *testing.T, what string, i int, want any, wantErr error, got any, gotErr error) {
	t.Helper()
	if (wantErr == nil) != (gotErr == nil) {
		t.Errorf("%s %d: host error %v, kit error %v", what, i, wantErr, gotErr)
		return
	}
	for _, sentinel := range []error{tool.ErrKeyNotFound, tool.ErrVersionConflict, tool.ErrFileNotFound, tool.ErrFileTooLarge} {
		if errors.Is(wantErr, sentinel) != errors.Is(gotErr, sentinel) {
			t.Errorf("%s %d: host error %v, kit error %v: not both %v", what, i, wantErr, gotErr, sentinel)
		}
	}
	if wantErr == nil && !reflect.DeepEqual(want, got) {
		t.Errorf("%s %d:\nhost %#v\nkit  %#v", what, i, want, got)
	}
}

type page struct {
	Items any
	Next  string
}

func listKV(entries []tool.KVEntry, next string, err error) (any, error) {
	out := make([]any, len(entries))
	for i, e := range entries {
		out[i] = comparable(e)
	}
	return page{out, next}, err
}

func listFiles(files []tool.FileInfo, next string, err error) (any, error) {
	out := make([]any, len(files))
	for i, f := range files {
		out[i] = comparable(f)
	}
	return page{out, next}, err
}

// comparable drops the times, which differ between two services.
func comparable(v any) any {
	switch v := v.(type) {
	case tool.KVEntry:
		return []any{v.Key, string(v.Value), v.Version, v.ExpiresAt != nil}
	case tool.FileInfo:
		return []any{v.Name, v.Size, v.ContentType, v.SHA256}
	}
	return v
}

package host_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

type kvInput struct {
	Op    string `json:"op" jsonschema:"enum=get,enum=set,enum=incr,enum=del,enum=list"`
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
}

// kvTool exercises call.Host.KV the way a user's tool would.
func kvTool(t *testing.T) *tool.Set {
	kv, err := tool.New("kv", tool.Config{Description: "Use the KV service."}, func(ctx context.Context, call *tool.Call, in kvInput) (any, error) {
		switch in.Op {
		case "get":
			e, err := call.Host.KV.Get(ctx, in.Key)
			return string(e.Value), err
		case "set":
			e, err := call.Host.KV.Set(ctx, in.Key, []byte(in.Value), nil)
			return e.Version, err
		case "incr": // read, change, compare-and-set, retry
			for {
				e, err := call.Host.KV.Get(ctx, in.Key)
				if err != nil && !errors.Is(err, tool.ErrKeyNotFound) {
					return nil, err
				}
				var n int
				fmt.Sscan(string(e.Value), &n)
				_, err = call.Host.KV.CompareAndSet(ctx, in.Key, e.Version, []byte(fmt.Sprint(n+1)), nil)
				if !errors.Is(err, tool.ErrVersionConflict) {
					return n + 1, err
				}
			}
		case "del":
			return nil, call.Host.KV.Delete(ctx, in.Key)
		default:
			entries, _, err := call.Host.KV.List(ctx, in.Key, nil)
			var keys []string
			for _, e := range entries {
				keys = append(keys, e.Key)
			}
			return strings.Join(keys, ","), err
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tool.NewSet(kv)
	return set
}

func TestKVService(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(state, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, _ := host.New(kvTool(t), &host.Options{StateRoot: state, Store: st})
	call := func(in kvInput) (string, bool) {
		out, err := h.CallTool(ctx, "kv", in, nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(out.Result), out.IsError
	}
	if r, isErr := call(kvInput{Op: "get", Key: "missing"}); !isErr || !strings.Contains(r, "key not found") {
		t.Errorf("get missing: %s", r)
	}
	call(kvInput{Op: "set", Key: "user/1", Value: "ada"})
	call(kvInput{Op: "set", Key: "user/2", Value: "bob"})
	if r, _ := call(kvInput{Op: "get", Key: "user/1"}); r != `"ada"` {
		t.Errorf("get: %s", r)
	}
	if r, _ := call(kvInput{Op: "list", Key: "user/"}); r != `"user/1,user/2"` {
		t.Errorf("list: %s", r)
	}
	for _, bad := range []string{"", "a\x00b", strings.Repeat("k", 513)} {
		if r, isErr := call(kvInput{Op: "set", Key: bad, Value: "x"}); !isErr || !strings.Contains(r, "kv: the key") {
			t.Errorf("key %q: %s", bad, r)
		}
	}
	// Fifty concurrent calls incrementing one counter lose no update.
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if r, isErr := call(kvInput{Op: "incr", Key: "counter"}); isErr {
				t.Error(r)
			}
		})
	}
	wg.Wait()
	if r, _ := call(kvInput{Op: "get", Key: "counter"}); r != `"50"` {
		t.Errorf("counter after 50 increments: %s", r)
	}
	// Without a store given, KV works in memory.
	bare, _ := host.New(kvTool(t), &host.Options{StateRoot: t.TempDir()})
	bare.CallTool(ctx, "kv", kvInput{Op: "set", Key: "k", Value: "v"}, nil)
	if out, _ := bare.CallTool(ctx, "kv", kvInput{Op: "get", Key: "k"}, nil); out.IsError || string(out.Result) != `"v"` {
		t.Errorf("in-memory KV: %s", out.Result)
	}
}

package host_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/postgres"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

type fileInput struct {
	Name string `json:"name"`
	Size int64  `json:"size,omitempty"`
}

type fileOutput struct {
	Found       bool   `json:"found"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"` // of what was read
	ContentType string `json:"contentType"`
}

// fileTools write, read and delete files through call.Host.Files, and
// leave an artifact in the call's session.
func fileTools(t *testing.T) *tool.Set {
	t.Helper()
	write, _ := tool.New("write", tool.Config{Description: "Write a file of random bytes."}, func(ctx context.Context, call *tool.Call, in fileInput) (any, error) {
		content := io.LimitReader(rand.NewChaCha8([32]byte{1}), in.Size)
		info, err := call.Host.Files.Put(ctx, in.Name, content, &tool.FilePutOptions{ContentType: "application/x-test"})
		return fileOutput{Found: true, Size: info.Size, SHA256: info.SHA256, ContentType: info.ContentType}, err
	})
	read, _ := tool.New("read", tool.Config{Description: "Read a file."}, func(ctx context.Context, call *tool.Call, in fileInput) (any, error) {
		rc, info, err := call.Host.Files.Get(ctx, in.Name)
		if errors.Is(err, tool.ErrFileNotFound) {
			return fileOutput{}, nil
		}
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		sum := sha256.New()
		n, err := io.Copy(sum, rc)
		return fileOutput{Found: true, Size: n, SHA256: hex.EncodeToString(sum.Sum(nil)), ContentType: info.ContentType}, err
	})
	del, _ := tool.New("delete", tool.Config{Description: "Delete a file."}, func(ctx context.Context, call *tool.Call, in fileInput) (any, error) {
		return nil, call.Host.Files.Delete(ctx, in.Name)
	})
	artifact, _ := tool.New("artifact", tool.Config{Description: "Leave an artifact."}, func(ctx context.Context, call *tool.Call, in fileInput) (any, error) {
		_, err := call.Artifacts.Put(ctx, in.Name, strings.NewReader("# report"), &tool.FilePutOptions{ContentType: "text/markdown"})
		return nil, err
	})
	set, err := tool.NewSet(write, read, del, artifact)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// newPostgresHost starts a host, with a store of its own, on the schema at
// url and a state directory of its own: another machine.
func newPostgresHost(t *testing.T, set *tool.Set, url string) (*host.Host, string) {
	t.Helper()
	st, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	state := t.TempDir()
	h, err := host.New(set, &host.Options{StateRoot: state, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, state
}

// callFileTool runs a file tool and decodes its output.
func callFileTool(t *testing.T, h *host.Host, name string, in fileInput, opts *host.CallOptions) fileOutput {
	t.Helper()
	out, err := h.CallTool(context.Background(), name, in, opts)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out.IsError {
		t.Fatalf("%s: %s", name, out.Result)
	}
	var o fileOutput
	if len(out.Result) > 0 && string(out.Result) != "null" {
		if err := json.Unmarshal(out.Result, &o); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// On PostgreSQL a file put through one host is read through another, on
// another machine: the contents are in the database, not on the disk of
// the host that put them. Artifacts follow.
func TestFilesAcrossHosts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Schema(t)
	set := fileTools(t)
	a, stateA := newPostgresHost(t, set, url)
	b, _ := newPostgresHost(t, set, url)

	put := callFileTool(t, a, "write", fileInput{Name: "reports/big.bin", Size: 3<<20 + 7}, nil)
	got := callFileTool(t, b, "read", fileInput{Name: "reports/big.bin"}, nil)
	if got != put || got.Size != 3<<20+7 || got.ContentType != "application/x-test" {
		t.Errorf("B read %+v; A wrote %+v", got, put)
	}
	if _, err := os.Stat(filepath.Join(stateA, "files")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("host A kept contents on its disk: %v", err)
	}
	callFileTool(t, b, "delete", fileInput{Name: "reports/big.bin"}, nil)
	if got := callFileTool(t, a, "read", fileInput{Name: "reports/big.bin"}, nil); got.Found {
		t.Errorf("A read a file B deleted: %+v", got)
	}

	sess, _, err := a.Sessions().Create(ctx, host.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	callFileTool(t, a, "artifact", fileInput{Name: "review.md"}, &host.CallOptions{SessionID: sess.ID})
	rc, info, err := b.Sessions().Artifact(ctx, sess.ID, "review.md")
	if err != nil {
		t.Fatal(err)
	}
	content, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(content) != "# report" || info.Name != "review.md" || info.ContentType != "text/markdown" {
		t.Errorf("B read the artifact as %q, %+v, %v", content, info, err)
	}
	if list, err := b.Sessions().Artifacts(ctx, sess.ID); err != nil || len(list) != 1 || list[0].Name != "review.md" {
		t.Errorf("B lists %+v, %v", list, err)
	}
}

// The limit holds on PostgreSQL as on disk: an over-limit put is refused
// having read just past it, and stores nothing.
func TestFilesTooLargePostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := st.(store.Blobs); !ok {
		t.Fatal("the PostgreSQL store keeps no contents")
	}
	var files tool.Files
	grab, _ := tool.New("grab", tool.Config{Description: "Grab the services."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		files = call.Host.Files
		return nil, nil
	})
	set, _ := tool.NewSet(grab)
	h, _ := host.New(set, &host.Options{StateRoot: t.TempDir(), Store: st, MaxFileBytes: 1 << 20})
	defer h.Close()
	if _, err := h.CallTool(ctx, "grab", nil, nil); err != nil {
		t.Fatal(err)
	}
	z := &zeros{}
	if _, err := files.Put(ctx, "too/big", z, nil); !errors.Is(err, tool.ErrFileTooLarge) {
		t.Errorf("too large: %v", err)
	}
	if z.n > 1<<20+256<<10 {
		t.Errorf("read %d bytes of an over-limit file", z.n)
	}
	if _, err := files.Stat(ctx, "too/big"); !errors.Is(err, tool.ErrFileNotFound) {
		t.Errorf("a refused file was stored: %v", err)
	}
	if _, _, err := files.Get(ctx, "too/big"); !errors.Is(err, tool.ErrFileNotFound) {
		t.Errorf("a refused file can be opened: %v", err)
	}
}

// BenchmarkFiles puts and gets a 10 MiB file through call.Host.Files on
// each store: SQLite, whose host keeps contents on its disk (a temporary
// file, synced, renamed), and PostgreSQL, which keeps them in the database
// in 256 KiB chunks (one transaction a put, committed with the server's
// default synchronous_commit; a query a chunk a get). The content is
// random, as compressed or binary files are; text compresses in
// PostgreSQL's TOAST. MB/s is go test's, from SetBytes:
//
//	go test ./host -run '^$' -bench Files -benchtime 20x -count 5
func BenchmarkFiles(b *testing.B) {
	ctx := context.Background()
	const size = 10 << 20
	stores := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"sqlite-disk", func(b *testing.B) store.Store {
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "agent.db"))
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
		{"postgres", func(b *testing.B) store.Store {
			st, err := postgres.Open(ctx, pgtest.Schema(b))
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
	}
	content := make([]byte, size)
	rand.NewChaCha8([32]byte{2}).Read(content)
	for _, s := range stores {
		files := func(b *testing.B) tool.Files {
			st := s.open(b)
			b.Cleanup(func() { st.Close() })
			var files tool.Files
			grab, _ := tool.New("grab", tool.Config{Description: "Grab the services."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
				files = call.Host.Files
				return nil, nil
			})
			set, _ := tool.NewSet(grab)
			h, err := host.New(set, &host.Options{StateRoot: b.TempDir(), Store: st})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { h.Close() })
			if _, err := h.CallTool(ctx, "grab", nil, nil); err != nil {
				b.Fatal(err)
			}
			return files
		}
		b.Run(s.name+"/put", func(b *testing.B) {
			files := files(b)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := files.Put(ctx, "bench.bin", bytes.NewReader(content), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/get", func(b *testing.B) {
			files := files(b)
			if _, err := files.Put(ctx, "bench.bin", bytes.NewReader(content), nil); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 32<<10)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				rc, _, err := files.Get(ctx, "bench.bin")
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{rc}, buf)
				rc.Close()
				if err != nil || n != size {
					b.Fatalf("read %d bytes: %v", n, err)
				}
			}
		})
	}
}

package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

func version(n int64) *int64 { return &n }

func set(s store.Store, ns, key, value string, ifVersion *int64, ttl time.Duration) (tool.KVEntry, error) {
	return s.KVSet(ctx, store.KVSetParams{Namespace: ns, Key: key, Value: []byte(value), IfVersion: ifVersion, TTL: ttl})
}

func testKV(t *testing.T, s store.Store) {
	if _, err := s.KVGet(ctx, "a", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing key: %v", err)
	}
	e, err := set(s, "a", "k", "v1", nil, 0)
	if err != nil || e.Version != 1 || e.UpdatedAt.IsZero() || e.ExpiresAt != nil {
		t.Fatalf("KVSet = %+v, %v", e, err)
	}
	if _, err := set(s, "a", "k", "x", version(0), 0); !errors.Is(err, store.ErrConflict) {
		t.Errorf("create-only on an existing key: %v", err)
	}
	if e, err := set(s, "a", "k", "v2", version(1), 0); err != nil || e.Version != 2 {
		t.Errorf("CAS: %+v %v", e, err)
	}
	if got, _ := s.KVGet(ctx, "a", "k"); string(got.Value) != "v2" || got.Version != 2 || got.UpdatedAt.IsZero() {
		t.Errorf("KVGet = %+v", got)
	}
	if _, err := s.KVGet(ctx, "b", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("namespaces leak: %v", err)
	}
	// Expired entries are gone, and a create-only write may replace them.
	if e, _ := set(s, "a", "tmp", "t", nil, time.Nanosecond); e.ExpiresAt == nil {
		t.Errorf("an entry with a TTL has no expiry: %+v", e)
	}
	time.Sleep(time.Millisecond)
	if _, err := s.KVGet(ctx, "a", "tmp"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired key: %v", err)
	}
	if e, err := set(s, "a", "tmp", "again", version(0), 0); err != nil || e.Version != 1 {
		t.Errorf("create over an expired key: %+v %v", e, err)
	}
	for _, k := range []string{"user/1", "user/2", "user/3", "users", "user0", "zz", "user/~"} {
		set(s, "a", k, k, nil, 0)
	}
	set(s, "a", "user/gone", "", nil, time.Nanosecond)
	time.Sleep(time.Millisecond)
	var keys []string
	for cursor := ""; ; {
		page, next, err := s.KVList(ctx, store.ListParams{Namespace: "a", Prefix: "user/", Page: store.Page{Limit: 2, Cursor: cursor}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			keys = append(keys, e.Key)
			if string(e.Value) != e.Key || e.Version != 1 || e.UpdatedAt.IsZero() {
				t.Errorf("listed %+v", e)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if got := fmt.Sprint(keys); got != `[user/1 user/2 user/3 user/~]` {
		t.Errorf("KVList(user/) = %s", got)
	}
	if all, _, _ := s.KVList(ctx, store.ListParams{Namespace: "a"}); len(all) != 9 {
		t.Errorf("KVList of the namespace: %d entries, want 9", len(all))
	}
	if err := s.KVDelete(ctx, "a", "user/1"); err != nil {
		t.Fatal(err)
	}
	if err := s.KVDelete(ctx, "a", "user/1"); err != nil {
		t.Errorf("deleting an absent key: %v", err)
	}
	if _, err := s.KVGet(ctx, "a", "user/1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted key: %v", err)
	}
}

// IfVersion nil writes whatever the key holds; a pointer to 0 writes only
// a key that is absent; a pointer to n only a key at version n.
func testKVIfVersion(t *testing.T, s store.Store) {
	for _, step := range []struct {
		name        string
		ifVersion   *int64
		value       string
		wantVersion int64 // 0: ErrConflict
	}{
		{"nil creates", nil, "v1", 1},
		{"nil overwrites", nil, "v2", 2},
		{"0 refuses an existing key", version(0), "x", 0},
		{"the current version writes", version(2), "v3", 3},
		{"an old version conflicts", version(2), "x", 0},
		{"a future version conflicts", version(9), "x", 0},
	} {
		e, err := set(s, "a", "k", step.value, step.ifVersion, 0)
		switch {
		case step.wantVersion == 0 && !errors.Is(err, store.ErrConflict):
			t.Errorf("%s: %+v, %v; want ErrConflict", step.name, e, err)
		case step.wantVersion != 0 && (err != nil || e.Version != step.wantVersion || string(e.Value) != step.value):
			t.Errorf("%s: %+v, %v; want version %d", step.name, e, err, step.wantVersion)
		}
	}
	if got, _ := s.KVGet(ctx, "a", "k"); string(got.Value) != "v3" || got.Version != 3 {
		t.Errorf("after the conflicts: %+v", got)
	}
	if _, err := set(s, "a", "absent", "x", version(1), 0); !errors.Is(err, store.ErrConflict) {
		t.Errorf("version 1 of an absent key: %v", err)
	}
	if _, err := s.KVGet(ctx, "a", "absent"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a conflicting write created the key: %v", err)
	}
	// Deleting a key starts its versions again.
	s.KVDelete(ctx, "a", "k")
	if e, err := set(s, "a", "k", "new", version(0), 0); err != nil || e.Version != 1 {
		t.Errorf("0 after deleting: %+v, %v", e, err)
	}
}

// Fifty writers incrementing one counter with compare-and-set lose no
// update.
func testKVContention(t *testing.T, s store.Store) {
	set(s, "a", "counter", "0", nil, 0)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for {
				cur, err := s.KVGet(ctx, "a", "counter")
				if err != nil {
					t.Error(err)
					return
				}
				var n int
				fmt.Sscan(string(cur.Value), &n)
				_, err = set(s, "a", "counter", fmt.Sprint(n+1), version(cur.Version), 0)
				if err == nil {
					return
				}
				if !errors.Is(err, store.ErrConflict) {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got, _ := s.KVGet(ctx, "a", "counter"); string(got.Value) != "50" || got.Version != 51 {
		t.Errorf("counter = %s at version %d, want 50 at 51", got.Value, got.Version)
	}
}

func testFiles(t *testing.T, s store.Store) {
	for _, n := range []string{"reports/a.txt", "reports/b.txt", "other.txt"} {
		if err := s.PutFileMeta(ctx, "ns", tool.FileInfo{Name: n, Size: 3, ContentType: "text/plain", SHA256: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	s.PutFileMeta(ctx, "ns", tool.FileInfo{Name: "reports/a.txt", Size: 5, ContentType: "text/markdown", SHA256: "y"})
	m, err := s.FileMeta(ctx, "ns", "reports/a.txt")
	if err != nil || m.Size != 5 || m.ContentType != "text/markdown" || m.SHA256 != "y" || m.UpdatedAt.IsZero() {
		t.Errorf("FileMeta = %+v, %v", m, err)
	}
	list, _, _ := s.ListFileMeta(ctx, store.ListParams{Namespace: "ns", Prefix: "reports/"})
	if len(list) != 2 || list[0].Name != "reports/a.txt" {
		t.Errorf("ListFileMeta = %+v", list)
	}
	first, next, err := s.ListFileMeta(ctx, store.ListParams{Namespace: "ns", Page: store.Page{Limit: 2}})
	if err != nil || len(first) != 2 || first[0].Name != "other.txt" || next == "" {
		t.Errorf("ListFileMeta, first page = %+v, %q, %v", first, next, err)
	}
	rest, next, err := s.ListFileMeta(ctx, store.ListParams{Namespace: "ns", Page: store.Page{Limit: 2, Cursor: next}})
	if err != nil || len(rest) != 1 || rest[0].Name != "reports/b.txt" || next != "" {
		t.Errorf("ListFileMeta, second page = %+v, %q, %v", rest, next, err)
	}
	s.DeleteFileMeta(ctx, "ns", "reports/a.txt")
	if _, err := s.FileMeta(ctx, "ns", "reports/a.txt"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted: %v", err)
	}
	if err := s.DeleteFileMeta(ctx, "ns", "reports/a.txt"); err != nil {
		t.Errorf("deleting an absent file: %v", err)
	}
	if _, err := s.FileMeta(ctx, "other", "reports/b.txt"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("namespaces leak: %v", err)
	}
}

// KV keys and file names list in byte order beyond ASCII, whatever the
// database's collation, and a prefix selects exactly the names that start
// with it, also where the next name after the prefix is not plain byte
// arithmetic: "¿" (C2 BF) is followed by "À" (C3 80), U+D7FF by U+E000
// (the surrogates in between are not text), and nothing follows U+10FFFF.
func testListingsInByteOrder(t *testing.T, s store.Store) {
	names := []string{"b", "a", "B", "z", "é", "日本", "¿x", "¿y", "À", "\ud7ffa", "\ue000", "\U0010ffffa", "a\U0010ffff", "ab"}
	for _, n := range names {
		if _, err := set(s, "ns", n, n, nil, 0); err != nil {
			t.Fatalf("KVSet(%q): %v", n, err)
		}
		if err := s.PutFileMeta(ctx, "ns", tool.FileInfo{Name: n, ContentType: "text/plain"}); err != nil {
			t.Fatalf("PutFileMeta(%q): %v", n, err)
		}
	}
	want := slices.Clone(names)
	slices.Sort(want)
	lists := []struct {
		name string
		list func(store.ListParams) ([]string, string, error)
	}{
		{"KVList", func(p store.ListParams) ([]string, string, error) {
			page, next, err := s.KVList(ctx, p)
			var out []string
			for _, e := range page {
				out = append(out, e.Key)
			}
			return out, next, err
		}},
		{"ListFileMeta", func(p store.ListParams) ([]string, string, error) {
			page, next, err := s.ListFileMeta(ctx, p)
			var out []string
			for _, f := range page {
				out = append(out, f.Name)
			}
			return out, next, err
		}},
	}
	for _, l := range lists {
		all := func(prefix string) []string {
			var out []string
			for cursor := ""; ; {
				page, next, err := l.list(store.ListParams{Namespace: "ns", Prefix: prefix, Page: store.Page{Limit: 3, Cursor: cursor}})
				if err != nil {
					t.Fatalf("%s(%q): %v", l.name, prefix, err)
				}
				out = append(out, page...)
				if next == "" {
					return out
				}
				cursor = next
			}
		}
		if got := all(""); !slices.Equal(got, want) {
			t.Errorf("%s = %q, want byte order %q", l.name, got, want)
		}
		for _, prefix := range []string{"a", "¿", "\ud7ff", "a\U0010ffff", "\U0010ffff", "日", "q"} {
			var want []string
			for _, n := range names {
				if strings.HasPrefix(n, prefix) {
					want = append(want, n)
				}
			}
			slices.Sort(want)
			if got := all(prefix); !slices.Equal(got, want) {
				t.Errorf("%s(prefix %q) = %q, want %q", l.name, prefix, got, want)
			}
		}
	}
}

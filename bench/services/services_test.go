// Package services benchmarks the host services on SQLite: KV operations
// per second and Files throughput for a 10 MiB blob, through call.Host as a
// tool sees them.
//
//	go test ./bench/services -run xxx -bench . -benchtime 3s
package services

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// services returns call.Host of a host on a fresh SQLite store.
func services(b *testing.B) tool.Services {
	ctx := context.Background()
	state := b.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(state, "agent.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	var got tool.Services
	grab, _ := tool.New("grab", tool.Config{Description: "Grab call.Host."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		got = call.Host
		return nil, nil
	})
	set, _ := tool.NewSet(grab)
	h, err := host.New(set, &host.Options{StateRoot: state, Store: st})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := h.CallTool(ctx, "grab", nil, nil); err != nil {
		b.Fatal(err)
	}
	return got
}

func BenchmarkKVSet(b *testing.B) {
	kv := services(b).KV
	ctx := context.Background()
	value := []byte(`{"status":"reviewed","by":"agent"}`)
	i := 0
	for b.Loop() {
		if _, err := kv.Set(ctx, fmt.Sprintf("pr/%d", i%1000), value, nil); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func BenchmarkKVGet(b *testing.B) {
	kv := services(b).KV
	ctx := context.Background()
	for i := range 1000 {
		kv.Set(ctx, fmt.Sprintf("pr/%d", i), []byte(`{"status":"reviewed"}`), nil)
	}
	i := 0
	for b.Loop() {
		if _, err := kv.Get(ctx, fmt.Sprintf("pr/%d", i%1000)); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func BenchmarkKVCompareAndSet(b *testing.B) {
	kv := services(b).KV
	ctx := context.Background()
	e, _ := kv.Set(ctx, "counter", []byte("0"), nil)
	for b.Loop() {
		var err error
		if e, err = kv.CompareAndSet(ctx, "counter", e.Version, []byte("1"), nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

var blob = bytes.Repeat([]byte("0123456789abcdef"), 10<<20/16)

func BenchmarkFilesPut10MiB(b *testing.B) {
	files := services(b).Files
	ctx := context.Background()
	b.SetBytes(int64(len(blob)))
	for b.Loop() {
		if _, err := files.Put(ctx, "blobs/big.bin", bytes.NewReader(blob), nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFilesGet10MiB(b *testing.B) {
	files := services(b).Files
	ctx := context.Background()
	files.Put(ctx, "blobs/big.bin", bytes.NewReader(blob), nil)
	b.SetBytes(int64(len(blob)))
	for b.Loop() {
		rc, _, err := files.Get(ctx, "blobs/big.bin")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, rc)
		rc.Close()
	}
}

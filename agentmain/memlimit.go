package agentmain

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// memLimitShare is the share of the machine's memory (its cgroup's
// limit, else physical memory) that serve sets as the Go runtime's soft
// memory limit, unless GOMEMLIMIT is set: the GC works harder as the heap
// nears it, rather than the process being killed for memory, and the
// rest is left for what the runtime does not count (stacks of cgo
// threads, scripts' processes are in the cgroup too, page cache).
const memLimitShare = 0.9

// memoryLimit derives the memory limit serve sets from a root file
// system (os.DirFS("/")): memLimitShare of the smallest of the process's
// cgroup memory limit (v2 memory.max, or v1 memory.limit_in_bytes) and
// physical memory (/proc/meminfo's MemTotal); 0 when none can be read.
// from says what it was derived from.
func memoryLimit(root fs.FS) (limit int64, from string) {
	var total int64
	if mem, ok := memTotal(root); ok {
		total, from = mem, "physical memory"
	}
	if cg, where, ok := cgroupLimit(root); ok && (total == 0 || cg < total) {
		total, from = cg, "the cgroup memory limit ("+where+")"
	}
	if total <= 0 {
		return 0, ""
	}
	return int64(float64(total) * memLimitShare), from
}

// memTotal reads MemTotal from /proc/meminfo, in bytes.
func memTotal(root fs.FS) (int64, bool) {
	b, err := fs.ReadFile(root, "proc/meminfo")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		return kb << 10, err == nil && kb > 0
	}
	return 0, false
}

// cgroupLimit reads the memory limit of the process's cgroup: v2's
// memory.max (the unified hierarchy, "0::<path>" in /proc/self/cgroup),
// else v1's memory.limit_in_bytes (the "memory" controller's line), each
// under its path and then at the mount's root (a container sees its own
// cgroup there). No limit ("max", or v1's page-rounded MaxInt64) is none.
func cgroupLimit(root fs.FS) (int64, string, bool) {
	var v2, v1 string
	if b, err := fs.ReadFile(root, "proc/self/cgroup"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 {
				continue
			}
			switch {
			case parts[0] == "0" && parts[1] == "":
				v2 = parts[2]
			case strings.Contains(","+parts[1]+",", ",memory,"):
				v1 = parts[2]
			}
		}
	}
	try := func(file string) (int64, string, bool) {
		b, err := fs.ReadFile(root, file)
		if err != nil {
			return 0, "", false
		}
		v := strings.TrimSpace(string(b))
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0, "", false // "max", or v1's "unlimited"
		}
		return n, "/" + file, true
	}
	var candidates []string
	if v1 != "" {
		candidates = append(candidates, path.Join("sys/fs/cgroup/memory", v1, "memory.limit_in_bytes"), "sys/fs/cgroup/memory/memory.limit_in_bytes")
	}
	if v2 != "" || v1 == "" {
		candidates = append([]string{path.Join("sys/fs/cgroup", v2, "memory.max"), "sys/fs/cgroup/memory.max"}, candidates...)
	}
	for _, c := range candidates {
		if n, where, ok := try(c); ok {
			return n, where, true
		}
	}
	return 0, "", false
}

// formatBytes writes a byte count in MiB, for the log.
func formatBytes(n int64) string {
	return fmt.Sprintf("%d MiB", n>>20)
}

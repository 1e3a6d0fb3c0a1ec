package agentmain

import (
	"testing"
	"testing/fstest"
)

// The memory limit is 90% of the smallest of the cgroup's limit (v2, else
// v1) and physical memory; none without either.
func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	meminfo := &fstest.MapFile{Data: []byte("MemTotal:       16384000 kB\nMemFree:         1000 kB\n")}
	const physical = 16384000 << 10
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
		want  int64
		from  string
	}{
		{"physical memory", fstest.MapFS{"proc/meminfo": meminfo}, physical * 9 / 10, "physical memory"},
		{"cgroup v2", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": {Data: []byte("0::/agent.slice\n")},
			"sys/fs/cgroup/agent.slice/memory.max": {Data: []byte("1073741824\n")}}, 1073741824 * 9 / 10, "the cgroup memory limit (/sys/fs/cgroup/agent.slice/memory.max)"},
		{"cgroup v2 at the root, in a container", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": {Data: []byte("0::/\n")},
			"sys/fs/cgroup/memory.max": {Data: []byte("536870912\n")}}, 536870912 * 9 / 10, "the cgroup memory limit (/sys/fs/cgroup/memory.max)"},
		{"cgroup v2 without a limit", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": {Data: []byte("0::/\n")},
			"sys/fs/cgroup/memory.max": {Data: []byte("max\n")}}, physical * 9 / 10, "physical memory"},
		{"cgroup v1", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": {Data: []byte("5:cpu,cpuacct:/\n4:memory:/job/7\n0::/\n")},
			"sys/fs/cgroup/memory/job/7/memory.limit_in_bytes": {Data: []byte("2147483648\n")}}, 2147483648 * 9 / 10, "the cgroup memory limit (/sys/fs/cgroup/memory/job/7/memory.limit_in_bytes)"},
		{"cgroup v1 unlimited", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": {Data: []byte("4:memory:/\n")},
			"sys/fs/cgroup/memory/memory.limit_in_bytes": {Data: []byte("9223372036854771712\n")}}, physical * 9 / 10, "physical memory"},
		{"a cgroup limit above physical memory", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": {Data: []byte("0::/\n")},
			"sys/fs/cgroup/memory.max": {Data: []byte("68719476736\n")}}, physical * 9 / 10, "physical memory"},
		{"a cgroup limit only", fstest.MapFS{"proc/self/cgroup": {Data: []byte("0::/\n")},
			"sys/fs/cgroup/memory.max": {Data: []byte("1048576000\n")}}, 1048576000 * 9 / 10, "the cgroup memory limit (/sys/fs/cgroup/memory.max)"},
		{"nothing to read", fstest.MapFS{}, 0, ""},
		{"meminfo unreadable", fstest.MapFS{"proc/meminfo": {Data: []byte("MemTotal: lots\n")}}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, from := memoryLimit(tc.files)
			if got != tc.want || from != tc.from {
				t.Errorf("memoryLimit = %d (%s); want %d (%s)", got, from, tc.want, tc.from)
			}
		})
	}
}

//go:build linux

package agenttool

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A host killed with SIGKILL cannot end its calls: their scripts run on,
// in their cgroups or bearing their marks. So each run is recorded, while
// it runs, in a file of RunOptions.Records or ProcessOptions.Records
// (<state>/agent-tool-runs for a host): the host that runs it (machine, boot, pid namespace, pid and the
// pid's start time), its mark, its cgroup and its temp dir. [Reap], called
// by the next host to start on the state directory, ends the runs of
// hosts that are gone and leaves those of live ones: several hosts may
// share a machine or a state directory.

// hostID names a process over the machine's uptime: a pid is reused, a
// pid with its start time is not.
type hostID struct {
	Name  string `json:"name"`  // the machine's host name
	Boot  string `json:"boot"`  // /proc/sys/kernel/random/boot_id
	PidNS string `json:"pidns"` // the pid namespace, in which Pid is
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"` // the process's start, in clock ticks after boot
}

// runRecord is what a run's record file holds.
type runRecord struct {
	Host   hostID `json:"host"`
	Mark   string `json:"mark"`             // the run's id, in AGENT_SDK_RUN_ID
	Cgroup string `json:"cgroup,omitempty"` // the run's cgroup directory
	Tmp    string `json:"tmp,omitempty"`    // the run's temp dir
}

// self is this process's hostID.
var self = sync.OnceValue(func() hostID {
	id := hostID{Pid: os.Getpid()}
	id.Name, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		id.Boot = strings.TrimSpace(string(b))
	}
	id.PidNS, _ = os.Readlink("/proc/self/ns/pid")
	id.Start, _ = startTime(id.Pid)
	return id
})

// startTime reads when the process pid started (field 22 of its stat).
func startTime(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:])) // from field 3, the state
	if len(f) < 20 {
		return 0, false
	}
	t, err := strconv.ParseUint(f[19], 10, 64)
	return t, err == nil
}

// record writes the run's record into dir, whole or not at all, and
// returns its path.
func record(dir string, r runRecord) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".run-*")
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o700); err == nil {
			f, err = os.CreateTemp(dir, ".run-*")
		}
	}
	if err != nil {
		return "", err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	path := filepath.Join(dir, r.Mark+".json")
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return path, nil
}

// Reap ends what runs recorded in dir left behind when their host died
// (SIGKILL, a crash): it kills their processes, removes their cgroups and
// temp dirs, and forgets them. The runs of live hosts, this one's
// included, are left alone, as are those of hosts it cannot tell about
// (another machine, another pid namespace). It returns how many runs it
// ended; a dir that does not exist holds none.
func Reap(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the runs of agent tools: %w", err)
	}
	me := self()
	var dead []runRecord
	var files []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		if strings.HasPrefix(name, ".run-") {
			// A record its host was writing when it died; one being
			// written lives for microseconds.
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Minute {
				os.Remove(path)
			}
			continue
		}
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue // gone meanwhile: its run ended
		}
		var r runRecord
		if err := json.Unmarshal(b, &r); err != nil {
			errs = append(errs, fmt.Errorf("reading %s: %w", path, err))
			continue
		}
		switch {
		case r.Host.Name != me.Name:
			continue // another machine's
		case r.Host.Boot != me.Boot:
			r.Cgroup, r.Mark = "", "" // a previous boot's: nothing of it runs
		case r.Host.PidNS != me.PidNS || hostAlive(r.Host):
			continue
		}
		dead = append(dead, r)
		files = append(files, path)
	}
	// Every dead run's mark is swept, its cgroup killed or not: a run may
	// have gone on without the cgroup its record names (one the host could
	// not make, or start processes in).
	var marks []string
	for _, r := range dead {
		if r.Cgroup != "" {
			if err := killCgroup(r.Cgroup); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("killing the run's cgroup %s: %w", r.Cgroup, err))
			}
		}
		if r.Mark != "" {
			marks = append(marks, r.Mark)
		}
	}
	if len(marks) > 0 && !sweep(marks...) {
		errs = append(errs, fmt.Errorf("sweeping dead hosts' runs: %w", errSurvived))
	}
	for i, r := range dead {
		if r.Tmp != "" {
			if err := os.RemoveAll(r.Tmp); err != nil {
				errs = append(errs, fmt.Errorf("removing the run's temp dir: %w", err))
			}
		}
		os.Remove(files[i])
	}
	return len(dead), errors.Join(errs...)
}

// hostAlive reports whether the host h still runs.
func hostAlive(h hostID) bool {
	start, ok := startTime(h.Pid)
	return ok && start == h.Start
}

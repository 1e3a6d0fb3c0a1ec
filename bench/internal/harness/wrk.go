package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// FindWrk returns wrk's path, installing the Debian package when missing
// and root. orElse ends the messages that say to install it (", or use
// -wrk=false" where there is another way).
func FindWrk(orElse string) (string, error) {
	if p, err := exec.LookPath("wrk"); err == nil {
		return p, nil
	}
	if os.Geteuid() != 0 {
		return "", errors.New("wrk is not installed: install the Debian package (sudo apt-get install -y wrk) and run again" + orElse)
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", errors.New("wrk is not installed, and there is no apt-get to install it with: install wrk and run again" + orElse)
	}
	fmt.Fprintln(os.Stderr, "wrk is not installed: apt-get install -y wrk")
	install := func(args ...string) error {
		cmd := exec.Command("apt-get", args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.Run()
	}
	if err := install("install", "-y", "wrk"); err != nil {
		// The package lists may be missing or stale.
		if err := install("update"); err != nil {
			return "", fmt.Errorf("apt-get update: %w", err)
		}
		if err := install("install", "-y", "wrk"); err != nil {
			return "", fmt.Errorf("apt-get install -y wrk: %w; install wrk and run again", err)
		}
	}
	return exec.LookPath("wrk")
}

// LuaString quotes s as a Lua 5.1 string literal.
func LuaString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\%03d", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Script is a wrk Lua script: request, the command's Lua that makes the
// requests (wrk.method and the like, or a request function), then the
// harness's part. Its setup numbers the threads from 1 (tid) and init sets
// n = 0 and bad = 0 in each, for request's use; with check, a response
// hook counts as bad every answer for which the Lua condition badStatus
// holds (say, "status ~= 200") or whose body does not hold expect; and
// done prints the figures on the one line that RunWrk reads.
func Script(request, expect, badStatus string, check bool) string {
	var b strings.Builder
	b.WriteString(request)
	fmt.Fprintf(&b, "local expect = %s\n", LuaString(expect))
	b.WriteString(`
local threads = {}
local nthreads = 0

function setup(thread)
  nthreads = nthreads + 1
  thread:set("tid", nthreads)
  table.insert(threads, thread)
end

function init(args)
  n = 0
  bad = 0
end
`)
	if check {
		fmt.Fprintf(&b, `
function response(status, headers, body)
  if %s or not string.find(body, expect, 1, true) then
    bad = bad + 1
  end
end
`, badStatus)
	}
	b.WriteString(`
function done(summary, latency, requests)
  local nbad = 0
  for _, t in ipairs(threads) do
    nbad = nbad + (t:get("bad") or 0)
  end
  local e = summary.errors
  io.write(string.format("BENCH requests=%d duration_us=%d p50_us=%.0f p99_us=%.0f errors=%d bad=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout, nbad))
end
`)
	return b.String()
}

// RunWrk writes script (Script) to dir as name.lua and runs wrk, the
// binary at path wrk, on url with it: c connections, threads threads (0:
// one per CPU; at most c either way), for d in whole seconds (at least
// one), with --latency. The result has wrk's figures (bad answers counted
// among the errors, and if there are errors, FirstErr "wrk said:" and its
// output) and wrk's CPU (Gen), not the server's.
func RunWrk(ctx context.Context, wrk, dir, name, script, url string, c, threads int, d time.Duration) (Result, error) {
	var res Result
	path := filepath.Join(dir, name+".lua")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		return res, fmt.Errorf("writing wrk's script: %w", err)
	}
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	threads = min(threads, c)
	secs := max(1, int(d.Round(time.Second)/time.Second))
	cmd := exec.CommandContext(ctx, wrk, "-t", strconv.Itoa(threads), "-c", strconv.Itoa(c), "-d", strconv.Itoa(secs)+"s",
		"--latency", "-s", path, url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return res, fmt.Errorf("wrk: %w: %s", err, out)
	}
	res.Gen = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	var line string
	for l := range strings.Lines(string(out)) {
		if strings.HasPrefix(l, "BENCH ") {
			line = strings.TrimSpace(l)
		}
	}
	var durUS, p50, p99, bad int64
	if _, err := fmt.Sscanf(line, "BENCH requests=%d duration_us=%d p50_us=%d p99_us=%d errors=%d bad=%d",
		&res.Requests, &durUS, &p50, &p99, &res.Errors, &bad); err != nil {
		return res, fmt.Errorf("reading wrk's output: %w: %s", err, out)
	}
	res.Errors += bad
	res.Elapsed = time.Duration(durUS) * time.Microsecond
	res.P50, res.P99 = time.Duration(p50)*time.Microsecond, time.Duration(p99)*time.Microsecond
	if res.Errors > 0 {
		res.FirstErr = "wrk said:\n" + string(out)
	}
	return res, nil
}

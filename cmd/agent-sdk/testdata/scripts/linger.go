package tools

import "github.com/agentsdk/agentsdk/tool"

// linger leaves a child running in a session of its own (setsid: out of
// the script's process group) and blocks, so that a test can kill the
// host while it runs. Into its workspace it writes what it could do
// outside it (peek: a line "read <path>" or "wrote <path>" for each
// attempt that worked), the cgroup it runs in (cgroup) and, last, the
// child's pid (child.pid, whole or not at all).
var _ = tool.DefineScript(tool.Config{
	Description: "Leave a child running and block.",
}, `#!/bin/sh
: > peek
for f in ../../other/workspace/secret.txt ../../../agent.db; do
	head -c 1 "$f" >/dev/null 2>&1 && echo "read $f" >> peek
done
(echo planted > ../../../planted) 2>/dev/null && echo "wrote ../../../planted" >> peek
cat /proc/self/cgroup > cgroup
setsid sh -c 'echo $$ > child.pid.tmp; mv child.pid.tmp child.pid; exec sleep 300' </dev/null >/dev/null 2>&1 &
exec sleep 300
`)

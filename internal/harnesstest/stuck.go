package harnesstest

import (
	"time"

	"github.com/agentsdk/agentsdk/internal/harness"
)

// stuckAgent is an ACP agent in sh that opens a session and, prompted,
// writes "stuck in a loop" to its stderr, says one thing, asks permission
// to run make when $ASK is set, and then sends nothing more, ever.
const stuckAgent = `while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
  *'"method":"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{}}}\n' "$id" ;;
  *'"method":"session/new"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}\n' "$id" ;;
  *'"method":"session/prompt"'*)
    echo "stuck in a loop" >&2
    printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Working"}}}}\n'
    if [ -n "$ASK" ]; then
      printf '{"jsonrpc":"2.0","id":900,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"c1","title":"make","kind":"execute"},"options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}}\n'
    fi ;;
  esac
done`

// Stuck returns the spec of an ACP agent (named "stuck", needing only sh
// and sed) that hangs once prompted, with hang as its hang timeout; ask
// makes it ask permission first.
func Stuck(hang time.Duration, ask bool) harness.Spec {
	s := harness.Spec{Name: "stuck", Command: "sh", Args: []string{"-c", stuckAgent}, Env: map[string]string{}, HangTimeout: hang}
	if ask {
		s.Env["ASK"] = "1"
	}
	return s
}

package agentmain

import (
	"testing"

	"github.com/agentsdk/agentsdk/evals"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/serveflags"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

// The flags' defaults, which the CLI shows without linking the host, are
// the serve and host packages' own.
func TestFlagDefaultsAgree(t *testing.T) {
	tests := []struct {
		name      string
		flag, own any
	}{
		{"max-body-bytes", int64(serveflags.MaxBodyBytesDefault), int64(serve.MaxBodyBytesDefault)},
		{"drain-timeout", serveflags.DrainTimeoutDefault, serve.DrainTimeoutDefault},
		{"lease-ttl", serveflags.LeaseTTLDefault, host.LeaseTTLDefault},
		{"approval-wait", serveflags.ApprovalWaitDefault, serve.ApprovalWaitDefault},
		{"approval-timeout", serveflags.ApprovalTimeoutDefault, host.ApprovalTimeoutDefault},
		{"max-sessions", serveflags.MaxSessionsDefault, host.MaxSessionsDefault},
		{"max-pending", serveflags.MaxPendingDefault, host.MaxPendingDefault},
		{"max-result-bytes", int64(serveflags.MaxResultBytesDefault), int64(tool.MaxResultBytesDefault)},
		{"model-result-bytes", serveflags.ModelResultBytesDefault, host.ModelResultBytesDefault},
		{"stream-write-timeout", serveflags.StreamWriteTimeoutDefault, serve.StreamWriteTimeoutDefault},
		{"max-overrun", serveflags.MaxOverrunDefault, serve.MaxOverrunDefault},
		{"unauth-body-timeout", serveflags.UnauthBodyTimeoutDefault, serve.UnauthBodyTimeoutDefault},
		{"max-unauth-bodies", serveflags.MaxUnauthBodiesDefault, serve.MaxUnauthBodiesDefault},
		{"max-eval-batches", serveflags.MaxEvalBatchesDefault, evals.MaxRunningBatches},
		{"max-message-bytes", serveflags.MaxMessageBytesDefault, host.MaxMessageBytesDefault},
	}
	for _, tt := range tests {
		if tt.flag != tt.own {
			t.Errorf("--%s defaults to %v, but its package's default is %v", tt.name, tt.flag, tt.own)
		}
	}
}

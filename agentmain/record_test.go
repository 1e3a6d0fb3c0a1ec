package agentmain

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/modeltest"
)

// --record wraps the turns' and the summaries' models, --replay takes
// their place (and that of a model that could not be opened); what
// cannot work is refused, saying why.
func TestRecordReplay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cassettes")
	turns, summaries := modeltest.New(modeltest.Text("answer")), modeltest.New(modeltest.Text("summary"))
	opts := &host.Options{Model: turns, Compaction: host.CompactionOptions{Model: summaries}}
	var out bytes.Buffer
	if err := recordReplay(opts, dir, "", &out); err != nil {
		t.Fatal(err)
	}
	if _, ok := opts.Model.(*modeltest.Recorder); !ok {
		t.Errorf("--record: the turns' model is %T", opts.Model)
	}
	if _, ok := opts.Compaction.Model.(*modeltest.Recorder); !ok {
		t.Errorf("--record: the summaries' model is %T", opts.Compaction.Model)
	}
	if !strings.Contains(out.String(), "recording model calls into "+dir) {
		t.Errorf("--record says %q", out.String())
	}
	for range opts.Model.Stream(t.Context(), &model.Request{Messages: []model.Message{{Role: model.User, Text: "q"}}}) {
	}

	opts = &host.Options{ModelError: model.ErrNotConfigured, Compaction: host.CompactionOptions{Model: summaries}}
	if err := recordReplay(opts, "", dir, &out); err != nil {
		t.Fatal(err)
	}
	if _, ok := opts.Model.(*modeltest.Replayer); !ok || opts.ModelError != nil {
		t.Errorf("--replay: the turns' model is %T (%v)", opts.Model, opts.ModelError)
	}
	if _, ok := opts.Compaction.Model.(*modeltest.Replayer); !ok {
		t.Errorf("--replay: the summaries' model is %T", opts.Compaction.Model)
	}

	for _, tt := range []struct {
		name           string
		opts           *host.Options
		record, replay string
		want           string
	}{
		{"both", &host.Options{Model: turns}, dir, dir, "--record and --replay cannot be used together"},
		{"no model to record", &host.Options{ModelError: model.ErrNotConfigured}, dir, "", "--record " + dir + ": there is no model to record: no model is configured"},
		{"nothing to replay", &host.Options{}, "", t.TempDir(), "--replay: replaying model calls: "},
	} {
		if err := recordReplay(tt.opts, tt.record, tt.replay, &out); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

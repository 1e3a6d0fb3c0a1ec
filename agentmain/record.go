package agentmain

import (
	"errors"
	"fmt"
	"io"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/modeltest"
)

// recordReplay applies --record and --replay to the host's models, the
// turns' and the summaries' (compaction.model's): --record wraps each in
// a modeltest.Recorder writing into record, --replay puts a
// modeltest.Replayer of replay in their place, so that no provider is
// needed (nor its key). A cloud turn's model runs on a runner, which
// neither records nor replays.
func recordReplay(opts *host.Options, record, replay string, errOut io.Writer) error {
	switch {
	case record != "" && replay != "":
		return errors.New("--record and --replay cannot be used together: record a session's model calls first, then replay them")
	case replay != "":
		r, err := modeltest.Replay(replay)
		if err != nil {
			return fmt.Errorf("--replay: %w", err)
		}
		opts.Model, opts.ModelError = r, nil
		if opts.Compaction.Model != nil {
			opts.Compaction.Model = r
		}
		fmt.Fprintf(errOut, "model calls are answered from the cassettes in %s; a request none was recorded for fails its turn\n", replay)
	case record != "":
		if opts.Model == nil {
			err := opts.ModelError
			if err == nil {
				err = model.ErrNotConfigured
			}
			return fmt.Errorf("--record %s: there is no model to record: %w", record, err)
		}
		var err error
		if opts.Model, err = recorded(opts.Model, record); err != nil {
			return err
		}
		if opts.Compaction.Model != nil {
			if opts.Compaction.Model, err = recorded(opts.Compaction.Model, record); err != nil {
				return err
			}
		}
		fmt.Fprintf(errOut, "recording model calls into %s\n", record)
	}
	return nil
}

// recorded is p recording into dir.
func recorded(p model.Provider, dir string) (model.Provider, error) {
	r, err := modeltest.Record(p, dir)
	if err != nil {
		return nil, fmt.Errorf("--record: %w", err)
	}
	return r, nil
}

package host

import (
	"context"
	"fmt"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/turnloop"
	"github.com/agentsdk/agentsdk/model"
)

// CompactionOptions keep model turns within the model's context window
// (agent.yaml's compaction:; see turnloop.ContextConfig). The window is
// ModelConfig.ContextWindow, else the shipped table's
// (model.DefaultWindows); a model in neither is not counted.
type CompactionOptions struct {
	// Off turns compaction and clearing off: a request that would not fit
	// the window still fails before it is sent.
	Off bool
	// Threshold is the share of the window past which a request is made
	// smaller; zero means turnloop.DefaultThreshold (0.8).
	Threshold float64
	// KeepTurns is how many of the last turns are kept verbatim; zero
	// means turnloop.DefaultKeepTurns (2).
	KeepTurns int
	// ClearBytes: results older than the kept turns and larger than this
	// are cleared before compacting; zero means turnloop.DefaultClearBytes
	// (2 KiB), negative none.
	ClearBytes int
	// Model writes the summaries, ModelConfig naming it (its usage and
	// price); nil: the turns' model.
	Model       model.Provider
	ModelConfig model.Config
	// Prompt is the summariser's system prompt; "" means
	// turnloop.DefaultCompactionPrompt.
	Prompt string
	// SummaryTokens caps a summary; zero means
	// turnloop.DefaultSummaryTokens (2,048).
	SummaryTokens int
}

// MaxMessageBytesDefault bounds a message that starts a turn
// (Options.MaxMessageBytes).
const MaxMessageBytesDefault = 1 << 20

// windowOf is a model's window: its configuration's, else the shipped
// table's; 0 if unknown.
func windowOf(m model.Config) int64 {
	if m.ContextWindow > 0 {
		return m.ContextWindow
	}
	w, _ := model.DefaultWindows().Lookup(m.Name)
	return w
}

// contextConfig is the loop's ContextConfig from the options.
func (h *Host) contextConfig() turnloop.ContextConfig {
	o := h.opts.Compaction
	c := turnloop.ContextConfig{Window: windowOf(h.opts.ModelConfig), Threshold: o.Threshold, KeepTurns: o.KeepTurns, ClearBytes: o.ClearBytes,
		Summarizer: o.Model, Provider: o.ModelConfig.Provider, ModelName: o.ModelConfig.Name, Prompt: o.Prompt, SummaryTokens: o.SummaryTokens}
	if o.Off {
		c.Threshold, c.ClearBytes = 1, -1
	}
	return c
}

// runnerContext is the context settings of a cloud turn: the cloud
// model's window; nil when it is unknown.
func (h *Host) runnerContext() *api.RunnerContext {
	w := windowOf(h.opts.Cloud.Model)
	if w <= 0 {
		return nil
	}
	c := h.contextConfig()
	return &api.RunnerContext{Window: w, Threshold: c.Threshold, KeepTurns: c.KeepTurns, ClearBytes: c.ClearBytes, Prompt: c.Prompt, SummaryTokens: c.SummaryTokens}
}

// readContext rebuilds a session's conversation for a turn, reading it
// from its latest compaction (Session.CompactedSeq): what comes before is
// in the summary, so a turn's cost does not grow with the session's
// length. fn sees each event read.
func (h *Host) readContext(ctx context.Context, sess api.Session, fn func(api.Event)) (*turnloop.History, error) {
	hist := turnloop.NewHistory()
	if h.builtinReader != nil {
		hist.ResultReader = h.builtinReader.Name()
	}
	from, err := h.contextStart(ctx, sess)
	if err != nil {
		return nil, err
	}
	err = eachEventAfter(ctx, h.log, sess.ID, from, func(e api.Event) {
		hist.Add(e)
		if fn != nil {
			fn(e)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("reading the session's history: %w", err)
	}
	return hist, nil
}

// contextStart is the seq after which a session's conversation is read:
// its latest compaction's throughSeq, or 0.
func (h *Host) contextStart(ctx context.Context, sess api.Session) (int64, error) {
	if sess.CompactedSeq <= 0 {
		return 0, nil
	}
	evs, err := h.log.Events(ctx, sess.ID, sess.CompactedSeq-1, 1)
	if err != nil {
		return 0, fmt.Errorf("reading the session's latest compaction: %w", err)
	}
	if len(evs) == 0 || evs[0].Kind != api.KindContextCompacted {
		return 0, nil // not where the session says: read it all
	}
	c, err := api.Decode[api.ContextCompacted](evs[0])
	if err != nil {
		return 0, nil
	}
	return c.ThroughSeq, nil
}

// Compact summarises the session's conversation now, but for its last
// turns (CompactionOptions.KeepTurns): a turn of its own (kind compact)
// that records the summary's model.usage and context.compacted. It fails
// with api.ErrSessionBusy while another turn runs. With nothing to
// summarise, Compacted is false and Reason says why; when the summary's
// model call fails (or there is no model, or a usage limit is reached)
// Compacted is false, Code classifies it as turn.failed does, and the
// compact turn ends failed.
func (s Sessions) Compact(ctx context.Context, sessionID string) (api.CompactResponse, error) {
	h := s.h
	sess, err := h.session(ctx, sessionID)
	if err != nil {
		return api.CompactResponse{}, err
	}
	if h.opts.Model == nil {
		return api.CompactResponse{OK: true, Code: api.FailureNotConfigured, Reason: "compacting a session needs a model: " + h.opts.ModelError.Error()}, nil
	}
	hold, err := h.beginTurn(ctx, sessionID, api.TurnStarted{Kind: api.TurnCompact})
	if err != nil {
		return api.CompactResponse{}, err
	}
	tctx := h.leases.track(h.ctx, h.log, h.logger, hold.Fence)
	defer h.leases.untrack(sessionID, hold.TurnID)
	ans := api.CompactResponse{OK: true, TurnID: hold.TurnID}
	var end api.Payload = api.TurnCompleted{}
	rec, reason, err := h.compactNow(tctx, sess, hold.TurnID)
	switch {
	case err != nil:
		code, why := failure(tctx, err)
		end = api.TurnFailed{Code: code, Reason: why}
		ans.Code, ans.Reason = code, why
	case rec == nil:
		ans.Reason = reason
	default:
		ans.Compacted, ans.Context = true, rec
	}
	if err := h.endTurn(tctx, hold.Fence, end); err != nil {
		return api.CompactResponse{}, storeError(err, nil)
	}
	if ans.Compacted {
		if got, err := h.session(ctx, sessionID); err == nil {
			ans.Seq = got.CompactedSeq
		}
	}
	return ans, nil
}

// compactNow runs a compaction in a turn the host holds.
func (h *Host) compactNow(ctx context.Context, sess api.Session, turnID string) (*api.ContextCompacted, string, error) {
	hist, err := h.readContext(ctx, sess, nil)
	if err != nil {
		return nil, "", err
	}
	cfg := h.turnConfig(h.modelTools(), sess.ID)
	// A compaction does not wait for a person to raise a usage limit.
	return turnloop.Compact(ctx, cfg, turnEnv{h: h, sess: sess, turnID: turnID, raised: raises{never: true}}, hist, "manual")
}

// checkMessage refuses a message over Options.MaxMessageBytes.
func (h *Host) checkMessage(text string) error {
	if limit := h.opts.MaxMessageBytes; limit > 0 && len(text) > limit {
		return api.Errorf(api.CodeMessageTooBig, "the message is %d bytes, over the host's limit of %d (--max-message-bytes)", len(text), limit)
	}
	return nil
}

// eachEventAfter is eachEvent from the event after seq after.
func eachEventAfter(ctx context.Context, r eventReader, sessionID string, after int64, fn func(api.Event)) error {
	const page = 1000
	for {
		evs, err := r.Events(ctx, sessionID, after, page)
		if err != nil {
			return err
		}
		for _, e := range evs {
			fn(e)
		}
		if len(evs) < page {
			return nil
		}
		after = evs[len(evs)-1].Seq
	}
}

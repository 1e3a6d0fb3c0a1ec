// Package evals runs an agent's evals: batches of cases, each a session
// of its own on the channel "eval" ([host.EvalChannel]) in which a
// message (or a conversation) is sent to the agent's model, and the
// trajectory then checked (a tool called with some args, a tool not
// called, the final answer containing or matching a text, at most so
// many model steps, no errors) and optionally scored by a scorer tool.
// It is what POST /v1/evals, `agent-sdk eval run` and call.Host.Evals run.
//
// A [Service] runs on a host, as a [host.Subsystem] it registers before
// the host starts:
//
//	h, err := host.New(set, &host.Options{StateRoot: "state", Store: st})
//	…
//	ev, err := evals.New(h, &evals.Options{Logger: logger})
//	…
//	err = h.Start(ctx)
//	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: token, Evals: ev})
//
// Batches run on the store's durable jobs (SQLite, PostgreSQL): a batch
// and one job per case (kind eval.case, key <batch>/<index>) are written
// in one transaction. A case's job starts it — StartEvalCase, queued to
// running, with its session's id reserved and a lease, in the job's
// transaction — unless the batch already runs its concurrency's worth
// of cases (it snoozes then); once that commits, the case runs on that
// host: its session is created, its message (or each message of its
// conversation, after the previous turn ended) is sent, and when its
// last turn has ended the checks are read off the session's events and
// the result recorded (FinishEvalCase). The case's lease is renewed
// while it runs; a case whose host died (its lease ran out) is recorded
// as failed by the next sweep of any host, never run again. A host also
// starts a batch's queued cases itself, rather than when River's worker
// polls: as it creates the batch, as one of its cases ends, and at every
// sweep for the batches that are not completed; the jobs remain, for
// the hosts that start after a crash.
//
// The validation of an eval (check.go) and its checks (checks.go) are
// pure functions; the rest (cases.go, converse.go, score.go, sweep.go)
// acts on the host through its exported API.
package evals

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// ConcurrencyDefault is how many cases of a batch run at once.
const ConcurrencyDefault = 4

// MaxRunningBatches is how many batches one principal may have queued or
// running at once by default (Options.MaxRunningBatches); [Service.Run]
// refuses the next with quota_exceeded.
const MaxRunningBatches = 4

// Options configure a [Service]. The zero value is the defaults.
type Options struct {
	// Logger receives the service's logs: batches started and completed,
	// cases interrupted, store failures. Nil discards them.
	Logger *slog.Logger
	// MaxRunningBatches bounds the batches one principal may have queued
	// or running at once; zero means MaxRunningBatches, negative no
	// limit.
	MaxRunningBatches int
}

// Service runs eval batches on a host. Make it with [New]; it is safe for
// concurrent use. Its batches and cases are the store's (store.Evals);
// what it keeps itself is a cache of the cases of the batches it runs.
type Service struct {
	h      *host.Host
	logger *slog.Logger
	// maxBatches is Options.MaxRunningBatches, with its default; < 0:
	// no limit.
	maxBatches int
	jobs       store.Jobs  // nil: the store runs no durable jobs
	evals      store.Evals // nil with jobs
	cache      cache
}

// New returns the evals of h and registers them on it (their job kind,
// their sweep, call.Host.Evals): call it before h.Start. On a store
// without durable jobs (the in-memory store) every method answers
// no_jobs.
func New(h *host.Host, opts *Options) (*Service, error) {
	if h == nil {
		return nil, errors.New("creating evals: the host is nil")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{h: h, logger: o.Logger, cache: newCache(), maxBatches: cmp.Or(o.MaxRunningBatches, MaxRunningBatches)}
	j, jobs := h.Store().(store.Jobs)
	ev, evals := h.Store().(store.Evals)
	if jobs && evals {
		s.jobs, s.evals = j, ev
	}
	err := h.Register(host.Subsystem{
		Name:     "evals",
		Jobs:     map[string]store.JobHandler{jobCase: s.caseJob},
		Sweep:    s.sweep,
		Services: func(sv *tool.Services) { sv.Evals = toolService{s} },
	})
	if err != nil {
		return nil, fmt.Errorf("creating evals: %w", err)
	}
	return s, nil
}

// ready reports no_jobs on a store without durable jobs.
func (s *Service) ready() error {
	if s.jobs == nil {
		return api.Errorf(api.CodeNoJobs, "evals: the host's store runs no durable jobs (the in-memory store); evals need SQLite or PostgreSQL")
	}
	return nil
}

// Run starts a batch of an eval's cases and returns it as stored,
// queued: each case runs as a durable job, in a session of its own on
// the channel "eval"; Get tells how far it got. principal is who asked:
// the batch is its, and so are its cases' sessions, which count against
// its session quota (host.Options.MaxSessions) from the start — a batch
// whose cases, with the cases still queued of its other batches, would
// take it past the quota is refused with quota_exceeded, and so is a
// batch beyond Options.MaxRunningBatches. An invalid eval is refused with
// invalid_eval, listing every problem; a store without durable jobs with
// no_jobs.
func (s *Service) Run(ctx context.Context, req api.EvalRunRequest, principal string) (api.EvalBatch, error) {
	if err := s.ready(); err != nil {
		return api.EvalBatch{}, err
	}
	cases, err := checkEval(&req, s.h)
	if err != nil {
		return api.EvalBatch{}, err
	}
	load, err := s.evals.PrincipalEvals(ctx, principal)
	if err != nil {
		return api.EvalBatch{}, host.StoreError(err, nil)
	}
	if s.maxBatches >= 0 && load.Batches >= s.maxBatches {
		return api.EvalBatch{}, api.Errorf(api.CodeQuotaExceeded, "%s already runs %d eval batches, the most a principal may run at once (%d); wait for one to complete", principal, load.Batches, s.maxBatches)
	}
	if err := s.h.Sessions().CheckQuota(ctx, principal, load.Queued+len(cases)); err != nil {
		return api.EvalBatch{}, err
	}
	b := api.EvalBatch{ID: host.NewID("eval"), Name: req.Name, Status: api.EvalQueued, Principal: principal,
		Created: time.Now().UTC().Truncate(time.Microsecond), Total: len(cases), Cases: make([]api.EvalCaseResult, len(cases)),
		Concurrency: cmp.Or(req.Concurrency, ConcurrencyDefault)}
	for i, c := range cases {
		b.Cases[i] = api.EvalCaseResult{Index: i, Case: c, Status: api.EvalQueued}
	}
	err = s.jobs.InTx(ctx, func(tx store.Tx) error {
		if err := tx.CreateEvalBatch(ctx, b); err != nil {
			return err
		}
		for i := range cases {
			if err := tx.Schedule(ctx, store.JobSpec{Kind: jobCase, Key: caseKey(b.ID, i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return api.EvalBatch{}, host.StoreError(err, nil)
	}
	s.logger.Info("started an eval batch", "batch", b.ID, "name", b.Name, "cases", b.Total, "principal", principal)
	s.h.Go("starting an eval batch's cases", func(ctx context.Context) { s.startQueued(ctx, b.ID) })
	return b, nil
}

// List lists batches, newest first, without their cases but with their
// usage, and the cursor of the next page.
func (s *Service) List(ctx context.Context, p store.Page) ([]api.EvalBatch, string, error) {
	if err := s.ready(); err != nil {
		return nil, "", err
	}
	list, next, err := s.evals.ListEvalBatches(ctx, p)
	if err != nil {
		return nil, "", host.StoreError(err, nil)
	}
	if err := s.withListUsage(ctx, list); err != nil {
		return nil, "", host.StoreError(err, nil)
	}
	return list, next, nil
}

// Get returns a batch with its cases' results and usage (eval_not_found
// if no batch has that id).
func (s *Service) Get(ctx context.Context, id string) (api.EvalBatch, error) {
	if err := s.ready(); err != nil {
		return api.EvalBatch{}, err
	}
	b, err := s.evals.EvalBatch(ctx, id)
	if err != nil {
		return api.EvalBatch{}, host.StoreError(err, api.Errorf(api.CodeEvalNotFound, "%s: %q", api.CodeEvalNotFound.Description(), id))
	}
	bs := []api.EvalBatch{b}
	if err := s.withUsage(ctx, bs); err != nil {
		return api.EvalBatch{}, err
	}
	return bs[0], nil
}

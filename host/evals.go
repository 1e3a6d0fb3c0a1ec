package host

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/progress"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// Evals run on the store's jobs. A batch and one job per case (kind
// eval.case, key <batch>/<index>) are written in one transaction. A case's
// job starts it — StartEvalCase, queued to running, with its session's id
// reserved and a lease, in the job's transaction — unless the batch
// already runs its concurrency's worth of cases (it snoozes then); once
// that commits, the case runs here: its session is created on the channel
// "eval", its message (or each message of its conversation, after the
// previous turn ended) is sent, and when its last turn has ended the
// checks are read off the session's events and the result recorded
// (FinishEvalCase). The case's lease is renewed while it runs; a case
// whose host died (its lease ran out) is recorded as failed by the next
// sweep of any host, never run again. A host also starts a batch's queued
// cases itself, rather than when River's worker polls: as it creates the
// batch, as one of its cases ends, and at every sweep for the batches
// that are not completed; the jobs remain, for the hosts that start after
// a crash.

// jobEvalCase runs a case of a batch (Key: evalCaseKey).
const jobEvalCase = "eval.case"

// Limits of an eval.
const (
	maxEvalCases        = 500
	maxEvalChecks       = 20
	maxEvalConversation = 50       // messages of a case's conversation
	maxEvalMessage      = 64 << 10 // bytes of one message
	maxEvalName         = 200      // bytes of a batch's or a case's name
	maxEvalConcurrency  = 64
	maxEvalPattern      = 4 << 10 // bytes of a Matches or Contains
)

// EvalConcurrencyDefault is how many cases of a batch run at once.
const EvalConcurrencyDefault = 4

const (
	// evalCaseTimeout bounds a case, all its turns together.
	evalCaseTimeout = 10 * time.Minute
	// evalSnooze is how long a case's job waits while its batch runs as
	// many cases as it may.
	evalSnooze    = 500 * time.Millisecond
	evalSnoozeMax = 5 * time.Second
	// evalSweepBatches is how many of the newest batches a sweep looks at
	// for queued cases to start.
	evalSweepBatches = 50
	// evalEventsPage is how many events a case reads at once.
	evalEventsPage = 1000
)

// evalInterrupted is the error of a case whose host stopped (or died)
// while it ran: it is not run again, since its session's side effects
// may have happened.
const evalInterrupted = "interrupted: its host stopped; not run again"

// errEvalLapsed ends a case whose hold another host's sweep ended.
var errEvalLapsed = errors.New("the case's hold lapsed: it was recorded as interrupted")

func evalCaseKey(batchID string, index int) string { return batchID + "/" + strconv.Itoa(index) }

func parseEvalCaseKey(key string) (string, int, error) {
	i := strings.LastIndexByte(key, '/')
	if i <= 0 {
		return "", 0, fmt.Errorf("eval case key %q has no /", key)
	}
	n, err := strconv.Atoi(key[i+1:])
	if err != nil || n < 0 {
		return "", 0, fmt.Errorf("eval case key %q: no index after the /", key)
	}
	return key[:i], n, nil
}

// evalStores returns the store's jobs and evals, or no_jobs (the
// in-memory store has neither).
func (h *Host) evalStores() (store.Jobs, store.Evals, error) {
	j, jobs := h.log.Store.(store.Jobs)
	ev, evals := h.log.Store.(store.Evals)
	if !jobs || !evals {
		return nil, nil, api.Errorf(api.CodeNoJobs, "evals: the host's store runs no durable jobs (the in-memory store); evals need SQLite or PostgreSQL")
	}
	return j, ev, nil
}

// RunEval starts a batch of an eval's cases and returns it as stored,
// queued: each case runs as a durable job, in a session of its own on the
// channel "eval"; GetEval tells how far it got. An invalid eval is
// refused with invalid_eval, listing every problem; a store without
// durable jobs with no_jobs.
func (h *Host) RunEval(ctx context.Context, req api.EvalRunRequest, principal string) (api.EvalBatch, error) {
	j, ev, err := h.evalStores()
	if err != nil {
		return api.EvalBatch{}, err
	}
	cases, err := h.checkEval(&req)
	if err != nil {
		return api.EvalBatch{}, err
	}
	b := api.EvalBatch{ID: newID("eval"), Name: req.Name, Status: api.EvalQueued,
		Created: time.Now().UTC().Truncate(time.Microsecond), Total: len(cases), Cases: make([]api.EvalCaseResult, len(cases)),
		Concurrency: cmp.Or(req.Concurrency, EvalConcurrencyDefault)}
	for i, c := range cases {
		b.Cases[i] = api.EvalCaseResult{Index: i, Case: c, Status: api.EvalQueued}
	}
	err = j.InTx(ctx, func(tx store.Tx) error {
		if err := tx.CreateEvalBatch(ctx, b); err != nil {
			return err
		}
		for i := range cases {
			if err := tx.Schedule(ctx, store.JobSpec{Kind: jobEvalCase, Key: evalCaseKey(b.ID, i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return api.EvalBatch{}, storeError(err, nil)
	}
	h.logger.Info("started an eval batch", "batch", b.ID, "name", b.Name, "cases", b.Total, "principal", principal)
	if h.ctx.Err() == nil {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			defer guard(h.logger, "starting an eval batch's cases", "batch", b.ID)
			h.startQueuedEvalCases(j, ev, b.ID)
		}()
	}
	return b, nil
}

// ListEvals lists batches, newest first, without their cases, and the
// cursor of the next page.
func (h *Host) ListEvals(ctx context.Context, p store.Page) ([]api.EvalBatch, string, error) {
	_, ev, err := h.evalStores()
	if err != nil {
		return nil, "", err
	}
	list, next, err := ev.ListEvalBatches(ctx, p)
	if err != nil {
		return nil, "", storeError(err, nil)
	}
	return list, next, nil
}

// GetEval returns a batch with its cases' results (eval_not_found if no
// batch has that id).
func (h *Host) GetEval(ctx context.Context, id string) (api.EvalBatch, error) {
	_, ev, err := h.evalStores()
	if err != nil {
		return api.EvalBatch{}, err
	}
	b, err := ev.EvalBatch(ctx, id)
	if err != nil {
		return api.EvalBatch{}, storeError(err, api.Errorf(api.CodeEvalNotFound, "%s: %q", api.CodeEvalNotFound.Description(), id))
	}
	return b, nil
}

// checkEval checks an eval, defaulting its name and its cases' names, and
// returns its cases; invalid_eval lists every problem.
func (h *Host) checkEval(req *api.EvalRunRequest) ([]api.EvalCase, error) {
	var problems []tool.Violation
	bad := func(path, format string, args ...any) {
		problems = append(problems, tool.Violation{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if req.Name == "" {
		req.Name = "eval"
	}
	if len(req.Name) > maxEvalName || !utf8.ValidString(req.Name) {
		bad("name", "must be valid UTF-8 of at most %d bytes", maxEvalName)
	}
	switch {
	case req.Concurrency < 0:
		bad("concurrency", "must not be negative")
	case req.Concurrency > maxEvalConcurrency:
		bad("concurrency", "is %d; at most %d", req.Concurrency, maxEvalConcurrency)
	}
	switch {
	case len(req.Cases) == 0:
		bad("cases", "an eval needs at least one case")
	case len(req.Cases) > maxEvalCases:
		bad("cases", "%d cases; an eval has at most %d (split it)", len(req.Cases), maxEvalCases)
		return nil, invalidEval(problems)
	}
	cases := make([]api.EvalCase, len(req.Cases))
	names := map[string]int{}
	for i, c := range req.Cases {
		at := fmt.Sprintf("cases[%d]", i)
		if c.Name == "" {
			c.Name = "case-" + strconv.Itoa(i+1)
		}
		if first, dup := names[c.Name]; dup {
			bad(at+".name", "%q is the name of cases[%d] too; names must be unique", c.Name, first)
		} else {
			names[c.Name] = i
		}
		if len(c.Name) > maxEvalName || !utf8.ValidString(c.Name) {
			bad(at+".name", "must be valid UTF-8 of at most %d bytes", maxEvalName)
		}
		switch {
		case c.Message != "" && len(c.Conversation) > 0:
			bad(at, "has both a message and a conversation; give one")
		case c.Message == "" && len(c.Conversation) == 0:
			bad(at, "has neither a message nor a conversation")
		case c.Message != "":
			checkEvalMessage(bad, at+".message", c.Message)
		case len(c.Conversation) > maxEvalConversation:
			bad(at+".conversation", "%d messages; at most %d", len(c.Conversation), maxEvalConversation)
		default:
			for k, m := range c.Conversation {
				checkEvalMessage(bad, fmt.Sprintf("%s.conversation[%d]", at, k), m)
			}
		}
		if len(c.Checks) > maxEvalChecks {
			bad(at+".checks", "%d checks; a case has at most %d", len(c.Checks), maxEvalChecks)
		}
		for k, ch := range c.Checks {
			h.checkEvalCheck(bad, fmt.Sprintf("%s.checks[%d]", at, k), ch)
		}
		if c.Scorer != "" {
			t, ok := h.tools.Lookup(c.Scorer)
			switch {
			case !ok:
				bad(at+".scorer", "the agent has no tool %q", c.Scorer)
			case t.Execution() != tool.Server:
				bad(at+".scorer", "%q is an agent tool (a script); a scorer is a server tool", c.Scorer)
			}
		}
		cases[i] = c
	}
	if len(problems) > 0 {
		return nil, invalidEval(problems)
	}
	return cases, nil
}

func checkEvalMessage(bad func(string, string, ...any), path, m string) {
	switch {
	case strings.TrimSpace(m) == "":
		bad(path, "is empty")
	case len(m) > maxEvalMessage:
		bad(path, "is %d bytes; at most %d", len(m), maxEvalMessage)
	case !utf8.ValidString(m):
		bad(path, "is not valid UTF-8")
	}
}

// checkEvalCheck checks that a check is exactly one kind, and sound.
func (h *Host) checkEvalCheck(bad func(string, string, ...any), path string, c api.EvalCheck) {
	var kinds []string
	if c.Called != "" {
		kinds = append(kinds, "called")
	}
	if c.NotCalled != "" {
		kinds = append(kinds, "notCalled")
	}
	if c.Contains != "" {
		kinds = append(kinds, "contains")
	}
	if c.Matches != "" {
		kinds = append(kinds, "matches")
	}
	if c.MaxSteps != 0 {
		kinds = append(kinds, "maxSteps")
	}
	if c.NoError {
		kinds = append(kinds, "noError")
	}
	switch {
	case len(kinds) == 0 && c.Args != nil:
		bad(path, "args without called: args narrow a called check")
		return
	case len(kinds) == 0:
		bad(path, "is empty; give one of called, notCalled, contains, matches, maxSteps, noError")
		return
	case len(kinds) > 1:
		bad(path, "has %s; a check is exactly one kind (make one check of each)", strings.Join(kinds, " and "))
		return
	}
	switch {
	case c.Args != nil && c.Called == "":
		bad(path+".args", "args go with called only")
	case c.Called != "":
		if _, ok := h.lookupForModel(c.Called); !ok {
			bad(path+".called", "the agent has no tool %q", c.Called)
		}
		if _, err := json.Marshal(c.Args); err != nil {
			bad(path+".args", "cannot be encoded as JSON: %v", err)
		}
	case c.MaxSteps < 0:
		bad(path+".maxSteps", "must be positive")
	case len(c.Contains) > maxEvalPattern || len(c.Matches) > maxEvalPattern:
		bad(path, "the text is longer than %d bytes", maxEvalPattern)
	case c.Matches != "":
		if _, err := regexp.Compile(c.Matches); err != nil {
			bad(path+".matches", "is not a regular expression (RE2): %v", err)
		}
	}
}

func invalidEval(problems []tool.Violation) error {
	parts := make([]string, len(problems))
	for i, p := range problems {
		parts[i] = p.Path + ": " + p.Message
	}
	return &api.Error{Code: api.CodeInvalidEval, Message: "invalid eval: " + strings.Join(parts, "; "), Violations: problems}
}

// evalCaseJob starts a queued case (Key: evalCaseKey): see
// startEvalCase. A case started already (by this job run before, or by a
// host that started it itself) leaves the job nothing to do.
func (h *Host) evalCaseJob(ctx context.Context, tx store.Tx, job store.Job) error {
	batchID, index, err := parseEvalCaseKey(job.Key)
	if err != nil {
		h.logger.Warn("dropped a malformed eval case job", "key", job.Key, "err", err)
		return nil
	}
	bc, err := evalBatchCases(ctx, tx, batchID)
	if errors.Is(err, store.ErrNotFound) {
		h.logger.Warn("dropped the job of an eval case whose batch is gone", "batch", batchID, "case", index)
		return nil
	}
	if err != nil {
		return err
	}
	if index >= len(bc.cases) {
		h.logger.Warn("dropped the job of an eval case its batch does not have", "batch", batchID, "case", index)
		return nil
	}
	front := bc.queued()
	if index < front {
		return nil // started already
	}
	// While the batch is full, a case waits, the longer the further back
	// it is in the queue: the host that ends a case starts the next
	// itself, and every host looks at the batches at its sweeps; the jobs
	// are for the hosts that start after a crash.
	running, err := tx.RunningEvalCases(ctx, batchID)
	if err != nil {
		return err
	}
	if n := bc.concurrency; running >= n {
		return store.Snooze(min(evalSnooze*time.Duration(1+(index-front)/n), evalSnoozeMax))
	}
	started, err := h.startEvalCase(ctx, tx, batchID, index, bc.cases[index], bc.concurrency)
	if err == nil && !started {
		bc.taken(index)
	}
	return err
}

// startEvalCase marks a queued case running in tx, in a session whose id
// it reserves, held by a lease, and runs it here once tx commits; false
// if the case was not queued (started already, or gone). While the batch
// runs as many cases as it may, it snoozes (rolling back). StartEvalCase
// takes the batch's row, so that the count after it sees every case
// started before: the batch never runs more than it may.
func (h *Host) startEvalCase(ctx context.Context, tx store.Tx, batchID string, index int, c api.EvalCase, concurrency int) (bool, error) {
	sessionID := newID("sess")
	started := time.Now()
	err := tx.StartEvalCase(ctx, batchID, index, sessionID, started, started.Add(h.opts.LeaseTTL))
	if errors.Is(err, store.ErrNotRunning) || errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	running, err := tx.RunningEvalCases(ctx, batchID)
	if err != nil {
		return false, err
	}
	if running > concurrency {
		return false, store.Snooze(evalSnooze)
	}
	tx.AfterCommit(func() {
		h.goEvalCase(batchID, index, c, sessionID, started)
	})
	return true, nil
}

// startQueuedEvalCases starts a batch's queued cases here, in index
// order, as many as the batch may run, each in a transaction of its own
// as its job would.
func (h *Host) startQueuedEvalCases(j store.Jobs, ev store.Evals, batchID string) {
	if h.ctx.Err() != nil {
		return
	}
	bc, err := evalBatchCases(h.ctx, ev, batchID)
	if err != nil {
		if h.ctx.Err() == nil && !errors.Is(err, store.ErrNotFound) {
			h.logger.Warn("reading an eval batch", "batch", batchID, "err", err)
		}
		return
	}
	for {
		i := bc.queued()
		if i >= len(bc.cases) || h.ctx.Err() != nil {
			return
		}
		err := j.InTx(h.ctx, func(tx store.Tx) error {
			_, err := h.startEvalCase(h.ctx, tx, batchID, i, bc.cases[i], bc.concurrency)
			return err
		})
		if _, snoozed := store.Snoozed(err); snoozed {
			return // the batch runs as many as it may
		}
		if err != nil {
			if h.ctx.Err() == nil {
				h.logger.Warn("starting an eval case", "batch", batchID, "case", i, "err", err)
			}
			return
		}
		bc.taken(i) // started here, or elsewhere before
	}
}

// batchCases are a batch's cases, which never change, kept in memory so
// that starting a case does not read its batch; and how far the batch's
// cases have been started, as far as this process knows.
type batchCases struct {
	cases       []api.EvalCase
	concurrency int // cases at once

	mu   sync.Mutex
	next int // the cases before it are not queued
}

// queued returns the first case that may still be queued.
func (b *batchCases) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next
}

// taken records that case i is not queued any more (a case that has left
// the queue never returns to it).
func (b *batchCases) taken(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next == i {
		b.next = i + 1
	}
}

// evalCache holds the cases of the batches this process has started cases
// of, by batch id (unique across hosts, so that the hosts of a process may
// share it), the most recent evalCacheBatches of them.
var evalCache = struct {
	sync.Mutex
	batches map[string]*batchCases
	order   []string // the oldest first
}{batches: map[string]*batchCases{}}

const evalCacheBatches = 16

// evalBatchCases returns a batch's cases, from the cache, or read with r
// (and kept); ErrNotFound without the batch.
func evalBatchCases(ctx context.Context, r store.Evals, batchID string) (*batchCases, error) {
	evalCache.Lock()
	bc := evalCache.batches[batchID]
	evalCache.Unlock()
	if bc != nil {
		return bc, nil
	}
	b, err := r.EvalBatch(ctx, batchID)
	if err != nil {
		return nil, err
	}
	bc = &batchCases{cases: make([]api.EvalCase, len(b.Cases)), next: len(b.Cases), concurrency: max(b.Concurrency, 1)}
	for i, c := range b.Cases {
		bc.cases[i] = c.Case
		if c.Status == api.EvalQueued && i < bc.next {
			bc.next = i
		}
	}
	evalCache.Lock()
	defer evalCache.Unlock()
	if kept := evalCache.batches[batchID]; kept != nil {
		return kept, nil
	}
	evalCache.batches[batchID] = bc
	evalCache.order = append(evalCache.order, batchID)
	for len(evalCache.order) > evalCacheBatches {
		delete(evalCache.batches, evalCache.order[0])
		evalCache.order = evalCache.order[1:]
	}
	return bc, nil
}

// forgetEvalBatch drops a completed batch from the cache.
func forgetEvalBatch(batchID string) {
	evalCache.Lock()
	defer evalCache.Unlock()
	if evalCache.batches[batchID] == nil {
		return
	}
	delete(evalCache.batches, batchID)
	for i, id := range evalCache.order {
		if id == batchID {
			evalCache.order = append(evalCache.order[:i:i], evalCache.order[i+1:]...)
			break
		}
	}
}

// goEvalCase runs a started case in the background, renewing its hold,
// and records its result; then it starts the batch's next queued cases.
func (h *Host) goEvalCase(batchID string, index int, c api.EvalCase, sessionID string, started time.Time) {
	j, ev, err := h.evalStores()
	if err != nil {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer guard(h.logger, "running an eval case", "batch", batchID, "case", index)
		ctx, cancel := context.WithCancelCause(h.ctx)
		defer cancel(nil)
		go func() {
			defer guard(h.logger, "renewing an eval case's hold", "batch", batchID, "case", index)
			h.leases.keepAlive(ctx, func(rctx context.Context) bool {
				err := ev.RenewEvalCase(rctx, batchID, index, time.Now().Add(h.opts.LeaseTTL))
				switch {
				case errors.Is(err, store.ErrNotRunning), errors.Is(err, store.ErrNotFound):
					cancel(errEvalLapsed)
					return false
				case err != nil:
					h.logger.Warn("renewing an eval case's hold", "batch", batchID, "case", index, "err", err)
				}
				return true
			})
		}()
		r := h.runEvalCase(ctx, c, sessionID)
		r.Index, r.Case, r.SessionID, r.Started = index, c, sessionID, &started
		if errors.Is(context.Cause(ctx), errEvalLapsed) {
			h.logger.Warn("an eval case's hold lapsed while it ran; another host recorded it as interrupted", "batch", batchID, "case", index)
			return
		}
		if r.Status == api.EvalFailed && h.ctx.Err() != nil {
			// The host is stopping: like a host that died, not run again.
			r.Error = evalInterrupted
		}
		done, err := h.finishEvalCase(context.WithoutCancel(ctx), ev, batchID, r)
		switch {
		case errors.Is(err, store.ErrNotRunning):
			h.logger.Warn("an eval case ended after another host recorded it as interrupted", "batch", batchID, "case", index)
		case err != nil:
			h.logger.Error("recording an eval case's result", "batch", batchID, "case", index, "err", err)
		case done:
			forgetEvalBatch(batchID)
			h.logger.Info("an eval batch completed", "batch", batchID)
		}
		cancel(nil)
		if err == nil && !done {
			h.startQueuedEvalCases(j, ev, batchID)
		}
	}()
}

// finishEvalCase records a case's result, trying again for a while if
// the store fails (else the case's hold runs out, and the sweep records
// it as interrupted).
func (h *Host) finishEvalCase(ctx context.Context, ev store.Evals, batchID string, r api.EvalCaseResult) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for wait := 100 * time.Millisecond; ; wait *= 2 {
		done, err := ev.FinishEvalCase(ctx, batchID, r)
		if err == nil || errors.Is(err, store.ErrNotRunning) || errors.Is(err, store.ErrNotFound) {
			return done, err
		}
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(wait):
		}
	}
}

// runEvalCase runs a case in its session and checks what happened. The
// result has Status, Checks, Score, Pass and Error.
func (h *Host) runEvalCase(ctx context.Context, c api.EvalCase, sessionID string) api.EvalCaseResult {
	ctx, cancel := context.WithTimeoutCause(ctx, evalCaseTimeout, fmt.Errorf("timed out after %v", evalCaseTimeout))
	defer cancel()
	evs, lastTurn, err := h.converse(ctx, c, sessionID)
	if err != nil {
		return api.EvalCaseResult{Status: api.EvalFailed, Error: err.Error()}
	}
	checks := evalChecks(c.Checks, evs, lastTurn)
	if c.Scorer != "" {
		checks = append(checks, h.score(ctx, c, evs))
	}
	r := api.EvalCaseResult{Status: api.EvalCompleted, Checks: checks, Score: 1, Pass: true}
	if len(checks) > 0 {
		passed := 0
		for _, ch := range checks {
			if ch.Pass {
				passed++
			}
		}
		r.Score, r.Pass = float64(passed)/float64(len(checks)), passed == len(checks)
	}
	return r
}

// converse creates the case's session with its first message and sends
// each of the others once the previous turn has ended; it returns the
// session's events and the last turn's id. A turn that failed, or the
// case's context ending, is an error.
func (h *Host) converse(ctx context.Context, c api.EvalCase, sessionID string) ([]api.Event, string, error) {
	msgs := c.Conversation
	if c.Message != "" {
		msgs = []string{c.Message}
	}
	_, turnID, err := h.Sessions().Create(ctx, SessionOptions{Channel: EvalChannel, Principal: EvalPrincipal, Message: msgs[0], ID: sessionID})
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", context.Cause(ctx)
		}
		return nil, "", fmt.Errorf("creating the case's session: %w", err)
	}
	var evs []api.Event
	var failed error
	sent := 1
	for e, err := range h.Sessions().Follow(ctx, sessionID, 0) {
		if err != nil {
			failed = fmt.Errorf("reading the case's events: %w", err)
			break
		}
		evs = append(evs, e)
		if e.TurnID != turnID || e.Kind != api.KindTurnCompleted && e.Kind != api.KindTurnFailed {
			continue
		}
		if e.Kind == api.KindTurnFailed {
			fl, _ := api.Decode[api.TurnFailed](e)
			what := "the turn"
			if len(msgs) > 1 {
				what = fmt.Sprintf("turn %d of %d", sent, len(msgs))
			}
			return evs, "", fmt.Errorf("%s failed: %s", what, fl.Reason)
		}
		if sent == len(msgs) {
			return evs, turnID, nil
		}
		if turnID, err = h.sendEval(ctx, sessionID, msgs[sent]); err != nil {
			return evs, "", err
		}
		sent++
	}
	if failed == nil {
		failed = context.Cause(ctx)
	}
	// Its turn goes no further (if the host is stopping, it is being
	// cancelled already).
	if cerr := h.Sessions().Cancel(context.WithoutCancel(ctx), sessionID); cerr != nil && !errors.Is(cerr, api.ErrNoRunningTurn) {
		h.logger.Warn("cancelling an eval case's turn", "session", sessionID, "err", cerr)
	}
	return evs, "", failed
}

// sendEval sends the next message of a conversation, waiting a little
// while the session is busy (a turn that has just ended may still hold it
// for a moment).
func (h *Host) sendEval(ctx context.Context, sessionID, message string) (string, error) {
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		turnID, err := h.Sessions().Send(ctx, sessionID, message)
		if err == nil {
			return turnID, nil
		}
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		if !errors.Is(err, api.ErrSessionBusy) {
			return "", fmt.Errorf("sending the next message: %w", err)
		}
		select {
		case <-ctx.Done():
			return "", context.Cause(ctx)
		case <-time.After(wait):
		}
	}
}

// evalChecks checks a case's checks against its session's events; lastTurn
// is the turn whose answer is the final one.
func evalChecks(checks []api.EvalCheck, evs []api.Event, lastTurn string) []api.EvalCheckResult {
	var (
		calls    []api.Action
		answer   string
		answered bool
		steps    int
		errs     []string
	)
	for _, e := range evs {
		switch e.Kind {
		case api.KindActionsRequested:
			if a, err := api.Decode[api.ActionsRequested](e); err == nil {
				calls = append(calls, a.Actions...)
			}
		case api.KindMessage:
			if m, err := api.Decode[api.Message](e); err == nil && m.Role == api.RoleAssistant && e.TurnID == lastTurn {
				answer, answered = m.Text, true
			}
		case api.KindTurnCompleted:
			if tc, err := api.Decode[api.TurnCompleted](e); err == nil && tc.Steps != nil {
				steps += *tc.Steps
			}
		case api.KindTurnFailed:
			if tf, err := api.Decode[api.TurnFailed](e); err == nil {
				if tf.Steps != nil {
					steps += *tf.Steps
				}
				errs = append(errs, "a turn failed: "+tf.Reason)
			}
		case api.KindActionResult:
			if r, err := api.Decode[api.ActionResult](e); err == nil && r.IsError {
				errs = append(errs, fmt.Sprintf("%s (%s) had an error: %s", r.Tool, r.CallID, preview(resultText(r.Result), 200)))
			}
		}
	}
	out := make([]api.EvalCheckResult, 0, len(checks))
	for _, c := range checks {
		r := api.EvalCheckResult{Check: c}
		switch {
		case c.Called != "":
			r.Pass, r.Detail = checkCalled(c, calls)
		case c.NotCalled != "":
			var ids []string
			for _, a := range calls {
				if a.Tool == c.NotCalled {
					ids = append(ids, a.CallID)
				}
			}
			r.Pass = len(ids) == 0
			if !r.Pass {
				r.Detail = fmt.Sprintf("called %s: %s", times(len(ids)), strings.Join(ids, ", "))
			}
		case c.Contains != "":
			r.Pass = answered && strings.Contains(answer, c.Contains)
			r.Detail = answerDetail(answered, r.Pass, answer, "does not contain it")
		case c.Matches != "":
			re, err := regexp.Compile(c.Matches)
			if err != nil {
				r.Detail = "not a regular expression: " + err.Error()
				break
			}
			r.Pass = answered && re.MatchString(answer)
			r.Detail = answerDetail(answered, r.Pass, answer, "does not match")
		case c.MaxSteps > 0:
			r.Pass = steps <= c.MaxSteps
			r.Detail = fmt.Sprintf("%d model steps", steps)
		case c.NoError:
			r.Pass = len(errs) == 0
			if !r.Pass {
				r.Detail = strings.Join(errs, "; ")
			}
		}
		out = append(out, r)
	}
	return out
}

// checkCalled checks a called check: a call of the tool whose input holds
// the check's args (a subset, compared as JSON values).
func checkCalled(c api.EvalCheck, calls []api.Action) (bool, string) {
	var want map[string]any
	if len(c.Args) > 0 {
		b, err := json.Marshal(c.Args)
		if err == nil {
			err = json.Unmarshal(b, &want)
		}
		if err != nil {
			return false, "the args cannot be compared: " + err.Error()
		}
	}
	n := 0
	var lastInput string
	for _, a := range calls {
		if a.Tool != c.Called {
			continue
		}
		n++
		if want == nil {
			return true, "called by " + a.CallID
		}
		var in map[string]any
		if len(a.Input) > 0 && json.Unmarshal(a.Input, &in) == nil && holds(in, want) {
			return true, "called with the args by " + a.CallID
		}
		lastInput = string(a.Input)
		if lastInput == "" {
			lastInput = a.InputText
		}
	}
	if n == 0 {
		return false, "not called"
	}
	return false, fmt.Sprintf("called %s, never with the args; last input: %s", times(n), preview(lastInput, 200))
}

// holds reports whether in has every field of want with an equal value.
func holds(in, want map[string]any) bool {
	for k, v := range want {
		got, ok := in[k]
		if !ok || !reflect.DeepEqual(got, v) {
			return false
		}
	}
	return true
}

func answerDetail(answered, pass bool, answer, fails string) string {
	switch {
	case !answered:
		return "no final answer"
	case pass:
		return ""
	}
	return fmt.Sprintf("the final answer %s: %q", fails, preview(answer, 200))
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return strconv.Itoa(n) + " times"
}

// preview cuts s to about n bytes, at a rune boundary.
func preview(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return progress.TruncateUTF8(s, n) + "…"
}

// resultText is a tool's result as text: a string's own text, other JSON
// as it is.
func resultText(result json.RawMessage) string {
	var s string
	if json.Unmarshal(result, &s) == nil {
		return s
	}
	return string(result)
}

// scorerInput is what a scorer tool is called with.
type scorerInput struct {
	Case   api.EvalCase `json:"case"`
	Events []api.Event  `json:"events"`
}

// scorerVerdict is what a scorer tool answers.
type scorerVerdict struct {
	Pass   *bool    `json:"pass"`
	Score  *float64 `json:"score"`
	Reason string   `json:"reason"`
}

// score calls the case's scorer directly with the case and its session's
// events (without text deltas, progress and live output); its verdict is
// one more check, with the scorer's score and reason as its detail.
func (h *Host) score(ctx context.Context, c api.EvalCase, evs []api.Event) api.EvalCheckResult {
	r := api.EvalCheckResult{Check: api.EvalCheck{Scorer: c.Scorer}}
	in := scorerInput{Case: c, Events: make([]api.Event, 0, len(evs))}
	for _, e := range evs {
		switch e.Kind {
		case api.KindMessageDelta, api.KindActionProgress, api.KindActionOutput:
		default:
			in.Events = append(in.Events, e)
		}
	}
	out, err := h.CallTool(ctx, c.Scorer, in, &CallOptions{Principal: EvalPrincipal})
	switch {
	case err != nil:
		r.Detail = fmt.Sprintf("scorer %s: %v", c.Scorer, err)
		return r
	case out.IsError:
		r.Detail = fmt.Sprintf("scorer %s failed: %s", c.Scorer, preview(resultText(out.Result), 500))
		return r
	}
	var v scorerVerdict
	dec := json.NewDecoder(bytes.NewReader(out.Result))
	if err := dec.Decode(&v); err != nil || v.Pass == nil {
		r.Detail = fmt.Sprintf(`scorer %s: its result is not {"pass": bool, "score": number, "reason": "…"}: %s`, c.Scorer, preview(string(out.Result), 500))
		return r
	}
	r.Pass = *v.Pass
	verdict := "fail"
	if r.Pass {
		verdict = "pass"
	}
	r.Detail = fmt.Sprintf("scorer %s: %s", c.Scorer, verdict)
	if v.Score != nil {
		r.Detail += fmt.Sprintf(" (score %s)", strconv.FormatFloat(*v.Score, 'g', 4, 64))
	}
	if v.Reason != "" {
		r.Detail += ": " + preview(v.Reason, 500)
	}
	return r
}

// sweepEvals records the cases whose host died (their hold ran out) as
// failed, never to run again, and starts the queued cases of the newest
// batches that are not completed (their jobs may wait for River's
// worker, or for a job a dead host was working when it died): one round
// of the host's sweep.
func (h *Host) sweepEvals(ctx context.Context) {
	defer guard(h.logger, "sweeping eval cases")
	j, ev, err := h.evalStores()
	if err != nil {
		return
	}
	expired, err := ev.ExpiredEvalCases(ctx, time.Now())
	if err != nil {
		if ctx.Err() == nil {
			h.logger.Warn("listing interrupted eval cases", "err", err)
		}
		return
	}
	for _, ref := range expired {
		done, err := ev.FinishEvalCase(ctx, ref.BatchID, api.EvalCaseResult{Index: ref.Index, Status: api.EvalFailed, Error: evalInterrupted})
		switch {
		case errors.Is(err, store.ErrNotRunning), errors.Is(err, store.ErrNotFound):
		case err != nil:
			if ctx.Err() == nil {
				h.logger.Warn("recording an interrupted eval case", "batch", ref.BatchID, "case", ref.Index, "err", err)
			}
			return
		default:
			h.logger.Info("recorded an eval case whose host died as interrupted", "batch", ref.BatchID, "case", ref.Index)
			if done {
				forgetEvalBatch(ref.BatchID)
				h.logger.Info("an eval batch completed", "batch", ref.BatchID)
			}
		}
	}
	batches, _, err := ev.ListEvalBatches(ctx, store.Page{Limit: evalSweepBatches})
	if err != nil {
		if ctx.Err() == nil {
			h.logger.Warn("listing eval batches", "err", err)
		}
		return
	}
	for _, b := range batches {
		if b.Status == api.EvalCompleted {
			forgetEvalBatch(b.ID)
		} else {
			h.startQueuedEvalCases(j, ev, b.ID)
		}
	}
}

// evalsService is call.Host.Evals.
type evalsService struct{ h *Host }

func (s evalsService) Run(ctx context.Context, eval json.RawMessage) (string, error) {
	var req api.EvalRunRequest
	dec := json.NewDecoder(bytes.NewReader(eval))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return "", fmt.Errorf("evals: the eval is not an eval's JSON ({\"name\", \"cases\": […]}): %w", err)
	}
	b, err := s.h.RunEval(ctx, req, "tool")
	if err != nil {
		return "", evalsError(err)
	}
	return b.ID, nil
}

func (s evalsService) Get(ctx context.Context, batchID string) (json.RawMessage, error) {
	b, err := s.h.GetEval(ctx, batchID)
	if err != nil {
		return nil, evalsError(err)
	}
	return json.Marshal(b)
}

func evalsError(err error) error {
	if errors.Is(err, &api.Error{Code: api.CodeNoJobs}) {
		return fmt.Errorf("evals: %w: %w", tool.ErrNotConfigured, err)
	}
	return fmt.Errorf("evals: %w", err)
}

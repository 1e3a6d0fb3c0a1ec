package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Result is one run's figures.
type Result struct {
	Requests int64         // answered (wrk: completed, errors included)
	Elapsed  time.Duration // the run's length
	P50, P99 time.Duration // latency percentiles
	Errors   int64         // failed requests and bad answers
	FirstErr string        // what the first error said (wrk: its output), if any
	Gen      time.Duration // the generator's CPU
	Usage                  // the server's CPU and allocations over the run
}

// RPS is the requests answered per second.
func (r Result) RPS() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

// PerReq is x over the requests answered (0 if none).
func (r Result) PerReq(x float64) float64 {
	if r.Requests == 0 {
		return 0
	}
	return x / float64(r.Requests)
}

// ParseLevels parses a comma-separated list of concurrencies, each from 1
// to most.
func ParseLevels(s string, most int) ([]int, error) {
	var levels []int
	for field := range strings.SplitSeq(s, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || c < 1 || c > most {
			return nil, fmt.Errorf("bad concurrency %q", field)
		}
		levels = append(levels, c)
	}
	return levels, nil
}

// Rounds runs rounds rounds in which each of n servers gets one run,
// run(i) for server i, in an order that rotates from round to round, and
// returns each server's results in the order of the rounds. It stops at
// the first error, or with "interrupted" after the run in which ctx ends.
func Rounds[R any](ctx context.Context, rounds, n int, run func(i int) (R, error)) ([][]R, error) {
	runs := make([][]R, n)
	for r := range rounds {
		for k := range n {
			i := (k + r) % n
			res, err := run(i)
			if err != nil {
				return nil, err
			}
			runs[i] = append(runs[i], res)
			if ctx.Err() != nil {
				return nil, errors.New("interrupted")
			}
		}
	}
	return runs, nil
}

// Median is the median of f over runs (of an even number, the upper of
// the two middle values).
func Median[R any](runs []R, f func(R) float64) float64 {
	xs := make([]float64, 0, len(runs))
	for _, r := range runs {
		xs = append(xs, f(r))
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// Verdict is "met" if ok, else "MISSED".
func Verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

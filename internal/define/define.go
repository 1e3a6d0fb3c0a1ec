// Package define keeps what an agent's packages define at init — tools,
// channels, schedules — one per file, named after the file, the way
// database/sql keeps its drivers: written at package init, read at start.
package define

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// Registry holds the definitions of one kind.
type Registry[T any] struct {
	what string // "channel", "schedule"
	hint string // how to define several

	mu     sync.Mutex
	items  []T
	byFile map[string]string // file -> file:line of its definition
	errs   []error
}

// New returns an empty registry of definitions called what ("channel");
// hint ends the error of a file with two.
func New[T any](what, hint string) *Registry[T] {
	return &Registry[T]{what: what, hint: hint, byFile: map[string]string{}}
}

// Add records a definition made at file:line (err: it failed) and reports
// whether it was kept.
func (r *Registry[T]) Add(item T, err error, file string, line int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	pos := fmt.Sprintf("%s:%d", file, line)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", pos, err))
		return false
	}
	if first, ok := r.byFile[file]; ok {
		r.errs = append(r.errs, fmt.Errorf("two %ss defined in one file: %s and %s (a file defines one %s, named after the file%s)", r.what, first, pos, r.what, r.hint))
		return false
	}
	r.byFile[file] = pos
	r.items = append(r.items, item)
	return true
}

// All returns the definitions kept, and every error recorded.
func (r *Registry[T]) All() ([]T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) > 0 {
		return nil, fmt.Errorf("defining %ss: %w", r.what, errors.Join(r.errs...))
	}
	return append([]T(nil), r.items...), nil
}

// Caller returns the file and line of the caller of the exported function
// calling Caller.
func Caller() (string, int) {
	_, file, line, _ := runtime.Caller(2)
	return file, line
}

// NameFromFile returns the name a file defines: its base name without
// ".go".
func NameFromFile(file string) string {
	return strings.TrimSuffix(filepath.Base(file), ".go")
}

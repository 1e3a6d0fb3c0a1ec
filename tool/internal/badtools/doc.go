// Package badtools holds tool definitions that break the one-tool-per-file
// rules or are invalid (a bad name, a predicate of another type, input and
// output types JSON cannot carry), so that tests can check how
// [tool.Registered] reports them, each with its file and line. It is
// imported only by its own tests.
package badtools

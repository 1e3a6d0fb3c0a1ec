// Package badtools holds tool definitions that break the one-tool-per-file
// rules, so that tests can check how [tool.Registered] reports them. It is
// imported only by its own tests.
package badtools

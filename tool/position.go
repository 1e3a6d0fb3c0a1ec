package tool

import (
	"path/filepath"
	"runtime"
	"strings"
)

// callerPosition returns the file and line that called the exported
// function calling it.
func callerPosition() (string, int) {
	return callerAt(3)
}

// callerAt returns runtime.Caller(skip)'s file and line, counting from the
// function that calls callerAt.
func callerAt(skip int) (string, int) {
	_, file, line, _ := runtime.Caller(skip)
	return file, line
}

// nameFromFile returns the tool name a file defines: its base name without
// ".go".
func nameFromFile(file string) string {
	return strings.TrimSuffix(filepath.Base(file), ".go")
}

package build

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

// SDKDir returns the directory of the SDK checkout this program was built
// from, or "" when it is not known (a build with -trimpath, a checkout
// since moved or removed, or a released version from the module cache).
// An agent-sdk built from source needs it: the SDK module is not
// published, so an agent's go.mod reaches it through a replace directive
// naming this directory (what init's --sdk writes).
func SDKDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) || strings.Contains(file, "@") {
		return ""
	}
	dir := filepath.Dir(filepath.Dir(filepath.Dir(file))) // …/internal/build/sdkdir.go
	if _, err := os.Stat(filepath.Join(dir, "tool", "tool.go")); err != nil {
		return ""
	}
	return dir
}

// released reports whether this program is a released version of the SDK
// (go install …@vX), which needs no replace directive.
func released() bool {
	info, ok := debug.ReadBuildInfo()
	return ok && info.Main.Path == SDKModule && info.Main.Version != "" && info.Main.Version != "(devel)"
}

// initCommand is the agent-sdk init command that makes dir an agent
// (or adds to it what is missing).
func initCommand(dir string) string {
	if d := SDKDir(); d != "" {
		return "agent-sdk init " + dir + " --sdk " + d
	}
	if released() {
		return "agent-sdk init " + dir
	}
	return "agent-sdk init " + dir + " --sdk /path/to/your/agentsdk/checkout"
}

// replaceLine is the go.mod line that points an agent at the SDK.
func replaceLine() string {
	d := SDKDir()
	if d == "" {
		d = "/path/to/your/agentsdk/checkout"
	}
	return "replace " + SDKModule + " => " + d
}

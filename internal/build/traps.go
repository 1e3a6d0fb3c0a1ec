package build

import (
	"errors"
	"fmt"
	"go/ast"
	gobuild "go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Traps of Go's file names: go build leaves out files ending in _test.go
// and builds files ending in _GOOS, _GOARCH or _GOOS_GOARCH only for that
// system, so a tool defined in lint_test.go or deploy_windows.go is
// silently missing from the agent. Check warns of each, with the fix.

// knownOS and knownArch are go/build's lists (syslist.go): the name
// suffixes that restrict a file.
var (
	knownOS = set("aix", "android", "darwin", "dragonfly", "freebsd", "hurd", "illumos", "ios", "js", "linux", "nacl", "netbsd",
		"openbsd", "plan9", "solaris", "wasip1", "windows", "zos")
	knownArch = set("386", "amd64", "amd64p32", "arm", "armbe", "arm64", "arm64be", "loong64", "mips", "mipsle", "mips64", "mips64le",
		"mips64p32", "mips64p32le", "ppc", "ppc64", "ppc64le", "riscv", "riscv64", "s390", "s390x", "sparc", "sparc64", "wasm")
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// matchFile reports whether go build, for the GOOS and GOARCH of this
// environment, compiles the file (its name and //go:build line).
func matchFile(dir, name string) bool {
	ok, err := gobuild.Default.MatchFile(dir, name)
	return ok || err != nil // a file that does not read or parse: checkFile says so
}

// nameRestriction returns the system a file's name restricts it to
// ("GOOS=windows", "GOARCH=arm64", "GOOS=linux GOARCH=amd64") and the
// suffix that does ("_windows"), or "" for a file built everywhere. It
// follows go/build's goodOSArchFile; a _test suffix is left to the caller.
func nameRestriction(name string) (system, suffix string) {
	name = strings.TrimSuffix(name, ".go")
	i := strings.Index(name, "_")
	if i < 0 {
		return "", ""
	}
	l := strings.Split(name[i:], "_")
	n := len(l)
	switch {
	case n >= 2 && knownOS[l[n-2]] && knownArch[l[n-1]]:
		return "GOOS=" + l[n-2] + " GOARCH=" + l[n-1], "_" + l[n-2] + "_" + l[n-1]
	case n >= 1 && knownOS[l[n-1]]:
		return "GOOS=" + l[n-1], "_" + l[n-1]
	case n >= 1 && knownArch[l[n-1]]:
		return "GOARCH=" + l[n-1], "_" + l[n-1]
	}
	return "", ""
}

// target is the system this environment builds for.
func target() string { return gobuild.Default.GOOS + "/" + gobuild.Default.GOARCH }

// renamed is a name Go builds everywhere that keeps what the file's name
// says: its underscores before the suffix that Go reads become dashes
// (lint_test.go → lint-test.go, deploy_windows.go → deploy-windows.go).
func renamed(base, suffix string) string {
	stem := strings.TrimSuffix(base, suffix)
	return stem + strings.ReplaceAll(suffix, "_", "-") + ".go"
}

// testFileWarning is the warning for a _test.go file that defines one.
func (d definer) testFileWarning(rel, name string) string {
	base := strings.TrimSuffix(name, ".go")
	return fmt.Sprintf("%s: Go compiles files whose names end in _test.go only into tests, so %s %s is missing from the agent; rename the file, e.g. to %s",
		rel, d.what, base, renamed(base, "_test"))
}

// restrictedWarning is the warning for a file of d's directory that Go
// leaves out of this build, or builds only for some systems; "" for one
// built everywhere. built says whether this build compiles it.
func (d definer) restrictedWarning(rel, name string, built bool) string {
	base := strings.TrimSuffix(name, ".go")
	if strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") {
		return fmt.Sprintf("%s: Go ignores files whose names begin with _ or ., so %s %s is missing from the agent; rename the file, e.g. to %s",
			rel, d.what, base, strings.TrimLeft(name, "_."))
	}
	system, suffix := nameRestriction(name)
	switch {
	case system != "" && !built:
		return fmt.Sprintf("%s: Go compiles a file whose name ends in %s only for %s, so %s %s is missing from this agent (built for %s); rename the file, e.g. to %s",
			rel, suffix, system, d.what, base, target(), renamed(base, suffix))
	case system != "":
		return fmt.Sprintf("%s: Go compiles a file whose name ends in %s only for %s, so %s %s is missing from the agent when built for any other system; rename the file, e.g. to %s (and restrict it with a //go:build line if that is what you mean)",
			rel, suffix, system, d.what, base, renamed(base, suffix))
	case !built:
		return fmt.Sprintf("%s: its //go:build line leaves it out of this build (%s), so %s %s is missing from the agent", rel, target(), d.what, base)
	}
	return ""
}

// checkElsewhere refuses definitions outside their directory: anywhere
// under agent/ (agent/lib, agent/channels, …), and in every package of the
// agent's module that the agent links (internal/x, imported by a tool), a
// package registers what it defines, named after its file, so a
// tool.Define in agent/lib/lib.go would add a tool named lib.
func (a *Agent) checkElsewhere() ([]string, error) {
	root := filepath.Join(a.Dir, "agent")
	var problems []string
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := e.Name()
		if e.IsDir() {
			if path == root {
				return nil
			}
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			for _, d := range []definer{tools, channels, schedules} {
				if filepath.Dir(path) == filepath.Join(root, d.dir) {
					return filepath.SkipDir // refused by check: code in a subdirectory
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		problems = append(problems, a.definedElsewhere(path, "")...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checking %s: %w", root, err)
	}
	linked, err := a.linkedOutside()
	if err != nil {
		return nil, err
	}
	for _, pkg := range linked {
		entries, err := os.ReadDir(pkg.dir)
		if err != nil {
			return nil, fmt.Errorf("checking %s: %w", pkg.dir, err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || !matchFile(pkg.dir, name) {
				continue
			}
			problems = append(problems, a.definedElsewhere(filepath.Join(pkg.dir, name), pkg.path)...)
		}
	}
	return problems, nil
}

// definedElsewhere returns a problem for each definition in the file at
// path, which is not in its definer's directory unless that is under
// agent/; linked is the file's import path when the file is outside
// agent/, in a package of the module the agent links.
func (a *Agent) definedElsewhere(path, linked string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
	if err != nil || !importsDefiner(f.Imports) {
		return nil // a file that does not parse fails the build, saying where
	}
	if f, err = parser.ParseFile(fset, path, nil, parser.SkipObjectResolution); err != nil {
		return nil
	}
	name := filepath.Base(path)
	var problems []string
	for _, d := range []definer{tools, channels, schedules} {
		if filepath.Dir(path) == filepath.Join(a.Dir, "agent", d.dir) {
			continue
		}
		where := ""
		if linked != "" {
			where = fmt.Sprintf(" (the agent links %s)", linked)
		}
		fix := ""
		if d.what == "tool" {
			fix = "; tool.New makes a tool that is not registered"
		}
		for _, c := range d.calls(fset, f) {
			problems = append(problems, fmt.Sprintf("%s:%d: %s outside agent/%s would add a %s named %q (after the file) to the agent%s; define %ss in agent/%s, one per file, and keep shared code in agent/lib%s",
				a.rel(path), c.line, c.fn, d.dir, d.what, strings.TrimSuffix(name, ".go"), where, d.what, d.dir, fix))
		}
	}
	return problems
}

// A modulePackage is a package of the agent's module: its import path and
// its directory.
type modulePackage struct{ path, dir string }

// linkedOutside returns the packages of the agent's module outside agent/
// that the agent links: those agent/tools, agent/channels and
// agent/schedules import, and those they import, in import path order.
// It reads the imports of the files this build compiles; an import that
// is not in the module, or has no directory there, is left to go build.
func (a *Agent) linkedOutside() ([]modulePackage, error) {
	agentDir := filepath.Join(a.Dir, "agent") + string(filepath.Separator)
	seen := map[string]bool{}
	var queue []string // directories whose imports are yet to be read
	for _, d := range []definer{tools, channels, schedules} {
		dir := filepath.Join(a.Dir, "agent", d.dir)
		seen[dir] = true
		queue = append(queue, dir)
	}
	var linked []modulePackage
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("reading the imports of %s: %w", dir, err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || !matchFile(dir, name) {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.ImportsOnly)
			if err != nil {
				continue // go build says where
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				rel, ok := strings.CutPrefix(p, a.ModulePath+"/")
				if !ok {
					continue
				}
				pdir := filepath.Join(a.ModuleRoot, filepath.FromSlash(rel))
				if seen[pdir] || !isDir(pdir) {
					continue
				}
				seen[pdir] = true
				queue = append(queue, pdir)
				if !strings.HasPrefix(pdir, agentDir) { // agent/ is walked whole
					linked = append(linked, modulePackage{p, pdir})
				}
			}
		}
	}
	sort.Slice(linked, func(i, j int) bool { return linked[i].path < linked[j].path })
	return linked, nil
}

// importsDefiner reports whether a file imports the SDK's tool, channel
// or schedule package.
func importsDefiner(imports []*ast.ImportSpec) bool {
	for _, imp := range imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		for _, d := range []definer{tools, channels, schedules} {
			if p == SDKModule+"/"+d.pkg {
				return true
			}
		}
	}
	return false
}

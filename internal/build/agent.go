// Package build turns a user's agent directory into an agent binary: it
// checks the one-tool-per-file rule, generates a main package (added to the
// user's module as a virtual file with go build -overlay, so nothing is
// written into their tree), and caches the binary by a hash of everything
// that affects it.
package build

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
)

// SDKModule is this SDK's module path.
const SDKModule = "github.com/agentsdk/agentsdk"

// Agent is an agent directory: DIR/agent/tools holds its tools.
type Agent struct {
	Dir        string // the agent directory, absolute
	ModuleRoot string // the directory holding the go.mod that Dir belongs to
	ModulePath string
	ToolsPkg   string // import path of DIR/agent/tools
	mainDir    string // the virtual directory of the generated main package
	modFile    *modfile.File
}

// Find locates the agent in dir and the Go module it belongs to.
func Find(dir string) (*Agent, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("finding agent: %w", err)
	}
	if !isDir(filepath.Join(abs, "agent", "tools")) {
		return nil, notAgentError(abs, dir)
	}
	root := abs
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return nil, fmt.Errorf("%s is not in a Go module: no go.mod in it or above it (add one with: %s; init adds what is missing and keeps the files you have)", abs, initCommand(dir))
		}
		root = parent
	}
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("reading go.mod: %w", err)
	}
	mf, err := modfile.Parse(filepath.Join(root, "go.mod"), data, nil)
	if err != nil {
		return nil, fmt.Errorf("parsing go.mod: %w", err)
	}
	if mf.Module == nil {
		return nil, fmt.Errorf("%s has no module line", filepath.Join(root, "go.mod"))
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return nil, err
	}
	pkg := mf.Module.Mod.Path
	if rel != "." {
		pkg += "/" + filepath.ToSlash(rel)
	}
	return &Agent{
		Dir:        abs,
		ModuleRoot: root,
		ModulePath: mf.Module.Mod.Path,
		ToolsPkg:   pkg + "/agent/tools",
		mainDir:    filepath.Join(abs, "agent", "agentsdkmain"),
		modFile:    mf,
	}, nil
}

// notAgentError explains a directory without agent/tools: one inside an
// agent (its agent/tools, agent/lib, …) is named with the --dir that
// would find the agent; any other is one to init.
func notAgentError(abs, dir string) error {
	up := ""
	for d := abs; ; {
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		up = filepath.Join(up, "..")
		d = parent
		if isDir(filepath.Join(d, "agent", "tools")) {
			return fmt.Errorf("%s is inside the agent %s, not the agent directory: --dir should be the directory that holds agent/ (try --dir %s)", abs, d, filepath.Join(dir, up))
		}
	}
	return fmt.Errorf("%s is not an agent directory: it has no agent/tools directory (create one with: %s; init adds what is missing and keeps the files you have)", abs, initCommand(dir))
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// ToolsDir returns the agent's tools directory.
func (a *Agent) ToolsDir() string { return filepath.Join(a.Dir, "agent", "tools") }

// Slug returns the default URL slug: the agent directory's name.
func (a *Agent) Slug() string { return filepath.Base(a.Dir) }

// A definer is one kind of definition an agent directory holds, one per
// file in its own directory: tools (required), channels, schedules.
type definer struct {
	what  string   // "tool"
	dir   string   // under agent/: "tools"
	pkg   string   // the SDK package defining them: "tool"
	funcs []string // its functions that define one: "Define", …
	howTo string   // how to define one, for a file that defines none
}

var (
	tools     = definer{"tool", "tools", "tool", []string{"Define", "DefineScript"}, "call tool.Define or tool.DefineScript once"}
	channels  = definer{"channel", "channels", "channel", []string{"Define"}, "call channel.Define once"}
	schedules = definer{"schedule", "schedules", "schedule", []string{"Define"}, "call schedule.Define once"}
)

// CheckTools checks that every non-test .go file in agent/tools defines
// exactly one tool, with tool.Define or tool.DefineScript, and that no Go
// files hide in subdirectories (they would not be built); and the same of
// agent/channels (channel.Define) and agent/schedules (schedule.Define),
// where they exist. See [Agent.Check] for the warnings it does not return.
func (a *Agent) CheckTools() error {
	_, err := a.Check()
	return err
}

// Check is [Agent.CheckTools] with its warnings: the files Go leaves out
// of the build, or builds only for some systems, by their names (a tool
// in lint_test.go or deploy_windows.go is missing from the agent), each
// saying why and how to rename it. Its error also refuses definitions
// outside their directory (a tool.Define in agent/lib would add a tool
// named after its file to the agent).
func (a *Agent) Check() (warnings []string, err error) {
	var problems []string
	for _, d := range []definer{tools, channels, schedules} {
		w, p, err := a.check(d)
		if err != nil {
			return nil, err
		}
		warnings = append(warnings, w...)
		problems = append(problems, p...)
	}
	p, err := a.checkElsewhere()
	if err != nil {
		return nil, err
	}
	problems = append(problems, p...)
	sort.Strings(warnings)
	if len(problems) > 0 {
		sort.Strings(problems)
		return warnings, &ToolFileError{Problems: problems}
	}
	return warnings, nil
}

// check checks the files of one definer's directory.
func (a *Agent) check(d definer) (warnings, problems []string, err error) {
	dir := filepath.Join(a.Dir, "agent", d.dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if d.what != "tool" && errors.Is(err, os.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	files := 0
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		if e.IsDir() {
			if hasGoFiles(path) {
				problems = append(problems, fmt.Sprintf("%s: %ss live directly in agent/%s; move shared code to agent/lib", a.rel(path), d.what, d.dir))
			}
			continue
		}
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		if strings.HasSuffix(name, "_test.go") {
			// A test; but one that defines a tool was meant to be a tool.
			if lines, _ := d.definitions(path); len(lines) > 0 {
				warnings = append(warnings, d.testFileWarning(a.rel(path), name))
			}
			continue
		}
		built := matchFile(dir, name)
		if built {
			files++
		}
		if w := d.restrictedWarning(a.rel(path), name, built); w != "" {
			if lines, _ := d.definitions(path); len(lines) > 0 {
				warnings = append(warnings, w)
			}
		}
		if p := d.checkFile(path, a.rel(path)); p != "" {
			problems = append(problems, p)
		}
	}
	if files == 0 && d.what == "tool" {
		problems = append(problems, fmt.Sprintf("%s: no tools defined (add a file such as hello.go that calls tool.Define)", a.rel(dir)))
	}
	return warnings, problems, nil
}

// DefinesAny reports whether the agent has a directory of channels or
// schedules (d: "channels", "schedules") with Go files in it.
func (a *Agent) DefinesAny(d string) bool {
	entries, _ := os.ReadDir(filepath.Join(a.Dir, "agent", d))
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}

// parseProblem is a problem that is a file's syntax error.
var parseProblem = regexp.MustCompile(`^\S+\.go:\d+:\d+: `)

// ToolFileError lists the files that break the one-tool-per-file rule.
type ToolFileError struct {
	Problems []string
}

func (e *ToolFileError) Error() string {
	parse := true
	for _, p := range e.Problems {
		parse = parse && parseProblem.MatchString(p)
	}
	if parse { // no rule broken that can be told yet
		return "the agent's files do not parse:\n  " + strings.Join(e.Problems, "\n  ")
	}
	return "each file in agent/tools (agent/channels, agent/schedules) must define exactly one tool (channel, schedule), and only there:\n  " + strings.Join(e.Problems, "\n  ")
}

func (a *Agent) rel(path string) string {
	if r, err := filepath.Rel(a.Dir, path); err == nil {
		return r
	}
	return path
}

func hasGoFiles(dir string) bool {
	found := false
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

var validFileTool = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkFile counts the definitions in one file.
func (d definer) checkFile(path, rel string) string {
	name := strings.TrimSuffix(filepath.Base(path), ".go")
	lines, err := d.definitions(path)
	if err != nil {
		return rel + strings.TrimPrefix(err.Error(), path) // file:line:col: as go build says it
	}
	if !validFileTool.MatchString(name) {
		return fmt.Sprintf("%s: %q is not a valid %s name (use letters, digits, '_' or '-', at most 64)", rel, name, d.what)
	}
	switch len(lines) {
	case 1:
		return ""
	case 0:
		return fmt.Sprintf("%s: defines no %s (%s; shared code belongs in agent/lib)", rel, d.what, d.howTo)
	}
	return fmt.Sprintf("%s: defines %d %ss, at lines %s (split them into one file each)", rel, len(lines), d.what, strings.Join(lines, ", "))
}

// definitions returns the lines of a file's calls that define one of d's
// kind; an error if the file does not parse.
func (d definer) definitions(path string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, c := range d.calls(fset, f) {
		lines = append(lines, strconv.Itoa(c.line))
	}
	return lines, nil
}

// defCall is a call that defines one: tool.Define at a line.
type defCall struct {
	line int
	fn   string // "tool.Define"
}

// calls returns f's calls of d's defining functions.
func (d definer) calls(fset *token.FileSet, f *ast.File) []defCall {
	toolPkg := ""
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p != SDKModule+"/"+d.pkg {
			continue
		}
		toolPkg = d.pkg
		if imp.Name != nil {
			toolPkg = imp.Name.Name
		}
	}
	var calls []defCall
	if toolPkg == "" || toolPkg == "_" {
		return nil
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		fun := call.Fun
		if ix, ok := fun.(*ast.IndexExpr); ok { // tool.Define[T](…)
			fun = ix.X
		}
		if ix, ok := fun.(*ast.IndexListExpr); ok { // tool.Define[In, Out](…)
			fun = ix.X
		}
		sel, ok := fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == toolPkg && slices.Contains(d.funcs, sel.Sel.Name) {
			calls = append(calls, defCall{fset.Position(call.Pos()).Line, d.pkg + "." + sel.Sel.Name})
		}
		return true
	})
	return calls
}

// localReplaces returns the directories of replace directives that point
// at the local file system: their sources affect the binary too.
func (a *Agent) localReplaces() []string {
	var dirs []string
	for _, r := range a.modFile.Replace {
		if r.New.Version != "" || !modfile.IsDirectoryPath(r.New.Path) {
			continue
		}
		p := r.New.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(a.ModuleRoot, p)
		}
		dirs = append(dirs, filepath.Clean(p))
	}
	return dirs
}

// requiresSDK reports whether the module is the SDK or requires it.
func (a *Agent) requiresSDK() bool {
	if a.ModulePath == SDKModule {
		return true
	}
	for _, r := range a.modFile.Require {
		if r.Mod.Path == SDKModule {
			return true
		}
	}
	return false
}

// noSDKError says how to make the module require the SDK.
func (a *Agent) noSDKError() error {
	gomod := filepath.Join(a.ModuleRoot, "go.mod")
	if info, ok := debug.ReadBuildInfo(); ok && released() {
		return fmt.Errorf("%s does not require %s (add it with: go get %s@%s)", gomod, SDKModule, SDKModule, info.Main.Version)
	}
	return fmt.Errorf("%s does not require %s. The SDK is not published as a module, so go get cannot fetch it; point the agent at your checkout of the SDK by adding these lines to go.mod, then run go mod tidy:\n  require %s v0.0.0-00010101000000-000000000000\n  %s",
		gomod, SDKModule, SDKModule, replaceLine())
}

// hasSDKReplace reports whether go.mod replaces the SDK module.
func (a *Agent) hasSDKReplace() bool {
	for _, r := range a.modFile.Replace {
		if r.Old.Path == SDKModule {
			return true
		}
	}
	return false
}

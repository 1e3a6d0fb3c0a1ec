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
	tools := filepath.Join(abs, "agent", "tools")
	if fi, err := os.Stat(tools); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s is not an agent directory: it has no agent/tools directory (create one with: agent-sdk init %s)", abs, dir)
	}
	root := abs
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return nil, fmt.Errorf("%s is not in a Go module: no go.mod in it or above it (create one with: agent-sdk init %s)", abs, dir)
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
// where they exist.
func (a *Agent) CheckTools() error {
	var problems []string
	for _, d := range []definer{tools, channels, schedules} {
		p, err := a.check(d)
		if err != nil {
			return err
		}
		problems = append(problems, p...)
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return &ToolFileError{Problems: problems}
	}
	return nil
}

// check checks the files of one definer's directory.
func (a *Agent) check(d definer) ([]string, error) {
	dir := filepath.Join(a.Dir, "agent", d.dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if d.what != "tool" && errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	var problems []string
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
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		files++
		if p := d.checkFile(path, a.rel(path)); p != "" {
			problems = append(problems, p)
		}
	}
	if files == 0 && d.what == "tool" {
		problems = append(problems, fmt.Sprintf("%s: no tools defined (add a file such as hello.go that calls tool.Define)", a.rel(dir)))
	}
	return problems, nil
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

// ToolFileError lists the files that break the one-tool-per-file rule.
type ToolFileError struct {
	Problems []string
}

func (e *ToolFileError) Error() string {
	return "each file in agent/tools (agent/channels, agent/schedules) must define exactly one tool (channel, schedule):\n  " + strings.Join(e.Problems, "\n  ")
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
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return err.Error()
	}
	name := strings.TrimSuffix(filepath.Base(path), ".go")
	if !validFileTool.MatchString(name) {
		return fmt.Sprintf("%s: %q is not a valid %s name (use letters, digits, '_' or '-', at most 64)", rel, name, d.what)
	}
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
	var lines []string
	if toolPkg != "" && toolPkg != "_" {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fun := call.Fun
			if ix, ok := fun.(*ast.IndexExpr); ok { // tool.Define[T](…)
				fun = ix.X
			}
			sel, ok := fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == toolPkg && slices.Contains(d.funcs, sel.Sel.Name) {
				lines = append(lines, strconv.Itoa(fset.Position(call.Pos()).Line))
			}
			return true
		})
	}
	switch len(lines) {
	case 1:
		return ""
	case 0:
		return fmt.Sprintf("%s: defines no %s (%s; shared code belongs in agent/lib)", rel, d.what, d.howTo)
	}
	return fmt.Sprintf("%s: defines %d %ss, at lines %s (split them into one file each)", rel, len(lines), d.what, strings.Join(lines, ", "))
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

var errNoSDK = errors.New("the agent's go.mod does not require " + SDKModule + " (add it with: go get " + SDKModule + ")")

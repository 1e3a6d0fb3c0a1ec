// Package npmtest gives tests the outside programs that are published on
// npm (MCP clients and test suites nobody here wrote): it finds node and
// npm, and installs a pinned package into a cache directory that outlives
// the test run, so that only the first run waits for npm.
//
// A package is installed under [CacheDir], one directory per name and
// version, by installing into a temporary directory beside it and renaming
// that into place: the rename is atomic, so concurrent test processes never
// see a half-installed package, and the first to finish wins.
//
// When node or npm is missing, or the install fails (no registry), the
// tests that need them skip, saying once how to enable them; under CI=true
// they fail instead, so that a CI run cannot pass without them.
package npmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// InstallTimeout bounds one npm install.
const InstallTimeout = 5 * time.Minute

// Package is an npm package installed for tests.
type Package struct {
	Name    string // as on npm, e.g. "@modelcontextprotocol/conformance"
	Version string // the exact version installed
	Root    string // the npm project it is installed in (holds package.json and node_modules)
}

// Dir is the package's own directory, node_modules/<name>.
func (p *Package) Dir() string {
	return filepath.Join(p.Root, "node_modules", filepath.FromSlash(p.Name))
}

// Bin is the path of one of the package's (or its dependencies')
// executables, node_modules/.bin/<name>.
func (p *Package) Bin(name string) string {
	return filepath.Join(p.Root, "node_modules", ".bin", name)
}

// Node returns the path of node. If there is none it skips t, or fails it
// when CI=true.
func Node(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		Unavailable(t, fmt.Errorf("finding node: %w", err))
	}
	return node
}

// Install returns the npm package name at version (an exact version, not
// a range), installing it into [CacheDir] when it is not there yet. If
// npm is missing or the install fails it skips t, or fails it when
// CI=true. Concurrent calls, also from other processes, are safe.
func Install(t testing.TB, name, version string) *Package {
	t.Helper()
	Node(t)
	npm, err := exec.LookPath("npm")
	if err != nil {
		Unavailable(t, fmt.Errorf("finding npm: %w", err))
	}
	cache, err := CacheDir()
	if err != nil {
		Unavailable(t, err)
	}
	key := name + "@" + version
	v, _ := installs.LoadOrStore(key, &install{})
	in := v.(*install)
	in.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), InstallTimeout)
		defer cancel()
		in.pkg, in.err = InstallDir(ctx, npm, cache, name, version)
	})
	if in.err != nil {
		Unavailable(t, in.err)
	}
	return in.pkg
}

// install is one package's installation in this process.
type install struct {
	once sync.Once
	pkg  *Package
	err  error
}

// installs holds this process's installations by name@version, so that
// parallel tests install a package once.
var installs sync.Map

// CacheDir is where packages are installed:
// <os.UserCacheDir()>/agent-sdk-tests/npm.
func CacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the user cache directory: %w", err)
	}
	return filepath.Join(dir, "agent-sdk-tests", "npm"), nil
}

// InstallDir installs the npm package name at version with the npm
// program at npm into its own directory under cache,
// <cache>/<name>@<version> (a scope's slash becoming "+"), unless it is
// there already, and returns it. The install goes into a temporary
// directory that is renamed into place once complete, so the directory
// exists only with the whole package in it.
func InstallDir(ctx context.Context, npm, cache, name, version string) (*Package, error) {
	if err := checkSpec(name, version); err != nil {
		return nil, err
	}
	pkg := &Package{Name: name, Version: version,
		Root: filepath.Join(cache, strings.ReplaceAll(name, "/", "+")+"@"+version)}
	if _, err := os.Stat(pkg.Root); err == nil {
		return pkg, pkg.check()
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, fmt.Errorf("making the npm test cache: %w", err)
	}
	tmp, err := os.MkdirTemp(cache, ".installing-")
	if err != nil {
		return nil, fmt.Errorf("making a directory to install %s@%s in: %w", name, version, err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; what is left of a failure otherwise
	manifest, err := json.Marshal(map[string]any{
		"name": "agent-sdk-test-deps", "private": true,
		"dependencies": map[string]string{name: version},
	})
	if err != nil {
		return nil, fmt.Errorf("writing the package.json to install %s@%s: %w", name, version, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), manifest, 0o644); err != nil {
		return nil, fmt.Errorf("writing the package.json to install %s@%s: %w", name, version, err)
	}
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--no-update-notifier",
		"--ignore-scripts", "--loglevel=error")
	cmd.Dir = tmp
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("installing %s@%s with npm: %w\n%s", name, version, err, out)
	}
	if err := (&Package{Name: name, Version: version, Root: tmp}).check(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, pkg.Root); err != nil {
		// Another process may have installed it meanwhile: its copy will do.
		if _, statErr := os.Stat(pkg.Root); statErr != nil {
			return nil, fmt.Errorf("moving %s@%s into the npm test cache: %w", name, version, err)
		}
	}
	return pkg, pkg.check()
}

// check says whether p's directory holds the package at its version.
func (p *Package) check() error {
	raw, err := os.ReadFile(filepath.Join(p.Dir(), "package.json"))
	if err != nil {
		return fmt.Errorf("reading %s@%s's package.json (remove %s to reinstall it): %w", p.Name, p.Version, p.Root, err)
	}
	var manifest struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		return fmt.Errorf("reading %s@%s's package.json (remove %s to reinstall it): %w", p.Name, p.Version, p.Root, err)
	}
	if manifest.Version != p.Version {
		return fmt.Errorf("%s in %s is version %s, not %s (remove the directory to reinstall it)", p.Name, p.Root, manifest.Version, p.Version)
	}
	return nil
}

// checkSpec refuses a name or version that is not a plain npm package
// name and exact version, which the cache directory and npm's command
// line could not take safely.
func checkSpec(name, version string) error {
	if name == "" || strings.HasPrefix(name, ".") || strings.Contains(name, "..") ||
		strings.ContainsAny(name, ` \:"'`) || strings.Count(name, "/") > 1 ||
		(strings.Contains(name, "/") && !strings.HasPrefix(name, "@")) {
		return fmt.Errorf("npm package name %q is not a plain (optionally scoped) name", name)
	}
	if version == "" || strings.ContainsAny(version, ` ^~<>=*|xX/\`) || strings.Count(version, ".") < 2 {
		return fmt.Errorf("npm package %s: version %q is not an exact version", name, version)
	}
	return nil
}

// Unavailable skips t because a program it needs is unavailable (err says
// which and why), printing one loud line to stderr the first time each
// reason comes up, since go test shows skip messages only with -v. Under
// CI=true it fails t instead.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	const enable = "install Node.js 20 or newer with npm, and let npm reach its registry, to run them"
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v; CI=true, so the tests that need node and npm must run: %s", err, enable)
	}
	if _, told := warned.LoadOrStore(err.Error(), true); !told {
		fmt.Fprintf(os.Stderr, "npmtest: SKIPPING the tests that need node/npm: %s; %s\n", firstLine(err), enable)
	}
	t.Skipf("%v; %s", err, enable)
}

// warned holds the reasons already printed by [Unavailable].
var warned sync.Map

// firstLine is err's message up to its first newline (npm's output
// follows it).
func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

package main

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentsdk/agentsdk/agentconfig"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/turnloop"
	"github.com/agentsdk/agentsdk/model"
)

// settingLine is a commented-out setting of the scaffold: a bare # and a
// line of YAML (a key, or a list item).
var settingLine = regexp.MustCompile(`^#(\s*)([A-Za-z][A-Za-z0-9_.-]*:(\s|$)|- )`)

// uncommented is the scaffold with every setting on.
func uncommented(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if settingLine.MatchString(l) {
			lines[i] = l[1:]
		}
	}
	return strings.Join(lines, "\n")
}

func loadYAML(t *testing.T, content string) agentconfig.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := agentconfig.Load(path)
	if err != nil {
		t.Fatalf("agentconfig.Load: %v\n%s", err, content)
	}
	return c
}

// configKeys lists the keys agentconfig reads, as dotted paths; a map's
// keys (names the user chooses) are "*".
func configKeys(t reflect.Type, prefix string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Map:
		configKeys(t.Elem(), prefix+".*", out)
		return
	case reflect.Struct:
	default:
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		path := strings.TrimPrefix(prefix+"."+tag, ".")
		*out = append(*out, path)
		if f.Type != reflect.TypeFor[agentconfig.Duration]() && f.Type != reflect.TypeFor[agentconfig.Dollars]() {
			configKeys(f.Type, path, out)
		}
	}
}

// yamlKeys lists the keys of a YAML document as dotted paths, and the
// same with every key under mcp: and pricing: (and any map) as "*".
func yamlKeys(n *yaml.Node, prefix string, out map[string]bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			yamlKeys(c, prefix, out)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			path := strings.TrimPrefix(prefix+"."+n.Content[i].Value, ".")
			out[path] = true
			yamlKeys(n.Content[i+1], path, out)
			star := strings.TrimPrefix(prefix+".*", ".")
			out[star] = true
			yamlKeys(n.Content[i+1], star, out)
		}
	}
}

// The scaffold's agent.yaml parses as it is (everything commented out:
// the defaults), parses with every setting uncommented, and shows every
// key agentconfig reads.
func TestAgentYAMLShowsEveryKey(t *testing.T) {
	if c := loadYAML(t, agentYAML); !reflect.DeepEqual(c, agentconfig.Config{}) {
		t.Errorf("the scaffold sets something: %+v", c)
	}
	on := uncommented(agentYAML)
	loadYAML(t, on)
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(on), &doc); err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	yamlKeys(&doc, "", present)
	var keys []string
	configKeys(reflect.TypeFor[agentconfig.Config](), "", &keys)
	if len(keys) < 40 {
		t.Fatalf("found only %d keys in agentconfig.Config: %v", len(keys), keys)
	}
	for _, k := range keys {
		if !present[k] {
			t.Errorf("agent.yaml's scaffold lacks %s", k)
		}
	}
	// And nothing it shows is unknown (Load has KnownFields): checked by
	// loadYAML above. Every setting line is one the test uncommented.
	for i, l := range strings.Split(agentYAML, "\n") {
		if strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "# ") && l != "#" && !settingLine.MatchString(l) {
			t.Errorf("line %d is neither prose (# …) nor a setting (#key: …): %q", i+1, l)
		}
	}
}

// The defaults agent.yaml's scaffold shows are the host's.
func TestAgentYAMLDefaultsAreTheHosts(t *testing.T) {
	c := loadYAML(t, uncommented(agentYAML))
	check := func(key string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the scaffold shows %v, the default is %v", key, got, want)
		}
	}
	check("maxSteps", c.MaxSteps, host.MaxStepsDefault)
	check("toolConcurrency", c.ToolConcurrency, host.ToolConcurrencyDefault)
	check("modelTimeout", time.Duration(c.ModelTimeout), host.ModelTimeoutDefault)
	check("modelRetries", deref(c.ModelRetries), host.ModelRetriesDefault)
	check("maxResumes", deref(c.MaxResumes), host.MaxResumesDefault)
	check("model.maxTokens", c.Model.MaxTokens, model.MaxTokensDefault)
	check("mode", c.Mode, "local")
	check("compaction.enabled", deref(c.Compaction.Enabled), true)
	check("compaction.threshold", deref(c.Compaction.Threshold), turnloop.DefaultThreshold)
	check("compaction.keepTurns", deref(c.Compaction.KeepTurns), turnloop.DefaultKeepTurns)
	check("compaction.clearBytes", deref(c.Compaction.ClearBytes), turnloop.DefaultClearBytes)
	check("compaction.summaryTokens", deref(c.Compaction.SummaryTokens), turnloop.DefaultSummaryTokens)
	check("limits.onExceed", c.Limits.OnExceed, "fail")
	check("limits.turn", c.Limits.Turn, agentconfig.Limit{})
	check("telemetry", c.Telemetry, agentconfig.Telemetry{})
	if c.Slack == nil || c.GitHub == nil {
		t.Fatalf("slack: or github: is not in the scaffold")
	}
	check("slack.botTokenEnv", c.Slack.BotTokenEnv, "SLACK_BOT_TOKEN")
	check("slack.signingSecretEnv", c.Slack.SigningSecretEnv, "SLACK_SIGNING_SECRET")
	check("slack.apiURL", c.Slack.APIURL, "https://slack.com/api/")
	check("github.tokenEnv", c.GitHub.TokenEnv, "GITHUB_TOKEN")
	if !slices.Contains(agentconfig.Providers, c.Model.Provider) {
		t.Errorf("model.provider %q", c.Model.Provider)
	}
}

// deref is *p, or nil (which no default equals) when the key is absent.
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// init writes the go line of the SDK's own go.mod.
func TestInitGoVersionIsTheSDKs(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := goLine.FindSubmatch(b)
	if m == nil || string(m[1]) != sdkGoVersion {
		t.Errorf("the SDK's go.mod says go %s; init writes go %s (sdkGoVersion)", m[1], sdkGoVersion)
	}
}

package agentconfig

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Unknown keys. yaml's KnownFields says "field modle not found in type
// agentconfig.Config"; checkKeys says where, what was likely meant, and
// which keys that level takes.

// UnknownKeyError is a key agent.yaml has that its level does not take.
type UnknownKeyError struct {
	Line  int
	Key   string
	Under string   // the dotted path of its level ("model", "mcp.github"), "" at the top
	Maybe string   // the valid key it most likely meant, or ""
	Valid []string // the keys its level takes, sorted
}

func (e *UnknownKeyError) Error() string {
	level, where := "the top level", ""
	if e.Under != "" {
		level, where = e.Under, " under "+e.Under
	}
	maybe := ""
	if e.Maybe != "" {
		maybe = fmt.Sprintf(" (did you mean %q?)", e.Maybe)
	}
	return fmt.Sprintf("line %d: unknown key %q%s%s; the keys of %s are: %s", e.Line, e.Key, where, maybe, level, strings.Join(e.Valid, ", "))
}

// UnknownKeysError lists every unknown key of a file, in its order.
type UnknownKeysError []*UnknownKeyError

func (e UnknownKeysError) Error() string {
	if len(e) == 1 {
		return e[0].Error()
	}
	lines := make([]string, len(e))
	for i, k := range e {
		lines[i] = "  " + k.Error()
	}
	return "unknown keys:\n" + strings.Join(lines, "\n")
}

var yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// checkKeys checks the keys of a YAML document against type t, as
// KnownFields does, and returns an UnknownKeysError for those it lacks
// (nil when there are none, or the text does not parse: Decode says so).
func checkKeys(b []byte, t reflect.Type) error {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil {
		return nil
	}
	var errs UnknownKeysError
	walkKeys(&doc, t, "", &errs, map[*yaml.Node]bool{})
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func walkKeys(n *yaml.Node, t reflect.Type, path string, errs *UnknownKeysError, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(yamlUnmarshaler) {
		return // it reads itself
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walkKeys(c, t, path, errs, seen)
		}
	case yaml.AliasNode:
		walkKeys(n.Alias, t, path, errs, seen)
	case yaml.SequenceNode:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for _, c := range n.Content {
				walkKeys(c, t.Elem(), path, errs, seen)
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" {
				walkKeys(v, t, path, errs, seen) // a merge: its keys are this level's
				continue
			}
			switch t.Kind() {
			case reflect.Map:
				walkKeys(v, t.Elem(), join(path, k.Value), errs, seen)
			case reflect.Struct:
				fields := yamlFields(t)
				f, ok := fields[k.Value]
				if !ok {
					*errs = append(*errs, unknownKey(k, path, fields))
					continue
				}
				walkKeys(v, f, join(path, k.Value), errs, seen)
			}
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlFields maps the keys a struct takes to their types, inlined
// structs' included.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(","+opts+",", ",inline,") && f.Type.Kind() == reflect.Struct {
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func unknownKey(k *yaml.Node, path string, fields map[string]reflect.Type) *UnknownKeyError {
	valid := make([]string, 0, len(fields))
	for name := range fields {
		valid = append(valid, name)
	}
	sort.Strings(valid)
	return &UnknownKeyError{Line: k.Line, Key: k.Value, Under: path, Maybe: closest(k.Value, valid), Valid: valid}
}

// closest returns the candidate a mistyped key most likely meant: one
// equal but for case, '_' and '-' (max_steps, maxsteps for maxSteps), else
// the nearest by edits (a transposition is one) if near enough, else one
// the key begins (keep for keepTurns); "" if none is.
func closest(key string, candidates []string) string {
	norm := func(s string) string { return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s)) }
	// Of candidates as near, one with the same letters (modle: model, not
	// mode), then one as long.
	sorted := func(s string) string {
		r := []rune(s)
		slices.Sort(r)
		return string(r)
	}
	rank := func(c string) [3]int {
		anagram := 1
		if sorted(norm(c)) == sorted(norm(key)) {
			anagram = 0
		}
		return [3]int{editDistance(norm(key), norm(c)), anagram, abs(len(c) - len(key))}
	}
	best, bestRank := "", [3]int{}
	for _, c := range candidates {
		if norm(c) == norm(key) {
			return c
		}
		if r := rank(c); best == "" || slices.Compare(r[:], bestRank[:]) < 0 {
			best, bestRank = c, r
		}
	}
	bestD := bestRank[0]
	if best != "" && bestD <= min(3, max(1, len(key)/3)) {
		return best
	}
	// A key cut short (keep for keepTurns).
	prefixed := ""
	for _, c := range candidates {
		if len(key) >= 3 && strings.HasPrefix(norm(c), norm(key)) && (prefixed == "" || len(c) < len(prefixed)) {
			prefixed = c
		}
	}
	return prefixed
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of adjacent letters.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

package postgres_test

import (
	"crypto/rand"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/internal/pgtest"
	"github.com/agentsdk/agentsdk/store/postgres"
)

// A URL whose search_path names a schema that does not exist is told how
// to create it, rather than the migrations' "no schema has been selected
// to create in"; one with schema=, which PostgreSQL does not take, is told
// to use search_path.
func TestOpenMissingSchema(t *testing.T) {
	base := pgtest.URL(t)
	name := "missing_" + strings.ToLower(rand.Text())
	url, err := pgtest.WithSearchPath(base, name)
	if err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(t.Context(), url)
	for _, want := range []string{
		"opening store: the schema of the URL's search_path (" + name + ") does not exist in database",
		"create it with: CREATE SCHEMA " + `"` + name + `"` + ";",
		"leave search_path out of the URL to use public",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}

	if !strings.HasPrefix(base, "postgres") {
		return // a key=value connection string
	}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	_, err = postgres.Open(t.Context(), base+sep+"schema=agents")
	if want := `the URL's schema=agents is not a PostgreSQL setting: name the schema with search_path=agents (create it first with: CREATE SCHEMA "agents";)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v, want %q", err, want)
	}
}

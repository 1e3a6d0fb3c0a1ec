package agentmain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/agentconfig"
	"github.com/agentsdk/agentsdk/store"
)

// The store is SQLite under the state directory unless --store (else
// $AGENT_SDK_STORE) names a file or a postgres:// URL; a PostgreSQL URL
// needs the driver built in.
func TestOpenStore(t *testing.T) {
	ctx := context.Background()
	t.Setenv(agentconfig.StoreEnvVar, "")
	state := t.TempDir()
	st, err := Options{}.openStore(ctx, "", state)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := os.Stat(filepath.Join(state, dbFile)); err != nil {
		t.Errorf("default store: %v", err)
	}

	file := filepath.Join(t.TempDir(), "elsewhere.db")
	t.Setenv(agentconfig.StoreEnvVar, file)
	st, err = Options{}.openStore(ctx, "", state)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := os.Stat(file); err != nil {
		t.Errorf("$AGENT_SDK_STORE: %v", err)
	}

	const url = "postgres://postgres@127.0.0.1:5432/test"
	if _, err := (Options{}).openStore(ctx, url, state); err == nil || !strings.Contains(err.Error(), "built without PostgreSQL support") {
		t.Errorf("postgres without the driver: %v", err)
	}
	opened := ""
	o := Options{OpenStore: func(ctx context.Context, u string) (store.Store, error) {
		opened = u
		return nil, errors.New("not here")
	}}
	if _, err := o.openStore(ctx, url, state); err == nil || opened != url {
		t.Errorf("--store %s opened %q: %v", url, opened, err)
	}
}

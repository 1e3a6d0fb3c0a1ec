// Package token finds, and on first start creates, the bearer token that
// guards a serve host's API. The host and the CLI resolve it the same way:
// an explicit value, then $AGENT_SDK_TOKEN, then <state>/token.
package token

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvVar is the environment variable that holds a token.
const EnvVar = "AGENT_SDK_TOKEN"

// File returns where a state directory keeps its generated token.
func File(stateDir string) string { return filepath.Join(stateDir, "token") }

// Source says where a token came from.
type Source string

// Where a token came from.
const (
	FromFlag      Source = "flag"
	FromEnv       Source = "environment"
	FromFile      Source = "file"
	FromGenerated Source = "generated"
)

// Find returns the token to use without creating one: explicit if set, else
// $AGENT_SDK_TOKEN, else the one stored in stateDir. It returns "" when
// there is none.
func Find(explicit, stateDir string) (string, Source, error) {
	if explicit != "" {
		return explicit, FromFlag, nil
	}
	if v := os.Getenv(EnvVar); v != "" {
		return v, FromEnv, nil
	}
	if stateDir == "" {
		return "", "", nil
	}
	b, err := os.ReadFile(File(stateDir))
	if errors.Is(err, os.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("reading token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", "", fmt.Errorf("reading token: %s is empty", File(stateDir))
	}
	return tok, FromFile, nil
}

// Ensure returns the token as Find does, generating one and storing it in
// stateDir with mode 0600 when there is none.
func Ensure(explicit, stateDir string) (string, Source, error) {
	tok, src, err := Find(explicit, stateDir)
	if err != nil || tok != "" {
		return tok, src, err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return "", "", fmt.Errorf("creating state directory: %w", err)
	}
	tok = "asdk_" + strings.ToLower(rand.Text())
	// Write it to a temporary file, then link that into place: the token
	// file appears whole or not at all, and a second process starting at
	// the same moment finds it taken and uses the first one's token.
	tmp, err := os.CreateTemp(stateDir, ".token-*")
	if err != nil {
		return "", "", fmt.Errorf("storing token: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", "", fmt.Errorf("storing token: %w", err)
	}
	if _, err := tmp.WriteString(tok + "\n"); err != nil {
		tmp.Close()
		return "", "", fmt.Errorf("storing token: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", "", fmt.Errorf("storing token: %w", err)
	}
	if err := os.Link(tmp.Name(), File(stateDir)); errors.Is(err, os.ErrExist) {
		return Find("", stateDir)
	} else if err != nil {
		return "", "", fmt.Errorf("storing token: %w", err)
	}
	return tok, FromGenerated, nil
}

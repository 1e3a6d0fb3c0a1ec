package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/command"
)

// exitBroken is audit verify's exit status when the chain does not hold.
const exitBroken = 1

// maxAuditLine bounds one entry of an export file.
const maxAuditLine = 16 << 20

func newAudit() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Export and verify a host's tamper-evident audit log (decisions, sign-ins, budget raises)",
		Long: `The host appends to its audit log, in its store, every decision of a parked call
(approval.decided: who, approved or denied, why, via http, cli, playground or a
channel such as slack), every approved raise of a usage limit (budget.raised), and
every playground sign-in and sign-out. Each entry carries the SHA-256 hash of the one
before it, so that an entry changed, removed or reordered breaks the chain from there
on; with a signing key (<state>/audit-key, made at first serve) each entry's hash is
also signed (ed25519).

  agent-sdk audit export --url … -o audit.jsonl   the log as JSON lines, with hashes
  agent-sdk audit verify --url …                  check the host's log
  agent-sdk audit verify audit.jsonl              check an export, offline`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newAuditExport(), newAuditVerify())
	return cmd
}

func newAuditExport() *cobra.Command {
	var (
		f   urlFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write a running host's audit log as JSON lines, one entry a line, with its hashes",
		Long: `export reads the audit log of the host at --url (GET /v1/audit, a page at a time, up to
the entry that was last when it began) and writes it to -o FILE (default: standard
output), one entry a line:

  {"seq":1,"time":"…","kind":"approval.decided","principal":"bearer-token:alice",
   "subject":"tool_deploy_…","detail":{…},"prevHash":"","hash":"…","signer":"…","sig":"…"}

Keep a copy somewhere the host cannot write: agent-sdk audit verify FILE then shows
whether the host's log still agrees with it.

Exit status: 0 written; 2 refused (a bad flag or token); 3 the host could not be
reached, or the file not written.`,
		Example: `  agent-sdk audit export --url http://127.0.0.1:3000/myagent -o audit.jsonl`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			entries, head, err := c.Audit(cmd.Context())
			if err != nil {
				return remoteError(err)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			for _, e := range entries {
				if err := enc.Encode(e); err != nil {
					return exitWith(command.ExitFailure, "writing entry %d: %v", e.Seq, err)
				}
			}
			if out == "" || out == "-" {
				_, err = os.Stdout.Write(buf.Bytes())
			} else {
				err = os.WriteFile(out, buf.Bytes(), 0o600)
			}
			if err != nil {
				return exitWith(command.ExitFailure, "writing the export: %v", err)
			}
			fmt.Fprintf(os.Stderr, "exported %d entries (head: entry %d, hash %s)\n", len(entries), head.Seq, head.Hash)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "the file to write (default: standard output)")
	return cmd
}

func newAuditVerify() *cobra.Command {
	var (
		f     urlFlags
		trust []string
	)
	cmd := &cobra.Command{
		Use:   "verify [FILE]",
		Short: "Check an audit log's hash chain (a running host's, or an export's offline) and name the first entry changed, removed or reordered",
		Long: `verify checks an audit log from its first entry: seqs 1, 2, 3… without gaps, each
entry's hash that of its contents, each entry's previous hash the hash of the entry
before it, and each signature. With FILE (an export; - for standard input) it works
offline; with --url it reads the host's log, and its head, so that entries removed
from the end show too.

It names the first entry that does not hold, for example:

  entry 7 was changed: its hash is 3f2a…, its contents hash to 9bc0…
  entry 8 is missing (7 is followed by 9)
  entry 7 was reordered: it holds what was entry 8

--trust KEY (a base64 ed25519 public key, or a file holding one, such as the host's
<state>/audit-key.pub; repeatable) requires every entry to be signed by one of them.

What it proves: the log (or the export) is the chain the host wrote, unchanged, or
where it was changed. What it does not: someone who can write the database (or the
file) can rewrite the whole chain from any entry on with fresh hashes, and verify
will pass it. Compare with an export kept elsewhere, or require the host's
signature with --trust and keep its private key (<state>/audit-key) from the
database's writers.

Exit status: 0 the chain holds; 1 it does not (the entry is named); 2 refused (a bad
flag, a file that is not an export); 3 the host could not be reached.`,
		Example: `  agent-sdk audit verify --url http://127.0.0.1:3000/myagent
  agent-sdk audit verify audit.jsonl --trust .agent-sdk/audit-key.pub`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			keys, err := trustedKeys(trust)
			if err != nil {
				return err
			}
			opts := &api.AuditVerifyOptions{Trusted: keys}
			var entries []api.AuditEntry
			where := ""
			switch {
			case len(args) == 1 && f.url != "":
				return exitWith(command.ExitRefused, "give FILE or --url, not both")
			case len(args) == 1:
				where = args[0]
				if entries, err = readExport(args[0]); err != nil {
					return err
				}
			case f.url != "":
				c, err := f.client()
				if err != nil {
					return err
				}
				var head api.AuditHead
				if entries, head, err = c.Audit(cmd.Context()); err != nil {
					return remoteError(err)
				}
				opts.Head, where = &head, f.url
			default:
				return exitWith(command.ExitRefused, "give an export FILE, or --url to verify a running host's log")
			}
			rep, err := api.VerifyAudit(entries, opts)
			var b *api.AuditBreak
			if errors.As(err, &b) {
				return exitWith(exitBroken, "%s: %s", where, b.Message)
			}
			if err != nil {
				return exitWith(exitBroken, "%s: %v", where, err)
			}
			fmt.Printf("%s: the chain holds: %d entries", where, rep.Entries)
			if rep.Entries > 0 {
				fmt.Printf(", the last entry %d with hash %s", rep.Last.Seq, rep.Last.Hash)
			}
			fmt.Println()
			switch {
			case rep.Signed == 0:
				fmt.Println("no entry is signed")
			default:
				fmt.Printf("%d of %d entries signed, by %s", rep.Signed, rep.Entries, strings.Join(rep.Signers, ", "))
				if len(keys) == 0 {
					fmt.Print(" (not checked against a trusted key: pass --trust)")
				}
				fmt.Println()
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().Lookup("url").Usage = "the running host whose log to verify: http://127.0.0.1:3000/<slug> (instead of FILE)"
	delete(cmd.Flags().Lookup("url").Annotations, cobra.BashCompOneRequiredFlag)
	cmd.Flags().StringArrayVar(&trust, "trust", nil, "a public key (base64, or a file holding it) that must have signed every entry; repeatable")
	return cmd
}

// readExport reads an export file's entries (- for standard input).
func readExport(path string) ([]api.AuditEntry, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, exitWith(command.ExitRefused, "reading the export: %v", err)
		}
		defer f.Close()
		r = f
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxAuditLine)
	var out []api.AuditEntry
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var e api.AuditEntry
		if err := json.Unmarshal(text, &e); err != nil {
			return nil, exitWith(command.ExitRefused, "%s:%d: not an audit entry: %v", path, line, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, exitWith(command.ExitRefused, "reading the export %s: %v", path, err)
	}
	return out, nil
}

// trustedKeys reads --trust: each a base64 ed25519 public key, or a file
// holding one.
func trustedKeys(specs []string) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for _, spec := range specs {
		text := spec
		if b, err := os.ReadFile(spec); err == nil {
			text = string(b)
		}
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
		if err != nil || len(k) != ed25519.PublicKeySize {
			return nil, exitWith(command.ExitRefused, "--trust %s: not a base64 ed25519 public key (%d bytes), nor a file holding one", spec, ed25519.PublicKeySize)
		}
		keys = append(keys, ed25519.PublicKey(k))
	}
	return keys, nil
}

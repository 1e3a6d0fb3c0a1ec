package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/command"
)

func newKeys() *cobra.Command {
	var (
		f      urlFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "List a running host's API keys, or create (keys create NAME --roles …) and revoke (keys revoke ID) one",
		Long: `keys lists the API keys of a running host, one a line, oldest first:

  ID          the key's id (the part after ask_ in the key)
  NAME        what it was created for
  ROLES       its roles (agent.yaml auth.roles, over the defaults admin,
              operator, reader, approver, auditor)
  CREATED     when it was created
  LAST USED   when it was last used, to the minute ("-": never)
  EXPIRES     when it stops working ("-": never)
  STATUS      active, expired or revoked

A key is sent as the bearer token: Authorization: Bearer ask_<id>_<secret>. It
acts as a principal of its own, key:<id>, with its roles' permissions; it sees
only the sessions it opened (unless a role has read:all). The host keeps only
the SHA-256 of its secret: a key is shown once, by keys create. A revoked or
expired key is refused (401) at once by every host sharing the store.

Managing keys needs the admin permission: the host's token, or an admin key.
The token is --token, $AGENT_SDK_TOKEN, or <state>/token of the agent in --dir
(default: the current directory). --json prints the listing as the API answers
it. Exit status: 0 done; 2 refused (bad flags, wrong token, forbidden, an
unknown key or role); 3 the host could not be reached or failed.`,
		Example: `  agent-sdk keys create ci-bot --roles operator --expires 90d --url http://127.0.0.1:3000/myagent
  agent-sdk keys --url http://127.0.0.1:3000/myagent     (or: keys list)
  agent-sdk keys revoke 3xkq7ztmhb2ma --url http://127.0.0.1:3000/myagent`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return listKeys(cmd, &f, asJSON) },
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for machines")
	cmd.AddCommand(newKeyList(), newKeyCreate(), newKeyRevoke())
	return cmd
}

// newKeyList is keys list: what keys alone does, by the name messages use.
func newKeyList() *cobra.Command {
	var (
		f      urlFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List a running host's API keys (as keys alone does)",
		Long: `keys list lists the API keys of a running host, as keys alone does: see
agent-sdk keys --help for the columns, the token and the exit status.`,
		Example: `  agent-sdk keys list --url http://127.0.0.1:3000/myagent`,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return listKeys(cmd, &f, asJSON) },
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for machines")
	return cmd
}

// listKeys prints a host's keys, a line each (or as JSON).
func listKeys(cmd *cobra.Command, f *urlFlags, asJSON bool) error {
	c, err := f.client()
	if err != nil {
		return err
	}
	list, err := c.Keys(cmd.Context())
	if err != nil {
		return remoteError(err)
	}
	if list == nil {
		list = []api.Key{}
	}
	if asJSON {
		return printListing(os.Stdout, map[string][]api.Key{"keys": list})
	}
	printKeys(os.Stdout, list, time.Now())
	return nil
}

func newKeyCreate() *cobra.Command {
	var (
		f       urlFlags
		roles   string
		expires string
	)
	cmd := &cobra.Command{
		Use:   "create NAME --roles ROLE,… [--expires 90d]",
		Short: "Create an API key and print it, once",
		Long: `keys create makes an API key named NAME with the roles given, on the host asked,
and prints the key on stdout, alone on its line: ask_<id>_<secret>. It is shown
this once: the host keeps only the SHA-256 of its secret. What the key is (id,
roles, expiry) goes to stderr.

--roles is a comma-separated list of the host's roles: admin (every permission),
operator (read, message, call, approve), reader (read), approver (read, approve),
auditor (read, read:all), and those agent.yaml's auth.roles defines. --expires
is how long the key lasts: days (90d) or a Go duration (720h); without it the
key lasts until revoked.

Exit status: 0 created; 2 refused (no name, an unknown role, a bad expiry, a
wrong token, forbidden); 3 the host could not be reached or failed.`,
		Example: `  agent-sdk keys create ci-bot --roles operator --expires 90d --url http://127.0.0.1:3000/myagent
  export AGENT_SDK_TOKEN=$(agent-sdk keys create alice --roles reader,approver --url http://127.0.0.1:3000/myagent)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(roles) == "" {
				return exitWith(command.ExitRefused, "keys create needs --roles: a comma-separated list of roles (admin, operator, reader, approver, auditor, or agent.yaml's)")
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			var list []string
			for _, r := range strings.Split(roles, ",") {
				if r = strings.TrimSpace(r); r != "" {
					list = append(list, r)
				}
			}
			k, secret, err := c.CreateKey(cmd.Context(), args[0], list, expires)
			if err != nil {
				return remoteError(err)
			}
			exp := "never"
			if k.ExpiresAt != nil {
				exp = k.ExpiresAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(os.Stderr, "created key %s (%s), roles %s, expires %s; it is shown this once: keep it now\n",
				k.ID, clean(k.Name), strings.Join(k.Roles, ","), exp)
			fmt.Println(secret)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&roles, "roles", "", "the key's roles, comma-separated (required)")
	cmd.Flags().StringVar(&expires, "expires", "", "how long the key lasts: 90d, 720h (default: until revoked)")
	return cmd
}

func newKeyRevoke() *cobra.Command {
	var f urlFlags
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API key: every host refuses it from its next request",
		Long: `keys revoke revokes the API key ID (as keys lists it; the part after ask_ in the
key), on the host asked. It answers (in about a second: hosts trust a key they
read for a second) once every host sharing the store refuses the key (401).
Revoking a revoked key changes nothing.

Exit status: 0 revoked; 2 refused (no key has that id: 404 key_not_found, a
wrong token, forbidden); 3 the host could not be reached or failed.`,
		Example: `  agent-sdk keys revoke 3xkq7ztmhb2ma --url http://127.0.0.1:3000/myagent`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			k, err := c.RevokeKey(cmd.Context(), args[0])
			if err != nil {
				return remoteError(err)
			}
			fmt.Printf("revoked key %s (%s) at %s\n", k.ID, clean(k.Name), k.RevokedAt.UTC().Format(time.RFC3339))
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

// printKeys writes the listing as a table.
func printKeys(w io.Writer, list []api.Key, now time.Time) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no API keys (agent-sdk keys create NAME --roles ROLE makes one)")
		return
	}
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	rows := [][]string{{"ID", "NAME", "ROLES", "CREATED", "LAST USED", "EXPIRES", "STATUS"}}
	for _, k := range list {
		status := "active"
		switch {
		case k.RevokedAt != nil:
			status = "revoked"
		case !k.Usable(now):
			status = "expired"
		}
		rows = append(rows, []string{clean(k.ID), clean(k.Name), clean(strings.Join(k.Roles, ",")), k.CreatedAt.UTC().Format(time.RFC3339),
			at(k.LastUsedAt), at(k.ExpiresAt), status})
	}
	printTable(w, rows)
}

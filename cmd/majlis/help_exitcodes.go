package main

import (
	"fmt"
	"strings"

	"github.com/majlis-dev/majlis/wire"

	"github.com/spf13/cobra"
)

const exitCodesHelpTemplate = `Every majlis command exits with one of these codes. Scripts may rely on them.

  0  done
  1  unexpected failure (a bug, an I/O error, git failing unexpectedly);
     a panic is reported as the error internal
  2  usage error (unknown command, subcommand or flag, a command group
     without its subcommand, bad argument, an environment variable majlis
     does not accept); nothing was changed
  3  refused for safety: overlap with a retained peer, identity drift,
     a lock majlis did not set, a workspace git would not act on,
     malformed or unverifiable authority, unconfirmed or stale preview,
     quarantined resource, unsafe path, blocked by policy, unsupported
     filesystem, a hook majlis did not write; nothing was changed
  4  held by another live owner (a lease or reservation conflict, or an
     owner whose death cannot be proven); retry later or see the holder
  5  not found
  130  interrupted by Ctrl-C (SIGINT), 143 by SIGTERM: what was under way
     was undone (allocate) or can be resumed with the same --request-id
     (reclaim: the message names it); the JSON error's code is interrupted

With --json, a failure prints exactly one object on stdout:

  {"error": {"code": "<stable_snake_case>", "message": "...", "details": {...}}}

The code is stable and more precise than the exit status. The codes, by
exit status:

{{codes}}
Lease refusals carry their facts in details: "conflicts" (held,
quarantined: each with the other lease and the policy key that decided),
"gaps" (policy_blocked: the changed paths outside the holder's leases).
Workspace refusals do too: "lock_reason" and "admin_entry" (locked: a
worktree lock majlis did not set, which it never lifts), "setting",
"value", "origin", "git_work_tree" and "git_dir" (worktree_config_mismatch:
the workspace's own git config aims git at another directory, or none),
"leases" (each with id, resource, holder, state and expires_at),
"owner_pid", "owner_state" and "owner_alive" (workspace_live).

A bulk reclaim (--released, --dead) prints its result and exits with the
status of the first workspace it did not reclaim, each line of the result
carrying its own error object.

malformed_record names the damaged file (details.path). Damage stays local:
a workspace's damaged record refuses that workspace's operations, and others
only when its place cannot be known; 'majlis workspace list' shows it as
damaged, and 'majlis doctor' says what is wrong and what to run.

Server refusals, and 'majlis server status' for every state but running,
carry the probe's findings in details.server ('majlis server --help').`

// newExitCodesTopic is an additional help topic: `majlis help exit-codes`.
func newExitCodesTopic() *cobra.Command {
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "Exit codes and JSON errors, for scripts",
		Long:  exitCodesHelp(),
	}
}

// exitCodesHelp is the help topic, with the codes of the code table listed
// under their exit status.
func exitCodesHelp() string {
	return strings.Replace(exitCodesHelpTemplate, "{{codes}}", codesByExit(), 1)
}

// codesByExit lists the codes of the table by exit status, wrapped:
//
//	3  peer_overlap, preview_stale, ...
//	   identity_drift, ...
func codesByExit() string {
	var b strings.Builder
	for _, exit := range []ExitCode{ExitError, ExitUsage, ExitRefused, ExitHeld, ExitNotFound} {
		var codes []string
		for _, c := range wire.Codes() {
			if c.Exit == exit {
				codes = append(codes, c.Code)
			}
		}
		line := fmt.Sprintf("  %d ", exit)
		for i, code := range codes {
			if i < len(codes)-1 {
				code += ","
			}
			if i > 0 && len(line)+1+len(code) > 74 {
				b.WriteString(line + "\n")
				line = "    "
			}
			line += " " + code
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// The markers of the error-code sections of docs/cli.md and docs/MCP.md,
// which docsCodesSection generates (codes_test.go checks them, -update
// rewrites them).
const (
	docsCodesBegin = "<!-- error codes: generated from wire/codes.go; `go test ./cmd/majlis -run TestDocsListEveryCode -update` rewrites it -->"
	docsCodesEnd   = "<!-- end of error codes -->"
)

// docsCodesSection is the error-code table of docs/cli.md
// (wire.SurfaceCLI) or of docs/MCP.md (wire.SurfaceMCP): every code, its exit status, what it means
// and, in that surface's words, what helps (the server's operations by
// their tool names; over HTTP a refusal names their routes).
func docsCodesSection(s wire.Surface) string {
	var b strings.Builder
	b.WriteString(docsCodesBegin + "\n\n")
	b.WriteString("| code | exit | meaning | what to do |\n|---|---|---|---|\n")
	for _, exit := range []ExitCode{ExitUsage, ExitRefused, ExitHeld, ExitNotFound, ExitError} {
		for _, c := range wire.Codes() {
			if c.Exit != exit {
				continue
			}
			var hints []string
			for _, h := range c.Hints {
				text := h.On(s)
				if text == "" {
					continue
				}
				text = wire.Refusal{Details: map[string]any{"hint": wire.FillHint(text, nil)}}.In(s).Hint()
				if h.When != "" {
					text = "(" + h.When + ") " + text
				}
				hints = append(hints, strings.ReplaceAll(text, "|", `\|`))
			}
			fmt.Fprintf(&b, "| `%s` | %d | %s | %s |\n", c.Code, c.Exit, strings.ReplaceAll(c.Meaning, "|", `\|`), strings.Join(hints, "<br>"))
		}
	}
	b.WriteString("\n" + docsCodesEnd)
	return b.String()
}

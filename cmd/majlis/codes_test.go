package main

import (
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/server"
)

// -update rewrites what the tests generate: the golden JSON envelopes and
// the error-code sections of docs/cli.md and docs/MCP.md.
var update = flag.Bool("update", false, "rewrite testdata/golden and the generated sections of docs/cli.md and docs/MCP.md")

// The packages whose sentinels reach the command line, and so must each be
// in the code table (directly, or as Within of the code they reach it as).
var sentinelPackages = []string{"provider", "admission", "reservation", "gitops", "server", "internal/envvar", "pathid", "internal/failpoint", "internal/durable"}

// Every exported sentinel (var ErrX = errors.New("...")) of those packages
// is in the code table exactly once.
func TestCodeTableHasEverySentinel(t *testing.T) {
	t.Parallel()
	inTable := map[string]int{} // message -> times listed
	for _, c := range codeTable {
		for _, s := range c.From {
			if s.err != nil {
				inTable[s.err.Error()]++
			}
		}
		for _, err := range c.Within {
			inTable[err.Error()]++
		}
	}
	exported := map[string]string{} // message -> package.Name
	for _, pkg := range sentinelPackages {
		for msg, name := range sentinelsOf(t, filepath.Join("..", "..", pkg)) {
			exported[msg] = filepath.Base(pkg) + "." + name
		}
	}
	if len(exported) < 60 {
		t.Fatalf("found only %d sentinels: the source scan is broken", len(exported))
	}
	for msg, name := range exported {
		switch n := inTable[msg]; {
		case n == 0:
			t.Errorf("%s (%q) is not in the code table (cmd/majlis/codes.go): give it a code, or list it as Within", name, msg)
		case n > 1:
			t.Errorf("%s is in the code table %d times", name, n)
		}
	}
	for msg := range inTable {
		if _, ok := exported[msg]; !ok {
			t.Errorf("the code table lists %q, which no scanned package exports", msg)
		}
	}
}

// sentinelsOf maps the message of each exported `ErrX = errors.New(msg)`
// of the package in dir to its name.
func sentinelsOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !name.IsExported() || !strings.HasPrefix(name.Name, "Err") || i >= len(vs.Values) {
						continue
					}
					call, ok := vs.Values[i].(*ast.CallExpr)
					if !ok || len(call.Args) != 1 {
						t.Errorf("%s: %s is not errors.New(\"...\"): the scan cannot check it", f, name.Name)
						continue
					}
					lit, ok := call.Args[0].(*ast.BasicLit)
					if !ok {
						t.Errorf("%s: %s is not errors.New(\"...\")", f, name.Name)
						continue
					}
					msg, _ := strconv.Unquote(lit.Value)
					out[msg] = name.Name
				}
			}
		}
	}
	return out
}

// No code is listed twice, every code is snake_case with a meaning, every
// row has a way to be reached, and a hint's conditions are well formed.
func TestCodeTableIsWellFormed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	cond := regexp.MustCompile(`^[a-z_]+(=[a-z_]+)?$`)
	for _, c := range codeTable {
		if seen[c.Code] {
			t.Errorf("code %s is listed twice", c.Code)
		}
		seen[c.Code] = true
		if !snake.MatchString(c.Code) {
			t.Errorf("code %q is not snake_case", c.Code)
		}
		if c.Meaning == "" || strings.Contains(c.Meaning, "\n") {
			t.Errorf("code %s has no one-line meaning", c.Code)
		}
		if len(c.From) == 0 {
			t.Errorf("code %s comes from nothing", c.Code)
		}
		if c.Exit < ExitError || c.Exit > ExitNotFound {
			t.Errorf("code %s exits %d", c.Code, c.Exit)
		}
		for _, h := range c.Hints {
			for _, w := range strings.Fields(h.When) {
				if !cond.MatchString(w) {
					t.Errorf("code %s: hint condition %q is not KEY or KEY=VALUE", c.Code, w)
				}
			}
		}
	}
}

// The help topic lists every code of the table under its exit status.
func TestExitCodesHelpListsEveryCode(t *testing.T) {
	t.Parallel()
	_, list, ok := strings.Cut(exitCodesHelp(), "The codes, by\nexit status:\n")
	if !ok {
		t.Fatal("exit-codes help has no list of codes")
	}
	listed := map[string]ExitCode{}
	status := ExitCode(-1)
	for _, line := range strings.Split(strings.TrimPrefix(list, "\n"), "\n") {
		if line == "" {
			break
		}
		if m := regexp.MustCompile(`^  (\d)  (.*)$`).FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			status, line = ExitCode(n), m[2]
		} else if !strings.HasPrefix(line, "     ") {
			break
		}
		for _, code := range strings.Split(line, ",") {
			if code = strings.TrimSpace(code); code != "" {
				if _, dup := listed[code]; dup {
					t.Errorf("code %s is listed twice", code)
				}
				listed[code] = status
			}
		}
	}
	for _, c := range codeTable {
		got, ok := listed[c.Code]
		switch {
		case !ok:
			t.Errorf("code %s (exit %d) is missing from 'majlis help exit-codes'", c.Code, c.Exit)
		case got != c.Exit:
			t.Errorf("code %s is listed under exit %d, but exits %d", c.Code, got, c.Exit)
		}
		delete(listed, c.Code)
	}
	for code := range listed {
		t.Errorf("'majlis help exit-codes' lists %s, which is not in the code table", code)
	}
}

// The error-code sections of docs/cli.md (the command line's hints) and
// docs/MCP.md (the server's) are generated from the table; run `go test
// ./cmd/majlis -run TestDocsListEveryCode -update` after changing it.
func TestDocsListEveryCode(t *testing.T) {
	t.Parallel()
	for doc, s := range map[string]surface{"cli.md": surfaceCLI, "MCP.md": surfaceAPI} {
		path := filepath.Join("..", "..", "docs", doc)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(raw)
		begin, end := strings.Index(doc, docsCodesBegin), strings.Index(doc, docsCodesEnd)
		if begin < 0 || end < begin {
			t.Errorf("%s has no generated error-code section (%s ... %s)", path, docsCodesBegin, docsCodesEnd)
			continue
		}
		got := doc[begin : end+len(docsCodesEnd)]
		want := docsCodesSection(s)
		if got == want {
			continue
		}
		if *update {
			if err := os.WriteFile(path, []byte(doc[:begin]+want+doc[end+len(docsCodesEnd):]), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s's error codes differ from the code table; run 'go test ./cmd/majlis -run TestDocsListEveryCode -update' (-docs +table):\n%s",
			path, cmp.Diff(got, want))
	}
}

// A hint names what the user can do; the table fills in its facts.
func TestCLIHints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code    string
		details map[string]any
		want    string
	}{
		{"unconfirmed", map[string]any{"op": "reclaim", "binding": "T-1"}, "run 'majlis workspace reclaim T-1 --preview', then --confirm DIGEST (or --yes to skip the comparison)"},
		{"unconfirmed", map[string]any{"op": "repair"}, "run 'majlis doctor --repair --preview', then --confirm DIGEST (or --yes)"},
		{"invalid_argument", map[string]any{"op": "check", "argument": "holder"}, "pass --holder NAME, or set MAJLIS_HOLDER"},
		{"invalid_argument", map[string]any{"op": "acquire", "argument": "holder"}, "pass --holder NAME"},
		{"invalid_argument", map[string]any{"op": "acquire"}, ""},
		{"workspace_live", map[string]any{"holder": "agent", "lease": "L-1"},
			"its holder releases them with 'majlis lease release --holder agent' and the lease token printed when they were granted (--token-file F or MAJLIS_LEASE_TOKEN), or with --force; a quarantined one whose writer has stopped: 'majlis lease resolve L-1 --writer-stopped'"},
		{"trash_failed", map[string]any{"binding": "T-2", "resumable": true}, "retry 'majlis workspace reclaim T-2' with the same --request-id; it finishes the deletion"},
		{"trash_failed", map[string]any{"binding": "T-2"}, ""},
		{"admission_failed", map[string]any{"resumable": true}, "retry with the same --request-id: it resumes"},
		{"token_required", map[string]any{"owner_pid": 42}, "supply the token printed when it was granted (--token-file F or MAJLIS_LEASE_TOKEN), run it from the lease's owner process (pid 42), or pass --force (recorded in the event log and shown by 'majlis lease list')"},
		{"not_found", map[string]any{"not_found": "workspace"}, "'majlis workspace list' shows the workspaces there are"},
		{"recoverable", map[string]any{}, "release it ('majlis lease release --holder HOLDER LEASE': no token is needed once its owner is dead), then retry"},
	} {
		if got, _ := cliHint(tc.code, tc.details); got != tc.want {
			t.Errorf("cliHint(%s, %v):\n got %q\nwant %q", tc.code, tc.details, got, tc.want)
		}
	}
}

// The library says what happened and what can be done in words; only the
// command line names its commands and flags (docs/design.md). A hint
// string of provider or admission that names one fails here.
func TestLibraryHintsNameNoFlags(t *testing.T) {
	t.Parallel()
	flagOrCommand := regexp.MustCompile(`--[a-z]|'majlis [a-z]|majlis (init|workspace|lease|doctor|policy|check|begin|server) `)
	gitCommand := regexp.MustCompile(`git [a-z][^'"]*`) // git's own flags are the user's to type
	for _, pkg := range []string{"provider", "admission"} {
		files, _ := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(raw), "\n") {
				if strings.Contains(line, "Hint") && flagOrCommand.MatchString(gitCommand.ReplaceAllString(line, "")) {
					t.Errorf("%s:%d: a library hint names a command or flag: %s", f, i+1, strings.TrimSpace(line))
				}
			}
		}
	}
}

// Every hint speaks its surface's words: the command line's names its
// commands and flags, the server's (HTTP API and MCP tools) its request
// fields and operations, never a flag, an environment variable or a
// majlis command line. Each row is walked with facts that select it.
func TestHintsSpeakEachSurface(t *testing.T) {
	t.Parallel()
	cliOnly := regexp.MustCompile(`--[a-z]|'majlis |MAJLIS_|\$MAJLIS`)
	for _, c := range codeTable {
		// The meaning is both surfaces' (docs/cli.md and docs/MCP.md).
		if m := cliOnly.FindString(c.Meaning); m != "" {
			t.Errorf("%s: the meaning names %q of the command line: %q", c.Code, m, c.Meaning)
		}
		for i, h := range c.Hints {
			name := fmt.Sprintf("%s hint %d (%s)", c.Code, i, h.When)
			if h.API == "" {
				t.Errorf("%s has no API text: write the server's words, or noAPI when only the command line meets it", name)
				continue
			}
			if strings.Contains(h.Text, "{tool:") {
				t.Errorf("%s: the command line's text names a tool: %q", name, h.Text)
			}
			if h.API == noAPI {
				continue
			}
			facts := map[string]any{}
			for _, cond := range strings.Fields(h.When) {
				k, v, eq := strings.Cut(cond, "=")
				if !eq {
					v = "x"
				}
				facts[k] = v
			}
			got, _ := hintOn(surfaceAPI, c.Code, facts)
			if got != fillHint(h.API, hintFacts(facts)) {
				t.Errorf("%s: the facts %v select %q, not this row", name, facts, got)
			}
			for _, s := range []server.Surface{server.SurfaceHTTP, server.SurfaceMCP} {
				r := server.Refusal{Details: map[string]any{"hint": got, "binding": "T-1", "lease": "L-0123456789abcdef"}}.In(s)
				text := r.Hint()
				if m := cliOnly.FindString(text); m != "" {
					t.Errorf("%s on surface %d names %q of the command line: %q", name, s, m, text)
				}
				if strings.Contains(text, "{tool:") {
					t.Errorf("%s on surface %d leaves an operation unwritten: %q", name, s, text)
				}
			}
			for _, m := range regexp.MustCompile(`\{tool:([a-z_]+)\}`).FindAllStringSubmatch(h.API, -1) {
				if server.ToolRoute(m[1]) == "" {
					t.Errorf("%s names {tool:%s}, which the server does not have", name, m[1])
				}
			}
		}
	}
	// The hints made outside the table.
	be := &provider.BeginError{Task: "T-1", RequestID: "begin-1", Err: errors.New("held")}
	for _, ports := range []bool{false, true} {
		be.Ports = ports
		for _, s := range []server.Surface{server.SurfaceHTTP, server.SurfaceMCP} {
			text := server.Refusal{Details: map[string]any{"hint": beginHint(surfaceAPI, be)}}.In(s).Hint()
			if m := cliOnly.FindString(text); m != "" || strings.Contains(text, "{tool:") {
				t.Errorf("begin hint (ports %v) on surface %d: %q", ports, s, text)
			}
		}
	}
	if got, _ := hintOn(surfaceAPI, "admission_failed", map[string]any{"resumable": true}); got != "retry with the same request_id: it resumes" {
		t.Errorf("resumable on the API: %q", got)
	}
}

// The server's hints name operations as each surface does: the tool over
// MCP, the route with the binding over HTTP.
func TestAPIHints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code      string
		details   map[string]any
		mcp, http string
	}{
		{"unconfirmed", map[string]any{"op": "reclaim", "binding": "T-1"},
			"preview it (workspace_reclaim_preview), check what it would do, and send its digest as confirm (workspace_reclaim)",
			"preview it (POST /api/v1/workspaces/T-1/reclaim/preview), check what it would do, and send its digest as confirm (POST /api/v1/workspaces/T-1/reclaim)"},
		{"token_required", map[string]any{"op": "renew"},
			"send the token returned when the leases were granted, or force: true (recorded in the event log and shown by lease_list)",
			"send the token returned when the leases were granted, or force: true (recorded in the event log and shown by GET /api/v1/leases)"},
		{"invalid_argument", map[string]any{"op": "acquire", "argument": "holder"}, "send holder: who holds the leases", "send holder: who holds the leases"},
		{"preview_stale", map[string]any{"op": "gc"}, "", ""}, // only the command line collects garbage
		{"quarantined", map[string]any{"op": "acquire", "holder": "agent", "lease": "L-1"},
			"its holder can release it (lease_release with holder agent and ids [L-1]); once its writer has stopped, lease_resolve with id L-1 and writer_stopped: true lifts the quarantine",
			"its holder can release it (POST /api/v1/leases/release with holder agent and ids [L-1]); once its writer has stopped, POST /api/v1/leases/L-1/resolve with id L-1 and writer_stopped: true lifts the quarantine"},
	} {
		h, _ := hintOn(surfaceAPI, tc.code, tc.details)
		r := server.Refusal{Details: map[string]any{"hint": h}}
		for k, v := range tc.details {
			r.Details[k] = v
		}
		if h == "" {
			delete(r.Details, "hint")
		}
		if got := r.In(server.SurfaceMCP).Hint(); got != tc.mcp {
			t.Errorf("%s over MCP:\n got %q\nwant %q", tc.code, got, tc.mcp)
		}
		if got := r.In(server.SurfaceHTTP).Hint(); got != tc.http {
			t.Errorf("%s over HTTP:\n got %q\nwant %q", tc.code, got, tc.http)
		}
	}
}

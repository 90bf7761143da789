package wire

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The folders whose sentinels never reach a script as a code of the
// table: the command line and the client name failures of their own, the
// fixtures are for tests.
var notLibrary = map[string]bool{"cmd": true, "client": true, "fixtures": true, "wire": true, "testdata": true, "scripts": true, "docs": true}

// Every exported sentinel (var ErrX = ...) of the library's packages
// declares its code (wire.Sentinel("code", "msg")), and the code is in
// the table; every code of the table is declared by some sentinel or
// error type (ErrorCode), so that none is unreachable.
func TestEverySentinelHasACode(t *testing.T) {
	t.Parallel()
	declared := map[string][]string{} // code -> where
	sentinels := 0
	root := ".."
	errorCode := regexp.MustCompile(`ErrorCode\(\) string\s*\{\s*return "([a-z_]+)"`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel, _ := filepath.Rel(root, path); notLibrary[rel] || strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
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
					code, ok := sentinelCode(vs.Values[i])
					if !ok {
						t.Errorf("%s: %s is not wire.Sentinel(\"code\", \"message\"): declare its code", path, name.Name)
						continue
					}
					if _, ok := codeByName[code]; !ok {
						t.Errorf("%s: %s has code %q, which the table does not have", path, name.Name, code)
					}
					declared[code] = append(declared[code], path+": "+name.Name)
					sentinels++
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if sentinels < 60 {
		t.Fatalf("found only %d sentinels: the source scan is broken", sentinels)
	}
	// Error types that stand for a code, in any non-test file (the
	// command line's too).
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range errorCode.FindAllStringSubmatch(string(raw), -1) {
			declared[m[1]] = append(declared[m[1]], path)
		}
		return nil
	})
	for _, c := range codes {
		if len(declared[c.Code]) == 0 {
			t.Errorf("code %s is declared by no sentinel and no error type: nothing can have it", c.Code)
		}
	}
}

// sentinelCode is the code of wire.Sentinel("code", "msg").
func sentinelCode(e ast.Expr) (string, bool) {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 2 {
		return "", false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Sentinel" {
		return "", false
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "wire" {
		return "", false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok {
		return "", false
	}
	if _, ok := call.Args[1].(*ast.BasicLit); !ok {
		return "", false
	}
	code, err := strconv.Unquote(lit.Value)
	return code, err == nil
}

// No code is listed twice, every code is snake_case with a meaning, and a
// hint's conditions are well formed; the fallbacks come last.
func TestCodeTableIsWellFormed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	cond := regexp.MustCompile(`^[a-z_]+(=[a-z_]+)?$`)
	fallbacks := false
	for _, c := range codes {
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
		if c.Exit < ExitError || c.Exit > ExitNotFound {
			t.Errorf("code %s exits %d", c.Code, c.Exit)
		}
		if fallbacks && !c.Fallback {
			t.Errorf("code %s follows a fallback code: fallbacks come last", c.Code)
		}
		fallbacks = fallbacks || c.Fallback
		for _, h := range c.Hints {
			for _, w := range strings.Fields(h.When) {
				if !cond.MatchString(w) {
					t.Errorf("code %s: hint condition %q is not KEY or KEY=VALUE", c.Code, w)
				}
			}
		}
	}
	if c, ok := Lookup("internal"); !ok || !c.Fallback {
		t.Error("internal is not a fallback code of the table")
	}
}

// A sentinel of a code the table does not have is a bug found at once.
func TestSentinelOfAnUnknownCodePanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("Sentinel accepted a code the table does not have")
		}
	}()
	_ = Sentinel("no_such_code", "test: no such code")
}

// A hint names what the user can do; the table fills in its facts.
func TestCLIHints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code    string
		details map[string]any
		want    string
	}{
		{"unconfirmed", map[string]any{"op": "reclaim", "binding": "T-1"}, "run 'majlis workspace reclaim T-1 --preview', then --confirm DIGEST"},
		{"unconfirmed", map[string]any{"op": "repair"}, "run 'majlis doctor --repair --preview', then --confirm DIGEST"},
		{"invalid_argument", map[string]any{"op": "check", "argument": "holder"}, "pass --holder NAME, or set MAJLIS_HOLDER"},
		{"invalid_argument", map[string]any{"op": "acquire", "argument": "holder"}, "pass --holder NAME"},
		{"invalid_argument", map[string]any{"op": "acquire"}, ""},
		{"workspace_live", map[string]any{"holder": "agent", "lease": "L-1"},
			"its holder releases them with 'majlis lease release --holder agent' and the lease token printed when they were granted (--token-file F, MAJLIS_LEASE_TOKEN, or its file in MAJLIS_TOKEN_DIR); a quarantined one whose writer has stopped: 'majlis lease resolve L-1 --writer-stopped' (no token needed)"},
		{"trash_failed", map[string]any{"binding": "T-2", "resumable": true}, "retry 'majlis workspace reclaim T-2' with the same --request-id; it finishes the deletion"},
		{"trash_failed", map[string]any{"binding": "T-2"}, ""},
		{"admission_failed", map[string]any{"resumable": true}, "retry with the same --request-id: it resumes"},
		{"token_required", map[string]any{"owner_pid": 42}, "supply the token the leases were granted with (--token-file F, MAJLIS_LEASE_TOKEN, or its file in MAJLIS_TOKEN_DIR), or run it from the lease's owner process (pid 42); once that process is dead, releasing needs no token"},
		{"token_required", map[string]any{"owner_pid": 42, "owner_dead": true, "holder": "T-1", "lease": "L-1"}, "its owner process 42 is proven dead: release it, no token is needed ('majlis lease release --holder T-1 L-1'), or reclaim its workspace ('majlis workspace reclaim --dead --preview')"},
		{"not_found", map[string]any{"not_found": "workspace"}, "'majlis workspace list' shows the workspaces there are"},
		{"recoverable", map[string]any{}, "release it ('majlis lease release --holder HOLDER LEASE': no token is needed once its owner is dead), then retry"},
	} {
		if got, _ := HintFor(SurfaceCLI, tc.code, tc.details); got != tc.want {
			t.Errorf("HintFor(CLI, %s, %v):\n got %q\nwant %q", tc.code, tc.details, got, tc.want)
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
	for _, c := range codes {
		// The meaning is both surfaces' (docs/cli.md and docs/MCP.md).
		if m := cliOnly.FindString(c.Meaning); m != "" {
			t.Errorf("%s: the meaning names %q of the command line: %q", c.Code, m, c.Meaning)
		}
		for i, h := range c.Hints {
			name := fmt.Sprintf("%s hint %d (%s)", c.Code, i, h.When)
			if h.API == "" {
				t.Errorf("%s has no API text: write the server's words, or NoAPI when only the command line meets it", name)
				continue
			}
			if strings.Contains(h.Text, "{tool:") {
				t.Errorf("%s: the command line's text names a tool: %q", name, h.Text)
			}
			if h.API == NoAPI {
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
			got, _ := HintFor(SurfaceHTTP, c.Code, facts)
			if got != FillHint(h.API, facts) {
				t.Errorf("%s: the facts %v select %q, not this row", name, facts, got)
			}
			for _, s := range []Surface{SurfaceHTTP, SurfaceMCP} {
				r := Refusal{Details: map[string]any{"hint": got, "binding": "T-1", "lease": "L-0123456789abcdef"}}.In(s)
				text := r.Hint()
				if m := cliOnly.FindString(text); m != "" {
					t.Errorf("%s on surface %d names %q of the command line: %q", name, s, m, text)
				}
				if strings.Contains(text, "{tool:") {
					t.Errorf("%s on surface %d leaves an operation unwritten: %q", name, s, text)
				}
			}
			for _, m := range toolRef.FindAllStringSubmatch(h.API, -1) {
				if ToolRoute(m[1]) == "" {
					t.Errorf("%s names {tool:%s}, which the server does not have", name, m[1])
				}
			}
		}
	}
	// The hints made outside the table.
	for _, ports := range []bool{false, true} {
		for _, s := range []Surface{SurfaceHTTP, SurfaceMCP} {
			text := Refusal{Details: map[string]any{"hint": beginHint(s, testBegun{"T-1", "begin-1", ports})}}.In(s).Hint()
			if m := cliOnly.FindString(text); m != "" || strings.Contains(text, "{tool:") {
				t.Errorf("begin hint (ports %v) on surface %d: %q", ports, s, text)
			}
		}
	}
	if got, _ := HintFor(SurfaceMCP, "admission_failed", map[string]any{"resumable": true}); got != "retry with the same request_id: it resumes" {
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
		{"token_required", map[string]any{"op": "renew", "owner_dead": true, "owner_pid": 7, "holder": "T-1", "lease": "L-1"},
			"its owner process 7 is proven dead: release it, no token is needed (lease_release with holder T-1 and ids [L-1]), or reclaim its workspace (workspace_reclaim_preview, then workspace_reclaim with that digest)",
			"its owner process 7 is proven dead: release it, no token is needed (POST /api/v1/leases/release with holder T-1 and ids [L-1]), or reclaim its workspace (POST /api/v1/workspaces/{binding}/reclaim/preview, then POST /api/v1/workspaces/{binding}/reclaim with that digest)"},
		{"invalid_argument", map[string]any{"op": "acquire", "argument": "holder"}, "send holder: who holds the leases", "send holder: who holds the leases"},
		{"preview_stale", map[string]any{"op": "gc"}, "", ""}, // only the command line collects garbage
		{"quarantined", map[string]any{"op": "acquire", "holder": "agent", "lease": "L-1"},
			"its holder can release it (lease_release with holder agent and ids [L-1]); once its writer has stopped, lease_resolve with id L-1 and writer_stopped: true lifts the quarantine",
			"its holder can release it (POST /api/v1/leases/release with holder agent and ids [L-1]); once its writer has stopped, POST /api/v1/leases/L-1/resolve with id L-1 and writer_stopped: true lifts the quarantine"},
	} {
		h, _ := HintFor(SurfaceMCP, tc.code, tc.details)
		r := Refusal{Details: map[string]any{"hint": h}}
		for k, v := range tc.details {
			r.Details[k] = v
		}
		if h == "" {
			delete(r.Details, "hint")
		}
		if got := r.In(SurfaceMCP).Hint(); got != tc.mcp {
			t.Errorf("%s over MCP:\n got %q\nwant %q", tc.code, got, tc.mcp)
		}
		if got := r.In(SurfaceHTTP).Hint(); got != tc.http {
			t.Errorf("%s over HTTP:\n got %q\nwant %q", tc.code, got, tc.http)
		}
	}
}

// A route's operation without a binding in the details keeps its
// placeholder; the command line's words are left as they are.
func TestRefusalWords(t *testing.T) {
	t.Parallel()
	r := Refusal{Message: "no; preview ({tool:workspace_reclaim_preview})", Details: map[string]any{"hint": "preview ({tool:workspace_reclaim_preview}) and list ({tool:lease_list})"}}
	if got := r.In(SurfaceHTTP).Hint(); got != "preview (POST /api/v1/workspaces/{binding}/reclaim/preview) and list (GET /api/v1/leases)" {
		t.Errorf("over HTTP: %q", got)
	}
	if got := r.In(SurfaceMCP); got.Hint() != "preview (workspace_reclaim_preview) and list (lease_list)" || got.Message != "no; preview (workspace_reclaim_preview)" {
		t.Errorf("over MCP: %+v", got)
	}
	if got := r.In(SurfaceCLI); got.Hint() != r.Details["hint"] || got.Message != r.Message {
		t.Errorf("on the command line: %+v", got)
	}
}

// No hint teaches a way around a safety check when a safe one exists
// (issue 27): none names --yes or --force, or force: true on the server.
// hook_exists is the exception: its --force keeps the user's hook
// (moved aside, run first), overriding nothing.
func TestHintsNameNoBypass(t *testing.T) {
	t.Parallel()
	bypass := regexp.MustCompile(`--yes\b|--force\b|force: true`)
	for _, c := range Codes() {
		if c.Code == "hook_exists" {
			continue
		}
		for _, h := range c.Hints {
			for _, text := range []string{h.Text, h.API} {
				if m := bypass.FindString(text); m != "" {
					t.Errorf("%s (when %q): the hint names %s: %q", c.Code, h.When, m, text)
				}
			}
		}
	}
	for _, ports := range []bool{false, true} {
		for _, s := range []Surface{SurfaceCLI, SurfaceHTTP} {
			if text := beginHint(s, testBegun{task: "G-2", requestID: "begin-1", ports: ports}); bypass.MatchString(text) ||
				s == SurfaceCLI && !strings.Contains(text, "'majlis workspace reclaim G-2 --preview', then --confirm DIGEST") {
				t.Errorf("begin's hint (ports %v, surface %v): %q; want the preview, then --confirm DIGEST", ports, s, text)
			}
		}
	}
}

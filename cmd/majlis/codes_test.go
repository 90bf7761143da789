package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/cmd/majlis/internal/githook"
	"github.com/majlis-dev/majlis/wire"
)

// -update rewrites what the tests generate: the golden JSON envelopes and
// the error-code sections of docs/cli.md and docs/MCP.md.
var update = flag.Bool("update", false, "rewrite testdata/golden and the generated sections of docs/cli.md and docs/MCP.md")

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
	for _, c := range wire.Codes() {
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
	for doc, s := range map[string]wire.Surface{"cli.md": wire.SurfaceCLI, "MCP.md": wire.SurfaceMCP} {
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

// The table's hints name the command line's own names as the command
// line defines them.
func TestHintsNameTheCommandLine(t *testing.T) {
	t.Parallel()
	for code, name := range map[string]string{"token_required": admission.TokenEnv, "workspace_live": admission.TokenEnv, "hook_exists": githook.HookBackupName} {
		c, ok := wire.Lookup(code)
		named := false
		for _, h := range c.Hints {
			named = named || strings.Contains(h.Text, name)
		}
		if !ok || !named {
			t.Errorf("no hint of %s names %s", code, name)
		}
	}
}

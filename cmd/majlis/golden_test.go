package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/spf13/cobra"
)

// The JSON envelope of every command (and of a failure) is pinned by a
// golden file, testdata/golden/NAME.json: the scripts call `golden NAME`
// after a command with --json. The file holds the object with its keys
// sorted and what changes from run to run normalised (paths under $WORK,
// times, ids, digests, commits, pids); -update rewrites it.
var goldenDir = filepath.Join("testdata", "golden")

// cmdGolden compares the last command's stdout, normalised, with
// testdata/golden/NAME.json.
func cmdGolden(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: golden NAME")
	}
	if err := checkGolden(args[0], ts.ReadFile("stdout"), ts.Getenv("WORK")); err != nil {
		ts.Fatalf("%v", err)
	}
}

// checkGolden compares stdout, normalised (work is the directory that
// becomes $WORK), with testdata/golden/NAME.json, or writes it with -update.
func checkGolden(name, stdout, work string) error {
	var v any
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return fmt.Errorf("golden %s: stdout is not one JSON object (%v)", name, err)
	}
	if key := nullArray(v); key != "" {
		return fmt.Errorf("golden %s: %q is null: arrays are always present in a --json result (docs/cli.md), empty or not", name, key)
	}
	got := goldenText(normalise(v, "", goldenReplacer(work)))
	path := filepath.Join(goldenDir, name+".json")
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			return err
		}
		return os.WriteFile(path, []byte(got), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("golden %s: %v (run 'go test ./cmd/majlis -run TestScripts -update' to write it)", name, err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		return fmt.Errorf("golden %s: the JSON envelope changed; keys are the contract: only ever add one, then run with -update (-golden +now):\n%s", name, diff)
	}
	return nil
}

func goldenText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return b.String()
}

// volatileKeys are values that differ from run to run whatever their
// type: process identities, build facts.
var volatileKeys = map[string]bool{
	"pid": true, "owner_pid": true, "start_time": true, "boot_id": true, "machine_id": true,
	"hostname": true, "pid_namespace": true, "go": true, "platform": true, "commit": true,
	"address": true, "port": true, "nonce": true, "hmac": true, "token_sha256": true, "panic": true,
	"inode": true, "dev": true, "ports": true, "token": true, "version": true, "modified": true, "majlis": true,
}

// normalise replaces what changes between runs in v; key is the key v is
// the value of.
func normalise(v any, key string, r *strings.Replacer) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalise(e, k, r)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = normalise(e, key, r)
		}
		return v
	case nil:
		return v
	}
	if volatileKeys[key] {
		switch v.(type) {
		case json.Number:
			return 0
		case bool:
			return false
		default:
			return strings.ToUpper(key)
		}
	}
	if s, ok := v.(string); ok {
		s = r.Replace(s)
		for _, p := range goldenPatterns {
			s = p.re.ReplaceAllString(s, p.with)
		}
		return s
	}
	return v
}

func goldenReplacer(work string) *strings.Replacer {
	pairs := []string{}
	if work != "" {
		pairs = append(pairs, work, "$WORK")
		if phys, err := filepath.EvalSymlinks(work); err == nil && phys != work {
			pairs = append(pairs, phys, "$WORK")
		}
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		pairs = append(pairs, h, "HOST")
	}
	return strings.NewReplacer(pairs...)
}

var goldenPatterns = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "TIME"},
	{regexp.MustCompile(`sha256:[0-9a-f]{64}`), "sha256:DIGEST"},
	{regexp.MustCompile(`^(refs/majlis/deleted/.+/)\d+$`), "${1}UNIXTIME"},
	{regexp.MustCompile(`\b[0-9a-f]{40}\b`), "COMMIT"},
	{regexp.MustCompile(`\bL-[0-9a-f]{16}\b`), "L-ID"},
	{regexp.MustCompile(`\bmlt_[0-9a-f]+`), "mlt_TOKEN"},
	{regexp.MustCompile(`\b(begin|req)-[0-9a-f]{16}\b`), "$1-ID"},
	{regexp.MustCompile(`\b[0-9a-f]{32}\b`), "HEX32"},
	{regexp.MustCompile(`\b[0-9a-f]{16}\b`), "HEX16"},
	{regexp.MustCompile(`\b[0-9a-f]{12}\b`), "HEX12"},
	{regexp.MustCompile(`\b127\.0\.0\.1:\d+`), "127.0.0.1:PORT"},
	{regexp.MustCompile(`\b(pid|process) \d+`), "$1 PID"},
	{regexp.MustCompile(`\d+(\.\d+)?(ms|µs|s)\b`), "DURATION"},
}

// Every command that prints JSON has a golden file of its result, and the
// failure envelope has some: named after the command path
// (workspace_reclaim_preview.json starts with workspace_reclaim).
func TestGoldenCoversEveryCommand(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	sort.Strings(names)
	has := func(prefix string) bool {
		for _, n := range names {
			if n == prefix || strings.HasPrefix(n, prefix+"_") {
				return true
			}
		}
		return false
	}
	root := newRootCmd(&globalOptions{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() || c.Hidden || c == root || c.HasSubCommands() {
			return
		}
		path := strings.TrimPrefix(c.CommandPath(), "majlis ")
		if path == "help" || strings.HasPrefix(path, "completion") || path == "exit-codes" || path == "mcp" {
			return // no JSON: help text, shell scripts, MCP messages
		}
		if name := strings.ReplaceAll(path, " ", "_"); !has(name) {
			t.Errorf("%s: no golden file of its JSON result (testdata/golden/%s.json; a script calls 'golden %s' after it)", c.CommandPath(), name, name)
		}
	}
	walk(root)
	if !has("error") {
		t.Error("no golden file of the error envelope (testdata/golden/error_*.json)")
	}
}

// workspace recover's result needs a reclaim that died holding its
// reservation: the failpoints build crashes one, and recover retires the
// reservation once it has expired (a one-second TTL) and its owner is
// proven dead.
func TestGoldenRecover(t *testing.T) {
	t.Parallel()
	bin := failpointsBinary(t)
	work := fixtures.TempDir(t)
	repo := fixtures.NewRepoAt(t, filepath.Join(work, "app"))
	env := []string{admission.HostLedgerEnv + "=" + filepath.Join(work, "host.db"), "MAJLIS_RESERVATION_TTL=1s"}
	for _, args := range [][]string{{"init"}, {"workspace", "allocate", "T-1"}} {
		if r := majlisRun(t, bin, repo.Dir, env, args...); r.exit != 0 {
			t.Fatal(r)
		}
	}
	crash := append(env, "MAJLIS_FAILPOINTS=reclaim/reserved=crash")
	if r := majlisRun(t, bin, repo.Dir, crash, "workspace", "reclaim", "T-1", "--yes", "--json"); !r.killed {
		t.Fatalf("the reclaim was to crash with its reservation held\n%s", r)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := majlisRun(t, bin, repo.Dir, env, "workspace", "recover", "T-1", "--json")
		if r.exit == 0 {
			if err := checkGolden("workspace_recover", r.stdout, work); err != nil {
				t.Fatal(err)
			}
			return
		}
		if code, _ := r.jsonError(t); code != "not_expired" || time.Now().After(deadline) {
			t.Fatalf("recover after the crash\n%s", r)
		}
		time.Sleep(100 * time.Millisecond) // the reservation expires by the clock
	}
}

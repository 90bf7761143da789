package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// The README's shell blocks run as printed: TestREADME reads README.md,
// runs every command of every ```sh block in order, in one bash, in a
// fresh HOME, in a repository named app (with a branch fix-login, as the
// tour says), and checks each command's exit status (0, or the "exit N"
// its comment names) and its key output (readmeWant). A block preceded by
// a line "<!-- readme-test: skip (why) -->" is not run (make install, the
// completion lines). DIGEST in a command stands for the digest that the
// output before it printed last, as a reader copies it.
//
// readmeWant lists the runnable lines in README order: a line added,
// changed or removed there fails the test until its expectation is
// written here, so the README and majlis never drift apart.
var readmeWant = []struct {
	cmd  string // the command, as printed (without its comment)
	out  string // a regexp its stdout and stderr must match ("" for none)
	then string // shell run right after it, its output added to the command's (the effect of an eval)
}{
	{cmd: "majlis init", out: `state +\.git/majlis`},
	{cmd: "majlis workspace allocate T-14 --json", out: `"branch": "majlis/T-14"`},
	{cmd: "majlis workspace allocate T-9 --checkout fix-login", out: `allocated T-9 .*\(branch fix-login`},
	{cmd: "echo 'a draft' > ../app.workspaces/T-14/notes.md"},
	{cmd: "majlis workspace show T-14", out: `1 untracked`},
	{cmd: "majlis workspace salvage T-14", out: `refs/majlis/salvage/T-14/1`},
	{cmd: "majlis workspace release T-14", out: `released T-14`},
	{cmd: "majlis workspace list --all", out: `T-14 +released .* yes`},
	{cmd: "majlis workspace list --status", out: `T-14 +released .*1 files`},
	{cmd: "majlis workspace reclaim T-14 --preview", out: `digest +sha256:`},
	{cmd: "majlis workspace reclaim T-14 --confirm DIGEST", out: `reclaimed T-14: .*move`},
	{cmd: "majlis workspace restore T-14 --from-trash", out: `restored T-14 .* from its trash folder`},
	{cmd: "majlis end T-14 --reclaim", out: `(?s)not reclaimed: .*holds work.*'majlis workspace reclaim T-14 --confirm\s+sha256:[0-9a-f]{64}'`},
	{cmd: "majlis workspace reclaim T-14 --preview", out: `digest +sha256:`},
	{cmd: "majlis workspace reclaim T-14 --confirm DIGEST", out: `salvaged to refs/majlis/salvage/T-14/\d`},
	{cmd: "majlis workspace restore T-14", out: `restored T-14`},
	{cmd: "majlis workspace recover T-14", out: `nothing to recover: no reclaim of T-14 is under way or crashed`},
	{cmd: "majlis gc --preview", out: `digest +sha256:`},
	{cmd: "majlis doctor", out: `no problems found`},
	{cmd: "majlis help exit-codes", out: `token_in_use`},

	{cmd: "export MAJLIS_TOKEN_DIR=~/.local/state/majlis/tokens", then: `test -d "$MAJLIS_TOKEN_DIR" || echo no folder yet`, out: `no folder yet`},
	{cmd: "majlis begin T-21 --paths 'src/auth/**'", out: `began T-21`, then: `stat -c '%a %n' "$MAJLIS_TOKEN_DIR"/T-21.token`},
	{cmd: "majlis begin T-22 --paths 'src/auth/session/**'", out: `(?s)warning: intent:src/auth/session/\*\* overlaps intent:src/auth/\*\* .*of T-21.*began T-22`},
	{cmd: "majlis lease acquire --holder T-21 host:port:3000", out: `granted 1 lease to T-21`},
	{cmd: "majlis lease acquire --holder T-22 host:port:3000", out: `held by T-21`},
	{cmd: `eval "$(majlis lease acquire --holder T-22 host:port:auto --env)"`, then: `echo "port $MAJLIS_PORT"`, out: `^port \d+\s*$`},
	{cmd: "majlis lease list", out: `host:port:3000 +T-21`},
	{cmd: "majlis lease renew --holder T-21", out: `renewed 2 leases of T-21`},
	{cmd: "majlis lease release --holder T-21", out: `released: 2 leases of T-21`},
	{cmd: "majlis end T-22 --reclaim", out: `(?s)ended T-22: released 2 leases.*reclaimed T-22.*\nT-21\.token\s*$`, then: `ls "$MAJLIS_TOKEN_DIR"`},

	{cmd: "sleep 600 & agent=$!"},
	{cmd: "majlis begin T-23 --paths 'docs/**' --owner-pid $agent", out: `began T-23`},
	{cmd: "kill -9 $agent"},
	{cmd: "majlis workspace list", out: `T-23 +active +\d+ exited +1 recoverable +yes`},
	{cmd: "majlis workspace reclaim --dead --preview", out: `(?s)== T-23.*recover +lease L-`},
	{cmd: "majlis workspace reclaim --dead --confirm DIGEST", out: `(?s)recovered lease L-.* of T-23.*1 reclaimed, 0 not`},

	{cmd: "majlis server attach --json", out: `"address"`},
	{cmd: "majlis server status", out: `running`},
	{cmd: "majlis server stop", out: `stopped`},
}

// A readmeLine is one runnable line of the README.
type readmeLine struct {
	cmd, comment string
	line         int
}

var (
	readmeSkip  = regexp.MustCompile(`^<!-- readme-test: skip \(.+\) -->$`)
	readmeExit  = regexp.MustCompile(`\bexit (\d)\b`)
	readmeShell = regexp.MustCompile(`^\x60\x60\x60(sh|bash)\s*$`)
)

// readmeLines returns the commands of README.md's shell blocks that are
// not marked skipped, with their comments.
func readmeLines(t *testing.T, path string) []readmeLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []readmeLine
	sc := bufio.NewScanner(f)
	n, in, skip, prev := 0, false, false, ""
	for sc.Scan() {
		n++
		text := sc.Text()
		switch {
		case !in && readmeShell.MatchString(text):
			in, skip = true, readmeSkip.MatchString(strings.TrimSpace(prev))
		case in && text == "```":
			in = false
		case in && !skip && strings.TrimSpace(text) != "":
			cmd, comment := splitComment(text)
			out = append(out, readmeLine{cmd: cmd, comment: comment, line: n})
		}
		prev = text
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// splitComment splits a line into its command and its trailing comment
// (a # after a space, outside quotes).
func splitComment(line string) (cmd, comment string) {
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && i >= 1 && line[i-1] == ' ':
			return strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])
		}
	}
	return strings.TrimSpace(line), ""
}

func TestREADME(t *testing.T) {
	t.Parallel()
	lines := readmeLines(t, filepath.Join("..", "..", "README.md"))
	for i := 0; i < max(len(lines), len(readmeWant)); i++ {
		switch {
		case i >= len(lines):
			t.Fatalf("README.md has no line for %q: remove it from readmeWant, or put it back in README.md", readmeWant[i].cmd)
		case i >= len(readmeWant):
			t.Fatalf("README.md:%d: %q is not in readmeWant: write what it must do there", lines[i].line, lines[i].cmd)
		case lines[i].cmd != readmeWant[i].cmd:
			t.Fatalf("README.md:%d: %q, where readmeWant has %q: the README and the test must say the same", lines[i].line, lines[i].cmd, readmeWant[i].cmd)
		}
	}

	work := fixtures.TempDir(t)
	home, bin := filepath.Join(work, "home"), filepath.Join(work, "bin")
	for _, d := range []string{home, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(fixtures.Binary(t), filepath.Join(bin, "majlis")); err != nil {
		t.Fatal(err)
	}
	gitconfig := "[user]\n\tname = readme\n\temail = readme@majlis.invalid\n[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := fixtures.NewRepoAt(t, filepath.Join(work, "app"))
	repo.WriteFiles(map[string]string{"src/auth/login.go": "package auth\n", "src/auth/session/session.go": "package session\n", "docs/index.md": "# docs\n"})
	repo.Commit("the app")
	repo.Git("branch", "fix-login")

	// One bash runs every line; after each, its status goes to a file and
	// the last digest it printed stands for DIGEST from then on.
	outs := filepath.Join(work, "out")
	if err := os.MkdirAll(outs, 0o755); err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	script.WriteString("cd " + strconv.Quote(repo.Dir) + " || exit 99\ndigest=\n")
	for i, l := range lines {
		out := filepath.Join(outs, strconv.Itoa(i))
		cmd := strings.ReplaceAll(l.cmd, "DIGEST", `"$digest"`)
		fmt.Fprintf(&script, "{ %s\n} >%s 2>&1 </dev/null; echo $? >%s.status\n", cmd, out, out)
		if then := readmeWant[i].then; then != "" {
			fmt.Fprintf(&script, "{ %s\n} >>%s 2>&1\n", then, out)
		}
		fmt.Fprintf(&script, "d=$(grep -oE 'sha256:[0-9a-f]{64}' %s | tail -n 1); [ -n \"$d\" ] && digest=$d\n", out)
	}
	script.WriteString("exit 0\n")
	sh := exec.Command("bash", "--noprofile", "--norc")
	sh.Stdin = strings.NewReader(script.String())
	sh.Env = readmeEnv(home, bin)
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t.Cleanup(func() {
		// A server the tour started, and any process it left, end with it.
		stop := exec.Command(filepath.Join(bin, "majlis"), "server", "stop", "--repo", repo.Dir)
		stop.Env = sh.Env
		stop.Run()
		if sh.Process != nil {
			syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
		}
	})
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	for i, l := range lines {
		out, _ := os.ReadFile(filepath.Join(outs, strconv.Itoa(i)))
		status, _ := os.ReadFile(filepath.Join(outs, strconv.Itoa(i)+".status"))
		want := 0
		if m := readmeExit.FindStringSubmatch(l.comment); m != nil {
			want, _ = strconv.Atoi(m[1])
		}
		got, err := strconv.Atoi(strings.TrimSpace(string(status)))
		if err != nil || got != want {
			t.Errorf("README.md:%d: %s\n  exited %s, want %d (its comment: %q); it printed:\n%s", l.line, l.cmd, strings.TrimSpace(string(status)), want, l.comment, out)
			continue
		}
		if re := readmeWant[i].out; re != "" && !regexp.MustCompile("(?m)"+re).Match(out) {
			t.Errorf("README.md:%d: %s\n  printed no match for %s:\n%s", l.line, l.cmd, re, out)
		}
	}
}

// readmeEnv is the environment of a new user: a fresh HOME, majlis on the
// PATH, nothing of the tests' majlis settings.
func readmeEnv(home, bin string) []string {
	env := []string{"HOME=" + home, "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C", "TZ=UTC",
		// Not a new user's: no detached purge may outlive the test.
		"MAJLIS_BACKGROUND_PURGE=0"}
	for _, k := range []string{"GOCOVERDIR", "GORACE", fixtures.BinaryEnv, "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
	"golang.org/x/sys/unix"
)

// openPty opens a pseudo-terminal: the side the test reads and the
// terminal the child writes to.
func openPty(t *testing.T) (master, tty *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		t.Skipf("cannot unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		t.Skipf("cannot name the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Skipf("cannot open the pseudo-terminal: %v", err)
	}
	return master, tty
}

// runOnTerminal runs majlis ARGS with stderr on a terminal and stdout on
// a pipe, and returns both.
func runOnTerminal(t *testing.T, bin, dir string, args ...string) (stdout, stderr string) {
	t.Helper()
	master, tty := openPty(t)
	defer master.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_PROGRESS_DELAY=0") // git's meter at once
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, tty
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(master) // ends with EIO once no one has the terminal open
		read <- string(b)
	}()
	err := cmd.Run()
	tty.Close()
	text := <-read
	if err != nil {
		t.Fatalf("majlis %v: %v\nstdout: %s\nterminal: %q", args, err, out.String(), text)
	}
	return out.String(), text
}

// On a terminal, allocate shows git's own progress meter while it checks
// the workspace out, on stderr only; with --json not at all, unless
// --progress asks for it.
func TestAllocateGitProgressOnTerminal(t *testing.T) {
	t.Parallel()
	bin := failpointsBinary(t)
	repo := fixtures.NewRepo(t)
	for i := range 40 {
		repo.WriteFile(fmt.Sprintf("f%d.txt", i), "x\n")
	}
	repo.Git("add", ".")
	repo.Git("commit", "-q", "-m", "files")
	if r := majlisRun(t, bin, repo.Dir, nil, "init"); r.exit != 0 {
		t.Fatal(r)
	}

	stdout, term := runOnTerminal(t, bin, repo.Dir, "workspace", "allocate", "T-1")
	if !strings.Contains(term, "Updating files: 100%") {
		t.Errorf("no git progress on the terminal: %q", term)
	}
	if strings.Contains(stdout, "Updating files") || !strings.Contains(stdout, "allocated T-1") {
		t.Errorf("stdout: %q; want the result only", stdout)
	}
	for _, word := range []string{"Preparing worktree", "HEAD is now at", "git worktree"} {
		if strings.Contains(term, word) {
			t.Errorf("the terminal shows git's %q: %q", word, term)
		}
	}

	stdout, term = runOnTerminal(t, bin, repo.Dir, "workspace", "allocate", "T-2", "--json")
	if strings.Contains(term, "Updating files") || strings.Contains(stdout, "Updating files") {
		t.Errorf("--json without --progress shows git's progress: terminal %q, stdout %q", term, stdout)
	}

	stdout, term = runOnTerminal(t, bin, repo.Dir, "workspace", "allocate", "T-3", "--json", "--progress")
	if !strings.Contains(term, "Updating files: 100%") || strings.Contains(stdout, "Updating files") {
		t.Errorf("--json --progress: terminal %q, stdout %q; want git's progress on the terminal only", term, stdout)
	}
}

package provider

// Crash and concurrency tests of reclaim. They drive the real majlis binary,
// built once per test binary with the failpoints tag, in real temporary
// repositories: a reclaim killed (SIGKILL) at every reclaim failpoint, two
// reclaims of one binding at once, a reclaim racing eight allocations around
// its target, and dead-owner recovery through the CLI.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/internal/envvar"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/reservation"
)

// crashBinary is the failpoints build of cmd/majlis (fixtures.FailpointsBinary).
func crashBinary(t *testing.T) string { return fixtures.FailpointsBinary(t) }

// A crashRun is one finished run of the majlis binary.
type crashRun struct {
	args   []string
	pid    int
	exit   int  // the exit status; -1 when a signal ended the process
	killed bool // SIGKILL ended it
	stdout string
	stderr string
}

func (r crashRun) String() string {
	how := fmt.Sprintf("exit %d", r.exit)
	if r.exit < 0 {
		how = "killed"
	}
	return fmt.Sprintf("majlis %s: %s\nstdout: %s\nstderr: %s", strings.Join(r.args, " "), how, r.stdout, r.stderr)
}

// errorCode returns the code of a --json error object, or "".
func (r crashRun) errorCode() string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(r.stdout), &e)
	return e.Error.Code
}

// decode decodes the single JSON object of stdout into v.
func (r crashRun) decode(t *testing.T, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, r)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON object\n%s", r)
	}
}

// A crashProc is a running majlis process.
type crashProc struct {
	cmd            *exec.Cmd
	args           []string
	stdout, stderr bytes.Buffer
	waitOnce       sync.Once
	res            crashRun
}

// crashStart starts the binary in dir with extra environment variables.
func crashStart(t *testing.T, bin, dir string, env []string, args ...string) *crashProc {
	t.Helper()
	c := &crashProc{cmd: exec.Command(bin, args...), args: args}
	c.cmd.Dir = dir
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		c.wait()
	})
	return c
}

// wait waits for the process to end (reaping it, so that a dead owner is
// provably dead) and reports how it ended.
func (c *crashProc) wait() crashRun {
	c.waitOnce.Do(func() {
		c.cmd.Wait()
		st := c.cmd.ProcessState
		c.res = crashRun{args: c.args, pid: c.cmd.Process.Pid, exit: st.ExitCode(), stdout: c.stdout.String(), stderr: c.stderr.String()}
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			c.res.killed = true
		}
	})
	return c.res
}

func crashExec(t *testing.T, bin, dir string, env []string, args ...string) crashRun {
	t.Helper()
	return crashStart(t, bin, dir, env, args...).wait()
}

// crashWaitFor polls cond until it holds, failing the test at the deadline.
func crashWaitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// crashFailpoints returns every declared reclaim failpoint, and checks
// that the binary knows the same ones, armed, and at least those docs/cli.md
// names.
func crashFailpoints(t *testing.T, bin string) []string {
	t.Helper()
	var names []string
	for _, n := range failpoint.Names() {
		if strings.HasPrefix(n, "reclaim/") {
			names = append(names, n)
		}
	}
	r := crashExec(t, bin, t.TempDir(), nil, "debug", "failpoints", "--json")
	var listed struct {
		Enabled    bool     `json:"enabled"`
		Failpoints []string `json:"failpoints"`
	}
	r.decode(t, &listed)
	if !listed.Enabled {
		t.Fatalf("the failpoints binary has its failpoints disabled\n%s", r)
	}
	for _, n := range names {
		if !slices.Contains(listed.Failpoints, n) {
			t.Fatalf("the binary does not list failpoint %s\n%s", n, r)
		}
	}
	for _, n := range []string{"reclaim/reserved", "reclaim/salvaged", "reclaim/before-move",
		"reclaim/moved", "reclaim/repaired", "reclaim/resalvaged", "reclaim/before-delete", "reclaim/removed"} {
		if !slices.Contains(names, n) {
			t.Fatalf("failpoint %s (docs/cli.md) is not declared; declared: %v", n, names)
		}
	}
	return names
}

// A crashScene is a repository with a dirty workspace T-1 to reclaim
// and retained peers around it whose files must never change: workspace
// T-2 (released, dirty), a plain `git worktree add` worktree beside T-1
// (dirty) and the main worktree (with an untracked file).
type crashScene struct {
	repo    *fixtures.Repo
	p       *Provider
	target  *Workspace
	work    map[string]string // T-1's uncommitted, salvageable work: path -> content
	ignored map[string]string // T-1's ignored files: deleted with the directory, never salvaged
	peers   []string          // top levels of the retained peers
}

func newCrashScene(t *testing.T) *crashScene {
	t.Helper()
	repo := fixtures.NewRepo(t)
	repo.WriteGitignore("*.log", "build/")
	repo.WriteFile("src/app.go", "package app\n")
	repo.Commit("app")
	if _, err := Init(t.Context(), repo.Dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := Open(t.Context(), repo.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	// These tests are of the deletion: the repository keeps no trash
	// (policy trash.keep 0), as a reclaim with --keep-trash 0 would.
	if _, err := p.SetTrashPolicy(PolicyTrashKeep, "0"); err != nil {
		t.Fatal(err)
	}
	s := &crashScene{repo: repo, p: p,
		work: map[string]string{
			"src/app.go":          "package app // changed in T-1\n", // modified tracked file
			"staged.txt":          "staged in T-1\n",                 // new file, staged
			"notes/untracked.txt": "untracked in T-1\n",              // untracked file
		},
		ignored: map[string]string{"build/out.log": "ignored in T-1\n"},
	}
	s.target = mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	crashDirty(t, s.target.Path, "T-1")

	peer := mustAllocate(t, p, AllocateOptions{Binding: "T-2"})
	crashDirty(t, peer.Path, "T-2")
	if _, err := p.Release(t.Context(), "T-2", ""); err != nil {
		t.Fatal(err)
	}
	plain := repo.AddWorktree(filepath.Join(p.reg.WorkspaceRoot, "plain"), "plain")
	crashDirty(t, plain.Dir, "plain")
	repo.WriteFile("main-notes.txt", "untracked in the main worktree\n")
	s.peers = []string{peer.Path, plain.Dir, repo.Dir}
	return s
}

// crashDirty gives the worktree at dir a modified tracked file, a staged new
// file, an untracked file and an ignored file.
func crashDirty(t *testing.T, dir, who string) {
	t.Helper()
	w := &fixtures.Repo{T: t, Dir: dir}
	w.WriteFile("src/app.go", "package app // changed in "+who+"\n")
	w.WriteFile("staged.txt", "staged in "+who+"\n")
	w.Git("add", "staged.txt")
	w.WriteFile("notes/untracked.txt", "untracked in "+who+"\n")
	w.WriteFile("build/out.log", "ignored in "+who+"\n")
}

// A crashDirState is what a peer looks like: every file under its top level
// (the main worktree's .git directory aside) with mode and content, and
// its git status.
type crashDirState struct {
	Files  map[string]string
	Status string
}

func crashCaptureDir(t *testing.T, dir string) crashDirState {
	t.Helper()
	return crashDirState{Files: crashCaptureFiles(t, dir), Status: fixtures.Git(t, dir, "status", "--porcelain=v2", "-z")}
}

// crashCaptureFiles maps every path below dir (a top-level .git directory
// aside) to its kind, mode and content.
func crashCaptureFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == ".git" && d.IsDir() {
			return fs.SkipDir // the repository's own state, not the worktree's files
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			files[rel] = "symlink -> " + target
		case d.IsDir():
			files[rel] = fmt.Sprintf("dir %v", info.Mode())
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files[rel] = fmt.Sprintf("%v %q", info.Mode(), b)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot of %s: %v", dir, err)
	}
	return files
}

func (s *crashScene) capturePeers(t *testing.T) map[string]crashDirState {
	t.Helper()
	out := map[string]crashDirState{}
	for _, dir := range s.peers {
		out[dir] = crashCaptureDir(t, dir)
	}
	return out
}

func (s *crashScene) checkPeersUnchanged(t *testing.T, before map[string]crashDirState, when string) {
	t.Helper()
	if diff := cmp.Diff(before, s.capturePeers(t)); diff != "" {
		t.Errorf("%s: a retained peer changed (-before +after):\n%s", when, diff)
	}
}

// salvageRefs lists refs/majlis/salvage/T-1/*.
func (s *crashScene) salvageRefs(t *testing.T) []string {
	t.Helper()
	return strings.Fields(s.repo.Git("for-each-ref", "--format=%(refname)", SalvagePrefix+"T-1/"))
}

// refHoldsWork reports why the tree of ref lacks some of T-1's work, or "".
func (s *crashScene) refHoldsWork(t *testing.T, ref string) string {
	t.Helper()
	var missing []string
	for path, want := range s.work {
		got, err := s.repo.TryGit("show", ref+":"+path)
		if err != nil || got != want {
			missing = append(missing, fmt.Sprintf("%s (got %q)", path, got))
		}
	}
	for path := range s.ignored {
		if _, err := s.repo.TryGit("cat-file", "-e", ref+":"+path); err == nil {
			missing = append(missing, "ignored file "+path+" was salvaged")
		}
	}
	if parent, err := s.repo.TryGit("rev-parse", ref+"^"); err != nil || strings.TrimSpace(parent) != s.target.Base {
		missing = append(missing, fmt.Sprintf("parent %q is not T-1's HEAD %s", strings.TrimSpace(parent), s.target.Base))
	}
	sort.Strings(missing)
	return strings.Join(missing, "; ")
}

// checkWorkPreserved asserts that T-1's uncommitted work is whole either in
// its directory or on one salvage ref, and that its ignored files are
// intact for as long as the directory exists.
func (s *crashScene) checkWorkPreserved(t *testing.T) {
	t.Helper()
	dir := &fixtures.Repo{T: t, Dir: s.target.Path}
	inDir := true
	for path, want := range s.work {
		if b, err := os.ReadFile(dir.Path(path)); err != nil || string(b) != want {
			inDir = false
		}
	}
	if _, err := os.Lstat(s.target.Path); err == nil {
		for path, want := range s.ignored {
			if b, err := os.ReadFile(dir.Path(path)); err != nil || string(b) != want {
				t.Errorf("ignored file %s changed while the directory still exists: %q, %v", path, b, err)
			}
		}
	}
	var why []string
	for _, ref := range s.salvageRefs(t) {
		lack := s.refHoldsWork(t, ref)
		if lack == "" {
			return
		}
		why = append(why, ref+" lacks "+lack)
	}
	if !inDir {
		t.Errorf("T-1's uncommitted work is neither whole in %s nor on a salvage ref: %v", s.target.Path, why)
	}
}

// checkFsck runs git fsck. It must exit 0 and report nothing but dangling
// blobs that some worktree's index holds: git fsck does not count the
// index of a linked worktree as a root, so the blob of a file staged in T-1
// or T-2 is "dangling" before majlis does anything at all. Any other
// report (a missing or broken object, a dangling commit or tree: a
// salvage commit that no ref holds) fails the test.
func (s *crashScene) checkFsck(t *testing.T, when string) {
	t.Helper()
	cmd := exec.Command("git", "-C", s.repo.Dir, "fsck", "--no-progress")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s: git fsck: %v\n%s", when, err, out)
		return
	}
	indexed := map[string]bool{}
	for _, wt := range strings.Split(s.repo.Git("worktree", "list", "--porcelain", "-z"), "\x00") {
		dir, ok := strings.CutPrefix(wt, "worktree ")
		if !ok {
			continue
		}
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		for _, line := range strings.Split(fixtures.Git(t, dir, "ls-files", "--stage"), "\n") {
			if f := strings.Fields(line); len(f) >= 2 {
				indexed[f[1]] = true
			}
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		if id, ok := strings.CutPrefix(line, "dangling blob "); ok && indexed[id] {
			continue
		}
		t.Errorf("%s: git fsck reports %q\n%s", when, line, out)
	}
}

func (s *crashScene) leasePath() string {
	return filepath.Join(s.p.stateDir, "leases", reclaimPrefix+"T-1.lease")
}

// listed returns T-1's entries in `majlis workspace list --all --json`.
func (s *crashScene) listed(t *testing.T, bin string) []Workspace {
	t.Helper()
	r := crashExec(t, bin, s.repo.Dir, nil, "workspace", "list", "--all", "--json")
	if r.exit != 0 {
		t.Fatalf("list failed\n%s", r)
	}
	var out struct {
		Workspaces []Workspace `json:"workspaces"`
	}
	r.decode(t, &out)
	var t1 []Workspace
	for _, w := range out.Workspaces {
		if w.Binding == "T-1" {
			t1 = append(t1, w)
		}
	}
	return t1
}

// stateFingerprint renders everything a reclaim could change outside the
// peers: refs, worktrees, claims and events, requests, leases.
func (s *crashScene) stateFingerprint(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(s.repo.Git("for-each-ref", "--format=%(objectname) %(refname)"))
	b.WriteString(s.repo.Git("worktree", "list", "--porcelain"))
	for _, sub := range []string{"claims", "requests", "leases"} {
		root := filepath.Join(s.p.stateDir, sub)
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(path, crashLockSuffix) {
				return nil
			}
			data, _ := os.ReadFile(path)
			rel, _ := filepath.Rel(s.p.stateDir, path)
			fmt.Fprintf(&b, "%s %x\n", rel, data)
			return nil
		})
	}
	return b.String()
}

// crashLockSuffix: side-lock files of the lease folder are created by any
// reader that takes the side lock; they hold nothing.
const crashLockSuffix = ".lock"

// crashReclaimJSON is the success object of `workspace reclaim --json`.
type crashReclaimJSON struct {
	Reclaim *struct {
		Binding    string   `json:"binding"`
		SalvageRef *string  `json:"salvage_ref"`
		StepsDone  []string `json:"steps_done"`
		Removed    bool     `json:"removed"`
		Branch     string   `json:"branch"`
	} `json:"reclaim"`
}

// crashWaitExpired waits until this process's clock has passed expires,
// the expiry of a crashed owner's reservation. A process started after
// that reads the same system clock later, so it sees the reservation
// expired however long the machine takes to schedule it: the verdict no
// longer depends on timing. (The opposite judgement, "not expired yet",
// is tested only with an expiry minutes away: see
// TestRetryBeforeExpiryIsRefused.)
func crashWaitExpired(t *testing.T, expires time.Time) {
	t.Helper()
	crashWaitFor(t, "the reservation's expiry at "+expires.Format(time.RFC3339Nano), 5*time.Minute, func() bool {
		return time.Now().After(expires)
	})
}

// crashPause returns the environment that makes a failpoints binary pause
// at point until release is called, and a function that waits until the
// process has reached it. It orders processes without sleeps.
func crashPause(t *testing.T, point string) (env []string, reached func(), release func()) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "gate")
	reached = func() {
		t.Helper()
		crashWaitFor(t, "a process to reach "+point, 2*time.Minute, func() bool {
			_, err := os.Lstat(gate + ".reached")
			return err == nil
		})
	}
	release = func() {
		t.Helper()
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return []string{failpoint.EnvVar + "=" + point + "=wait(" + gate + ")"}, reached, release
}

// TestReclaimCrashMatrix kills a reclaim (SIGKILL) at every reclaim
// failpoint and checks what survives: T-1's uncommitted work, every file of
// every retained peer, a clean git fsck; then that a retry with the same
// request id, once the dead owner's reservation has expired, recovers it and finishes the reclaim
// with a salvage ref holding the work, and that a second retry returns the
// recorded result and changes nothing.
func TestReclaimCrashMatrix(t *testing.T) {
	bin := crashBinary(t)
	for _, point := range crashFailpoints(t, bin) {
		if strings.HasPrefix(point, "reclaim/forget-") {
			continue // a workspace whose folder is gone: TestReclaimMissingCrash
		}
		t.Run(strings.TrimPrefix(point, "reclaim/"), func(t *testing.T) {
			t.Parallel()
			s := newCrashScene(t)
			ttl := []string{envvar.ReservationTTL + "=2s"}
			args := []string{"workspace", "reclaim", "T-1", "--yes", "--request-id", "R", "--json"}
			peers := s.capturePeers(t)
			target := crashCaptureDir(t, s.target.Path)

			crash := crashExec(t, bin, s.repo.Dir, append(ttl, failpoint.EnvVar+"="+point+"=crash"), args...)
			if !crash.killed {
				t.Fatalf("the reclaim was not killed at %s\n%s", point, crash)
			}
			s.checkWorkPreserved(t)
			if slices.Contains([]string{"reclaim/reserved", "reclaim/salvaged", "reclaim/before-move"}, point) {
				// Before the move (salvage included, which must not touch
				// the workspace) T-1 is as it was, at its path.
				if diff := cmp.Diff(target, crashCaptureDir(t, s.target.Path)); diff != "" {
					t.Errorf("T-1 changed before any destructive step (-before +after):\n%s", diff)
				}
			}
			s.checkPeersUnchanged(t, peers, "after the crash")
			s.checkFsck(t, "after the crash")
			if slices.Contains([]string{"reclaim/moved", "reclaim/repaired", "reclaim/resalvaged", "reclaim/before-delete"}, point) {
				// In the trash, locked (git's entry names the trash folder
				// once re-pointed), and the preview says what a retry will do.
				wts := s.repo.Git("worktree", "list", "--porcelain")
				if (point != "reclaim/moved" && !strings.Contains(wts, trashPrefix+"T-1.1.")) || !strings.Contains(wts, "locked majlis workspace T-1") {
					t.Errorf("after a crash at %s git does not list T-1 in its trash folder, locked:\n%s", point, wts)
				}
				if ws := s.listed(t, bin); len(ws) != 1 || ws[0].State != StateReclaiming || !strings.Contains(ws[0].TrashPath, trashPrefix+"T-1.1.") {
					t.Errorf("after a crash at %s list shows T-1 as %+v, want reclaiming, in its trash folder", point, ws)
				}
				pv := crashExec(t, bin, s.repo.Dir, nil, "workspace", "reclaim", "T-1", "--preview", "--json")
				if pv.exit != 0 || !strings.Contains(pv.stdout, `"delete-trash"`) {
					t.Errorf("the preview after a crash at %s does not show the deletion of the trash\n%s", point, pv)
				}
			}
			held, err := s.p.leases.Inspect(reclaimPrefix + "T-1")
			if err != nil {
				t.Fatalf("the crashed reclaim left no reservation: %v", err)
			}
			if held.Owner.PID != crash.pid || held.Metadata["request_id"] != "R" {
				t.Errorf("reservation owner pid %d request %q, want the crashed pid %d and R", held.Owner.PID, held.Metadata["request_id"], crash.pid)
			}

			crashWaitExpired(t, held.ExpiresAt)
			retry := crashExec(t, bin, s.repo.Dir, ttl, args...)
			if retry.exit != 0 {
				t.Fatalf("the retry did not finish the reclaim\n%s", retry)
			}
			var res crashReclaimJSON
			retry.decode(t, &res)
			if res.Reclaim == nil || !res.Reclaim.Removed || res.Reclaim.SalvageRef == nil || res.Reclaim.Branch != "majlis/T-1" {
				t.Fatalf("retry result does not report a removal with a salvage ref\n%s", retry)
			}
			if lack := s.refHoldsWork(t, *res.Reclaim.SalvageRef); lack != "" {
				t.Errorf("the result's salvage ref %s lacks %s", *res.Reclaim.SalvageRef, lack)
			}
			if _, err := os.Lstat(s.target.Path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("T-1's directory is still there after the reclaim: %v", err)
			}
			if _, err := os.Lstat(s.leasePath()); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the reservation is still held after the reclaim: %v", err)
			}
			// The trash is deleted, and git's entry with it.
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(s.target.Path), trashPrefix+"*")); len(left) > 0 {
				t.Errorf("trash left after the reclaim: %v", left)
			}
			if left, _ := filepath.Glob(filepath.Join(s.p.stateDir, "trash", "*")); len(left) > 0 {
				t.Errorf("git's entry left aside after the reclaim: %v", left)
			}
			if wts := s.repo.Git("worktree", "list", "--porcelain"); strings.Contains(wts, "T-1") {
				t.Errorf("git still lists T-1 after the reclaim:\n%s", wts)
			}
			ws := s.listed(t, bin)
			if len(ws) != 1 || ws[0].State != StateReclaimed || ws[0].SalvageRef == "" {
				t.Fatalf("list --all shows T-1 as %+v, want one reclaimed workspace with a salvage ref", ws)
			}
			if ws[0].SalvageRef != *res.Reclaim.SalvageRef {
				t.Errorf("list --all names salvage ref %s, the result %s", ws[0].SalvageRef, *res.Reclaim.SalvageRef)
			}
			if lack := s.refHoldsWork(t, ws[0].SalvageRef); lack != "" {
				t.Errorf("the listed salvage ref %s lacks %s", ws[0].SalvageRef, lack)
			}
			if _, err := s.repo.TryGit("rev-parse", "--verify", "--quiet", "refs/heads/majlis/T-1"); err != nil {
				t.Errorf("branch majlis/T-1 was not kept: %v", err)
			}
			s.checkPeersUnchanged(t, peers, "after the retry")
			s.checkFsck(t, "after the retry")

			// Once more: the recorded result, and nothing changes.
			before := s.stateFingerprint(t)
			again := crashExec(t, bin, s.repo.Dir, ttl, args...)
			if again.exit != 0 {
				t.Fatalf("a second retry failed\n%s", again)
			}
			var first, second any
			retry.decode(t, &first)
			again.decode(t, &second)
			if diff := cmp.Diff(first, second); diff != "" {
				t.Errorf("a second retry returned another result (-first +second):\n%s", diff)
			}
			if diff := cmp.Diff(before, s.stateFingerprint(t)); diff != "" {
				t.Errorf("a second retry changed the repository's state (-before +after):\n%s", diff)
			}
			s.checkPeersUnchanged(t, peers, "after the second retry")
		})
	}
}

// TestConcurrentReclaimsOfOneBinding: two reclaims of T-1 at once; the
// first pauses right after registering its reservation (until the test
// lets it go on), the second runs then. The second is refused as held (exit 4, naming the first as the
// holder), the first finishes; nothing is salvaged twice.
func TestConcurrentReclaimsOfOneBinding(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	s := newCrashScene(t)
	peers := s.capturePeers(t)
	pause, reached, release := crashPause(t, "reclaim/reserved")
	first := crashStart(t, bin, s.repo.Dir, pause,
		"workspace", "reclaim", "T-1", "--yes", "--request-id", "first", "--json")
	reached()
	second := crashExec(t, bin, s.repo.Dir, nil, "workspace", "reclaim", "T-1", "--yes", "--request-id", "second", "--json")
	// The two overlapped: the first, paused, still held its reservation
	// when the second had finished.
	if h, err := s.p.leases.Inspect(reclaimPrefix + "T-1"); err != nil || h.Owner.PID != first.cmd.Process.Pid {
		t.Errorf("when the second reclaim returned, the first no longer held the reservation (%+v, %v): they did not overlap", h, err)
	}
	release()
	r1 := first.wait()
	if second.exit != 4 || second.errorCode() != "held" {
		t.Errorf("the second reclaim: want exit 4, code held\n%s", second)
	}
	var refusal struct {
		Error struct {
			Details struct {
				Holder reservation.Record `json:"holder"`
			} `json:"details"`
		} `json:"error"`
	}
	second.decode(t, &refusal)
	if h := refusal.Error.Details.Holder; h.Owner.PID != r1.pid || h.Metadata["request_id"] != "first" {
		t.Errorf("the refusal names holder pid %d request %q, want pid %d request first", h.Owner.PID, h.Metadata["request_id"], r1.pid)
	}
	if r1.exit != 0 {
		t.Fatalf("the first reclaim did not finish\n%s", r1)
	}
	if refs := s.salvageRefs(t); len(refs) != 1 {
		t.Errorf("salvage refs %v, want exactly one", refs)
	}
	if ws := s.listed(t, bin); len(ws) != 1 || ws[0].State != StateReclaimed {
		t.Errorf("T-1 listed as %+v, want reclaimed", ws)
	}
	s.checkPeersUnchanged(t, peers, "after both reclaims")
}

// TestReclaimRacesAllocations starts a reclaim of T-1 together with eight
// allocations around it: four inside it (--allow-nested, one inside its
// untracked notes/ folder), two beside it (names that share its prefix) and
// two in the folder above the workspace root (one ending in T-1 too). The
// reclaim never removes a directory that a published claim names: every
// allocation that succeeded has its directory afterwards, as a registered
// worktree; and the reclaim either refused (a peer overlaps) or succeeded
// with no allocation inside its target published before its reclaimed
// event. While the reservation is held, allocations inside the target are
// refused and the others proceed.
func TestReclaimRacesAllocations(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	for _, tc := range []struct {
		name      string
		failpoint string // slows the reclaim at one point, to vary the interleaving
		last      bool   // start the reclaim after the allocations
		reserved  bool   // start the allocations once the reservation is held
	}{
		{name: "reclaim first"},
		{name: "reclaim last", last: true},
		{name: "pause before the move", failpoint: "reclaim/before-move=sleep(300ms)"},
		{name: "during the reservation", failpoint: "reclaim/reserved=sleep(500ms)", reserved: true},
		{name: "as the reservation appears", reserved: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newCrashScene(t)
			tgt := s.target.Path
			root := filepath.Dir(tgt)
			type alloc struct {
				binding, path string
				inside        bool
				proc          *crashProc
				run           crashRun
			}
			allocs := []*alloc{
				{binding: "in-1", path: filepath.Join(tgt, "in-1"), inside: true},
				{binding: "in-2", path: filepath.Join(tgt, "in-2"), inside: true},
				{binding: "in-3", path: filepath.Join(tgt, "deep", "in-3"), inside: true},
				{binding: "in-4", path: filepath.Join(tgt, "notes", "in-4"), inside: true},
				{binding: "beside-5", path: tgt + "-5"},
				{binding: "beside-6", path: tgt + ".6"},
				{binding: "above-7", path: filepath.Join(filepath.Dir(root), "above-7")},
				{binding: "above-8", path: filepath.Join(filepath.Dir(root), "above-8", "T-1")},
			}
			var env []string
			if tc.failpoint != "" {
				env = []string{failpoint.EnvVar + "=" + tc.failpoint}
			}
			var reclaim *crashProc
			startReclaim := func() {
				reclaim = crashStart(t, bin, s.repo.Dir, env, "workspace", "reclaim", "T-1", "--yes", "--request-id", "race", "--json")
			}
			if !tc.last {
				startReclaim()
			}
			if tc.reserved {
				crashWaitFor(t, "the reclaim's reservation", 10*time.Second, func() bool {
					_, err := os.Lstat(s.leasePath())
					return err == nil
				})
			}
			for _, a := range allocs {
				args := []string{"workspace", "allocate", a.binding, "--path", a.path, "--request-id", "alloc-" + a.binding, "--json"}
				if a.inside {
					args = append(args, "--allow-nested")
				}
				a.proc = crashStart(t, bin, s.repo.Dir, nil, args...)
			}
			if tc.last {
				startReclaim()
			}
			rr := reclaim.wait()
			for _, a := range allocs {
				a.run = a.proc.wait()
			}

			// Every allocation succeeded, or was refused because it lies
			// inside the reserved target: the others never wait or fail.
			worktrees := s.repo.Git("worktree", "list", "--porcelain")
			var insideWon []*alloc
			for _, a := range allocs {
				switch {
				case a.run.exit == 0:
					fi, err := os.Lstat(a.path)
					if err != nil || !fi.IsDir() {
						t.Errorf("allocation %s succeeded but its directory %s is gone: %v", a.binding, a.path, err)
					} else if _, err := os.Lstat(filepath.Join(a.path, ".git")); err != nil {
						t.Errorf("allocation %s: its worktree lost its .git file: %v", a.binding, err)
					}
					if !strings.Contains(worktrees, "worktree "+a.path+"\n") {
						t.Errorf("allocation %s succeeded but git no longer lists %s:\n%s", a.binding, a.path, worktrees)
					}
					if a.inside {
						insideWon = append(insideWon, a)
					}
				case a.inside && a.run.exit == 3 && a.run.errorCode() == "reserved_target", gitWorktreeRace(a.run):
					if gitWorktreeRace(a.run) {
						t.Logf("allocation %s hit git's concurrent worktree-add race: %s", a.binding, a.run.stdout)
					}
					if _, err := os.Lstat(a.path); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("failed allocation %s left %s behind: %v", a.binding, a.path, err)
					}
				default:
					t.Errorf("allocation %s: want success or a safety refusal\n%s", a.binding, a.run)
				}
			}

			switch {
			case rr.exit == 0:
				if _, err := os.Lstat(filepath.Join(tgt, ".git")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the reclaim succeeded but T-1's worktree is still there: %v", err)
				}
				// An allocation inside the old target is fine only once the
				// reclaim is over: its claim must have been published after
				// the reclaimed event (the reservation is released after it).
				reclaimed, err := os.Stat(filepath.Join(s.p.records.Dir("T-1"), claimName(1, EventReclaimed)))
				if err != nil {
					t.Fatalf("the reclaim succeeded without a reclaimed event: %v", err)
				}
				for _, a := range insideWon {
					claim, err := os.Stat(filepath.Join(s.p.records.Dir(a.binding), claimName(1, "claim")))
					if err != nil {
						t.Errorf("allocation %s has no claim: %v", a.binding, err)
					} else if claim.ModTime().Before(reclaimed.ModTime()) {
						t.Errorf("allocation %s inside the target published its claim at %v, before the reclaim ended (%v)",
							a.binding, claim.ModTime(), reclaimed.ModTime())
					}
				}
			case rr.exit == 3 && slices.Contains([]string{"peer_overlap", "preview_stale"}, rr.errorCode()) && !tc.reserved,
				gitWorktreeRace(rr):
				if gitWorktreeRace(rr) {
					t.Logf("the reclaim hit git's concurrent worktree-add race (it refuses: fail closed): %s", rr.stdout)
				}
				if _, err := os.Lstat(filepath.Join(tgt, ".git")); err != nil {
					t.Errorf("a refused reclaim removed T-1's worktree: %v", err)
				}
				s.checkWorkPreserved(t)
				if _, err := os.Lstat(s.leasePath()); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a refused reclaim kept its reservation: %v", err)
				}
			case tc.reserved:
				t.Errorf("the reclaim: want success (no allocation could publish inside its target once it was reserved)\n%s", rr)
			default:
				t.Errorf("the reclaim: want success, or exit 3 with peer_overlap or preview_stale\n%s", rr)
			}
			t.Logf("reclaim: exit %d %s; allocations inside the target that won: %d", rr.exit, rr.errorCode(), len(insideWon))
		})
	}
}

// gitWorktreeRace recognises a failure that git itself causes when
// `git worktree add` runs concurrently with another git command that reads
// every worktree's administrative files (git worktree list, unlock,
// remove, add; git status in a worktree with a nested one): it finds the
// new worktrees/<id>/ folder before its commondir file is written and dies
// with "failed to read .../worktrees/<id>/commondir". majlis fails closed
// (exit 1, git_failed) and a retry succeeds. In a reclaim the failing
// command may be the `git worktree unlock` whose error is ignored: the
// removal that follows then refuses the still-locked worktree.
func gitWorktreeRace(r crashRun) bool {
	if r.exit != 1 || r.errorCode() != "git_failed" {
		return false
	}
	return strings.Contains(r.stdout, "failed to read") && strings.Contains(r.stdout, "commondir") ||
		strings.Contains(r.stdout, "cannot remove a locked working tree, lock reason: majlis workspace T-1 ")
}

// TestRecoverCrashedReclaimCLI: after a reclaim is killed holding its
// reservation, `majlis workspace recover T-1` retires it once it has
// expired; recovery moves the lease file only: claims and events, the
// worktree's files and every ref stay as they were. A retry of the
// reclaim then finishes it. (Refusals before expiry:
// TestRetryBeforeExpiryIsRefused.)
func TestRecoverCrashedReclaimCLI(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	s := newCrashScene(t)
	ttl := []string{envvar.ReservationTTL + "=3s"}
	crash := crashExec(t, bin, s.repo.Dir, append(ttl, failpoint.EnvVar+"=reclaim/before-move=crash"),
		"workspace", "reclaim", "T-1", "--yes", "--request-id", "R", "--json")
	if !crash.killed {
		t.Fatalf("the reclaim was not killed\n%s", crash)
	}
	leaseBytes, err := os.ReadFile(s.leasePath())
	if err != nil {
		t.Fatalf("no reservation after the crash: %v", err)
	}
	held, err := s.p.leases.Inspect(reclaimPrefix + "T-1")
	if err != nil {
		t.Fatal(err)
	}
	claims := crashCaptureFiles(t, s.p.records.Dir("T-1"))
	tree := crashCaptureDir(t, s.target.Path)
	refs := s.repo.Git("for-each-ref", "--format=%(objectname) %(refname)")
	worktrees := s.repo.Git("worktree", "list", "--porcelain")
	leases := crashLeaseNames(t, s)

	crashWaitExpired(t, held.ExpiresAt)
	recovered := crashExec(t, bin, s.repo.Dir, nil, "workspace", "recover", "T-1", "--json")
	if recovered.exit != 0 {
		t.Fatalf("recover after expiry failed\n%s", recovered)
	}
	var out struct {
		Recovered reservation.Record `json:"recovered"`
	}
	recovered.decode(t, &out)
	if out.Recovered.Token != held.Token || out.Recovered.Owner.PID != crash.pid {
		t.Errorf("recovered %+v, want the crashed reclaim's lease (token %s, pid %d)", out.Recovered, held.Token, crash.pid)
	}

	// Only the lease moved: out of its name, into retired/ whole.
	if _, err := os.Lstat(s.leasePath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lease is still in place after recovery: %v", err)
	}
	retired := filepath.Join(s.p.stateDir, "leases", "retired",
		fmt.Sprintf("%sT-1.%d.%s.lease", reclaimPrefix, held.Generation, held.Token))
	if b, err := os.ReadFile(retired); err != nil || !bytes.Equal(b, leaseBytes) {
		t.Errorf("the retired copy %s does not hold the lease: %v", retired, err)
	}
	after := crashLeaseNames(t, s)
	var gone, added []string
	for _, n := range leases {
		if !slices.Contains(after, n) {
			gone = append(gone, n)
		}
	}
	for _, n := range after {
		if !slices.Contains(leases, n) {
			added = append(added, n)
		}
	}
	if !slices.Equal(gone, []string{reclaimPrefix + "T-1.lease"}) {
		t.Errorf("recovery removed %v from the lease folder, want only the lease", gone)
	}
	for _, n := range added {
		// The name's record becomes the generation high-water mark.
		if n != reclaimPrefix+"T-1.gen" && !strings.HasPrefix(n, "retired/") {
			t.Errorf("recovery added %s to the lease folder", n)
		}
	}
	if diff := cmp.Diff(claims, crashCaptureFiles(t, s.p.records.Dir("T-1"))); diff != "" {
		t.Errorf("recovery changed the claims (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(tree, crashCaptureDir(t, s.target.Path)); diff != "" {
		t.Errorf("recovery changed the worktree (-before +after):\n%s", diff)
	}
	if got := s.repo.Git("for-each-ref", "--format=%(objectname) %(refname)"); got != refs {
		t.Errorf("recovery changed refs:\n%s\nwant:\n%s", got, refs)
	}
	if got := s.repo.Git("worktree", "list", "--porcelain"); got != worktrees {
		t.Errorf("recovery changed the worktrees:\n%s\nwant:\n%s", got, worktrees)
	}

	if again := crashExec(t, bin, s.repo.Dir, nil, "workspace", "recover", "T-1", "--json"); again.exit != 5 || again.errorCode() != "not_found" {
		t.Errorf("a second recovery: want exit 5, not_found\n%s", again)
	}
	retry := crashExec(t, bin, s.repo.Dir, nil, "workspace", "reclaim", "T-1", "--yes", "--request-id", "R", "--json")
	if retry.exit != 0 {
		t.Fatalf("the reclaim did not finish after recovery\n%s", retry)
	}
	s.checkWorkPreserved(t)
}

// TestRetryBeforeExpiryIsRefused: a reclaim killed holding a reservation
// that expires in ten minutes. Before expiry, whatever the machine's load,
// a retry of the reclaim is refused as held and `workspace recover`
// as not_expired, each naming the dead owner, and neither changes anything.
func TestRetryBeforeExpiryIsRefused(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	s := newCrashScene(t)
	ttl := []string{envvar.ReservationTTL + "=10m"}
	args := []string{"workspace", "reclaim", "T-1", "--yes", "--request-id", "R", "--json"}
	crash := crashExec(t, bin, s.repo.Dir, append(ttl, failpoint.EnvVar+"=reclaim/reserved=crash"), args...)
	if !crash.killed {
		t.Fatalf("the reclaim was not killed\n%s", crash)
	}
	leaseBytes, err := os.ReadFile(s.leasePath())
	if err != nil {
		t.Fatalf("no reservation after the crash: %v", err)
	}
	// The retries take the brief publication lease, which raises its
	// generation record: bookkeeping, not state.
	fingerprint := func() string {
		var keep []string
		for _, line := range strings.SplitAfter(s.stateFingerprint(t), "\n") {
			if !strings.HasPrefix(line, "leases/publication.") {
				keep = append(keep, line)
			}
		}
		return strings.Join(keep, "")
	}
	before := fingerprint()
	tree := crashCaptureDir(t, s.target.Path)
	type refusal struct {
		Error struct {
			Details struct {
				Holder reservation.Record `json:"holder"`
			} `json:"details"`
		} `json:"error"`
	}
	for _, tc := range []struct {
		args []string
		code string
	}{
		{args, "held"},
		{[]string{"workspace", "recover", "T-1", "--json"}, "not_expired"},
	} {
		r := crashExec(t, bin, s.repo.Dir, ttl, tc.args...)
		if r.exit != 4 || r.errorCode() != tc.code {
			t.Errorf("before expiry: want exit 4, %s\n%s", tc.code, r)
			continue
		}
		var out refusal
		r.decode(t, &out)
		if pid := out.Error.Details.Holder.Owner.PID; pid != crash.pid {
			t.Errorf("%s: the refusal names owner pid %d, want the crashed pid %d", tc.code, pid, crash.pid)
		}
	}
	if b, _ := os.ReadFile(s.leasePath()); !bytes.Equal(b, leaseBytes) {
		t.Errorf("a refused retry changed the lease file")
	}
	if diff := cmp.Diff(before, fingerprint()); diff != "" {
		t.Errorf("a refused retry changed the repository's state (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(tree, crashCaptureDir(t, s.target.Path)); diff != "" {
		t.Errorf("a refused retry changed T-1 (-before +after):\n%s", diff)
	}
	s.checkWorkPreserved(t)
}

// crashLeaseNames lists the lease folder (side-lock files aside), with
// retired/ entries as retired/NAME.
func crashLeaseNames(t *testing.T, s *crashScene) []string {
	t.Helper()
	root := filepath.Join(s.p.stateDir, "leases")
	var names []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasSuffix(path, crashLockSuffix) {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

package provider

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

// The round trip is the test of salvage's completeness: a workspace put
// into states drawn at random from what git allows, reclaimed, then
// restored, must come back with the same HEAD, index, files, per-worktree
// refs and operation state, and every object reachable before (reflogs
// and the index included) must be reachable after.
//
// A failure prints its seed; replay it with
//
//	go test ./provider -run TestRestoreRoundTrip -roundtrip.seed=N
//
// (or MAJLIS_ROUNDTRIP_SEED=N). -roundtrip.rounds (MAJLIS_ROUNDTRIP_ROUNDS)
// sets how many workspaces are drawn; the default keeps make test fast.
var (
	roundTripSeed   = flag.Uint64("roundtrip.seed", 0, "replay the salvage round trip with this seed")
	roundTripRounds = flag.Int("roundtrip.rounds", 0, "how many random workspaces the salvage round trip draws")
)

func TestRestoreRoundTrip(t *testing.T) {
	seed := *roundTripSeed
	if v := os.Getenv("MAJLIS_ROUNDTRIP_SEED"); seed == 0 && v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	rounds := *roundTripRounds
	if v := os.Getenv("MAJLIS_ROUNDTRIP_ROUNDS"); rounds == 0 && v != "" {
		rounds, _ = strconv.Atoi(v)
	}
	if seed != 0 {
		rounds = 1
	} else if rounds == 0 {
		rounds = 8
		if testing.Short() {
			rounds = 2
		}
	}
	base := uint64(time.Now().UnixNano())
	for i := range rounds {
		s := seed
		if s == 0 {
			s = base + uint64(i)
		}
		t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) {
			t.Parallel()
			defer func() {
				if t.Failed() {
					t.Logf("replay: go test ./provider -run TestRestoreRoundTrip -roundtrip.seed=%d", s)
				}
			}()
			roundTrip(t, s)
		})
	}
}

// A state is one thing git lets a workspace hold.
type state struct {
	name  string
	apply func(w *world)
}

// world is one round: the repository, its workspace, and the random source.
type world struct {
	t    *testing.T
	rng  *rand.Rand
	repo *fixtures.Repo
	ws   *fixtures.Repo
	sub  *fixtures.Repo // the workspace's checked-out submodule, if any
	n    int
	log  []string
	// origBranch is the workspace's branch.
	origBranch string
	// unpopulated: the workspace's submodule (lib) is not checked out.
	unpopulated bool
}

func (w *world) name(prefix string) string { w.n++; return fmt.Sprintf("%s%d", prefix, w.n) }

// tracked returns a tracked file under src/ (always in the sparse cone),
// stage 0, not flagged.
func (w *world) tracked() string {
	var files []string
	for _, rec := range strings.Split(w.ws.Git("ls-files", "-s", "-v", "-z", "--", "src"), "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) == 4 && f[0] == "H" && f[1] != "120000" && f[3] == "0" {
			if fi, err := os.Lstat(w.ws.Path(path)); err == nil && fi.Mode().IsRegular() {
				files = append(files, path)
			}
		}
	}
	if len(files) == 0 {
		p := w.name("src/new-")
		w.ws.WriteFile(p, "made to have one\n")
		w.ws.Git("add", "--", p)
		return p
	}
	sort.Strings(files)
	return files[w.rng.IntN(len(files))]
}

// History states: each needs a clean index and worktree, and leaves them so.
var historyStates = []state{
	{"commit", func(w *world) { w.ws.WriteFile(w.name("src/c-"), "committed\n"); w.ws.Commit("c") }},
	{"detach and commit", func(w *world) { w.ws.DetachedCommit(w.name("src/d-"), "detached\n") }},
	{"reflog-only commit", func(w *world) {
		if b := w.branch(); b != "" {
			w.ws.ReflogOnlyCommit(b, w.name("src/l-"), "reflog\n")
		}
	}},
	{"per-worktree ref", func(w *world) {
		head := w.ws.Head()
		w.ws.Git("update-ref", "refs/worktree/"+w.name("keep-"), head)
	}},
	{"stash", func(w *world) {
		f := w.tracked()
		w.ws.StashEdits(f, "stashed "+w.name("")+"\n")
	}},
	{"sparse cone", func(w *world) {
		if !w.sparse() {
			w.ws.Git("sparse-checkout", "set", "src")
		}
	}},
	{"submodule commit, tag and stash", func(w *world) {
		if w.sub == nil {
			return
		}
		w.sub.WriteFile(w.name("sub-"), "in the submodule\n")
		c := w.sub.Commit("sub commit")
		w.sub.Git("tag", w.name("sub-tag-"), c)
		w.sub.TagOnlyCommit("work", w.name("sub-only-"), w.name("sub-t-"), "tagged only\n")
		w.sub.StashEdits("README.md", "sub stash "+w.name("")+"\n", "sub stash "+w.name("")+"\n")
		w.sub.ReflogOnlyCommit("work", w.name("sub-r-"), "only in the submodule's reflog\n")
	}},
}

// Operation states: at most one, after the history, on a clean tree.
var operationStates = []state{
	{"interrupted rebase", func(w *world) {
		if w.branch() != "" {
			w.ws.RebaseStoppedAtEdit(w.name("src/amended-"), "amended\n")
		}
	}},
	{"conflicted merge", func(w *world) { w.conflict("merge") }},
	{"conflicted cherry-pick", func(w *world) { w.conflict("cherry-pick") }},
	{"bisect", func(w *world) {
		w.ws.WriteFile(w.name("src/bisect-"), "one\n")
		w.ws.Commit("bisect one")
		w.ws.WriteFile(w.name("src/bisect-"), "two\n")
		w.ws.Commit("bisect two")
		w.ws.Git("bisect", "start", "HEAD", "HEAD~2")
	}},
}

// Unborn states: instead of an operation, after the history, HEAD left on
// a branch with no commit, the index and files kept: a branch made with
// --orphan, or the workspace's branch deleted under it from the main
// worktree (git then sees the same).
var unbornStates = []state{
	{"orphan branch", func(w *world) { w.ws.Git("checkout", "--quiet", "--orphan", w.name("orphan-")) }},
	{"branch deleted under it", func(w *world) {
		if b := w.branch(); b != "" {
			w.repo.Git("update-ref", "-d", "refs/heads/"+b)
		}
	}},
}

// conflict makes a side commit that conflicts with HEAD on one file and
// runs op (merge or cherry-pick) of it, which stops on the conflict.
func (w *world) conflict(op string) {
	f := w.name("src/conflict-")
	w.ws.WriteFile(f, "base\n")
	w.ws.Commit("conflict base")
	head := w.ws.Head()
	w.ws.Git("checkout", "--quiet", "--detach")
	w.ws.WriteFile(f, "theirs\n")
	theirs := w.ws.Commit("theirs")
	w.ws.Git("checkout", "--quiet", head)
	if b := w.origBranch; b != "" {
		w.ws.Git("checkout", "--quiet", b)
	}
	w.ws.WriteFile(f, "ours\n")
	w.ws.Commit("ours")
	if _, err := w.ws.TryGit(op, theirs); err == nil {
		w.t.Fatalf("%s of %s did not conflict", op, theirs)
	}
}

// Worktree states: any number, in any order, last.
var worktreeStates = []state{
	{"stage a new file", func(w *world) { p := w.name("src/s-"); w.ws.WriteFile(p, "staged\n"); w.ws.Git("add", "--", p) }},
	{"partial stage", func(w *world) { w.ws.PartialStage(w.tracked(), "staged "+w.name("")+"\n", "worktree\n") }},
	{"intent to add", func(w *world) { p := w.name("src/ita-"); w.ws.WriteFile(p, "ita\n"); w.ws.Git("add", "-N", "--", p) }},
	{"untracked", func(w *world) { w.ws.WriteFile(w.name("src/u dir/u-"), "untracked\n") }},
	{"delete", func(w *world) { w.ws.Remove(w.tracked()) }},
	{"git rm", func(w *world) { w.ws.Git("rm", "-f", "--quiet", "--", w.tracked()) }},
	{"rename", func(w *world) { w.ws.Git("mv", "--", w.tracked(), w.name("src/renamed-")) }},
	{"mode change", func(w *world) { w.ws.Chmod(w.tracked(), 0o755) }},
	// core.fileMode=false (the repository's config, so the restored
	// workspace has it too): git sees no chmod, and gives a new file
	// 100644 whatever its bit.
	{"chmod git does not see", func(w *world) {
		w.ws.Git("config", "core.fileMode", "false")
		f := w.tracked()
		fi, err := os.Lstat(w.ws.Path(f))
		if err != nil {
			w.t.Fatal(err)
		}
		w.ws.Chmod(f, fi.Mode().Perm()^0o111)
	}},
	// A file others may not read: a checkout would make it readable by
	// all.
	{"file in a submodule folder not checked out", func(w *world) {
		if w.unpopulated {
			w.ws.WriteFile(w.name("lib/dir "+w.name("")+"/u-"), "git does not see it\n")
		}
	}},
	{"private file", func(w *world) { w.ws.WriteFileMode(w.name("src/private-"), "secret\n", 0o600) }},
	// Names git refuses to put in an index (NTFS would take them for
	// .git): git status lists them, git add refuses them.
	{"name git refuses", func(w *world) {
		names := []string{".git.", "GIT~1", "src/.git ", "x/.GIT/config", "y/GIT~1/f", "z/.git./f",
			// a folder, or a file, named .git that is no repository:
			// git never lists what is in it
			"sub/.git/notes.txt", "plain/.git"}
		p := names[w.rng.IntN(len(names))]
		if _, err := os.Lstat(w.ws.Path(p)); err == nil {
			return
		}
		w.ws.WriteFile(p, "refused "+w.name("")+"\n")
	}},
	{"new executable git does not see", func(w *world) {
		w.ws.Git("config", "core.fileMode", "false")
		w.ws.WriteExecutable(w.name("src/x-"), "#!/bin/sh\n")
	}},
	{"symlink", func(w *world) { w.ws.Symlink("target-"+w.name(""), w.name("src/link-")) }},
	// Bytes git add converts and a checkout does not give back: CR bytes
	// in a file marked text (an untracked .gitattributes of its own
	// folder), and CRLF under core.autocrlf=input (the repository's
	// config, so the restored workspace has it too).
	{"CR bytes under a text attribute", func(w *world) {
		d := w.name("src/text-")
		w.ws.WriteFiles(map[string]string{d + "/.gitattributes": "*.bin text\n", d + "/f.bin": "a\r\nb\rc\n\x00"})
	}},
	{"CRLF edit under core.autocrlf=input", func(w *world) {
		w.ws.Git("config", "core.autocrlf", "input")
		w.ws.WriteFile(w.tracked(), "crlf "+w.name("")+"\r\n")
	}},
	{"assume-unchanged edit", func(w *world) { w.ws.HideEdit(w.tracked(), "--assume-unchanged", "hidden "+w.name("")+"\n") }},
	{"skip-worktree edit", func(w *world) { w.ws.HideEdit(w.tracked(), "--skip-worktree", "hidden "+w.name("")+"\n") }},
	{"outside the sparse cone", func(w *world) {
		if w.sparse() {
			w.ws.WriteFile(w.name("docs/outside-"), "outside the cone\n")
		}
	}},
}

func (w *world) sparse() bool {
	out, _ := w.ws.TryGit("config", "--get", "core.sparseCheckout")
	return strings.TrimSpace(out) == "true"
}

func (w *world) branch() string {
	b, err := w.ws.TryGit("symbolic-ref", "-q", "--short", "HEAD")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(b)
}

func roundTrip(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var repo *fixtures.Repo
	var p *Provider
	withSub := rng.IntN(3) == 0
	if withSub {
		repo, p, _ = submoduleWorkspaceNoAlloc(t)
	} else {
		repo, p = newProvider(t)
	}
	repo.WriteFiles(map[string]string{"src/a.txt": "a\n", "src/b.txt": "b\n", "src/c.txt": "c\n", "docs/d.txt": "d\n"})
	repo.Commit("files")
	w0 := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	w := &world{t: t, rng: rng, repo: repo, ws: &fixtures.Repo{T: t, Dir: w0.Path}, origBranch: w0.Branch}
	// One workspace in three with a submodule leaves it as allocate does,
	// not checked out: an empty folder git does not look into.
	if withSub && rng.IntN(3) == 0 {
		w.unpopulated = true
	} else if withSub {
		w.ws.Git("-c", "protocol.file.allow=always", "submodule", "--quiet", "update", "--init")
		w.sub = &fixtures.Repo{T: t, Dir: w.ws.Path("lib")}
		w.sub.Git("checkout", "--quiet", "-b", "work")
	}
	var res *RestoreResult
	for range rng.IntN(4) {
		w.do(historyStates[rng.IntN(len(historyStates))])
	}
	if rng.IntN(2) == 0 {
		w.do(operationStates[rng.IntN(len(operationStates))])
	} else if rng.IntN(3) == 0 {
		w.do(unbornStates[rng.IntN(len(unbornStates))])
	}
	for range rng.IntN(6) {
		w.do(worktreeStates[rng.IntN(len(worktreeStates))])
	}
	// One workspace in five has its folder moved away by hand before the
	// reclaim, git's entry left: what the folder held is the mover's, and
	// the entry's HEAD, index, refs and objects must come back (from the
	// salvage: what the undo window keeps of it is git's entry alone).
	gone := rng.IntN(5) == 0
	// What happens to the kept trash (the undo window): nothing, or
	// someone edits and commits in it before its purge, or its branch
	// moves before restore --from-trash.
	then := []string{"restore the salvage", "edit the kept trash, purge it, restore the salvage", "move the branch, restore from the trash"}[rng.IntN(3)]
	if gone {
		then = "restore the salvage"
	}
	before := observe(t, w.ws, w.sub)
	// A HEAD with no commit cannot be detached: the kept trash stays on
	// its branch, and a plain restore of the salvage would be refused
	// while it is kept (TestRestoreUnbornWhileTheTrashIsKept). Restore it
	// once the trash is deleted (at once, or by its purge).
	unborn := before.view["HEAD"] == "unborn"
	if unborn && strings.HasPrefix(then, "move") {
		then = "restore the salvage"
	}
	if gone {
		w.log = append(w.log, "folder moved away")
		if err := os.Rename(w.ws.Dir, filepath.Join(fixtures.TempDir(t), "moved-away")); err != nil {
			t.Fatal(err)
		}
		for k := range before.view {
			if k == "status" || strings.HasPrefix(k, "file ") {
				delete(before.view, k)
			}
		}
	}
	w.log = append(w.log, "then: "+then)
	t.Logf("states: %s", strings.Join(w.log, ", "))

	ro := ReclaimOptions{Binding: "T-1", Yes: true, SalvageSubmodules: true}
	if strings.HasPrefix(then, "edit") {
		ro.KeepTrash = time.Nanosecond // due at once
	}
	ro.DeleteTrash = unborn && then == "restore the salvage"
	rec, err := p.Reclaim(t.Context(), ro)
	if err != nil {
		t.Fatalf("reclaim: %v", err)
	}
	switch {
	case rec.TrashPath == "" && !ro.DeleteTrash:
		t.Fatalf("the reclaim kept no trash: %+v", rec)
	case strings.HasPrefix(then, "edit"):
		roundTripPurge(t, w, p, rec)
		return
	case strings.HasPrefix(then, "move") && before.view["HEAD symbolic"] == "refs/heads/"+w0.Branch:
		roundTripBranchMoved(t, w, p, before)
		return
	}
	if rec.SalvageRef == nil {
		// Nothing to keep: the workspace was clean, on its branch, which
		// the reclaim kept; everything is still reachable from it.
		if before.view["HEAD symbolic"] != "refs/heads/"+w0.Branch || repo.RevParse("refs/heads/"+w0.Branch) != before.view["HEAD"] {
			t.Fatalf("no salvage of a workspace at %s (%s)", before.view["HEAD"], before.view["HEAD symbolic"])
		}
		after := observe(t, repo, nil)
		for id := range before.objects {
			if !after.objects[id] {
				t.Errorf("object %s was reachable before the reclaim, not after", id)
			}
		}
		return
	}
	res, err = p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	t.Logf("restored %v; not restored %v", res.Restored, res.NotRestored)
	after := observe(t, &fixtures.Repo{T: t, Dir: res.Workspace.Path}, nil)
	if gone {
		for k := range after.view {
			if k == "status" || strings.HasPrefix(k, "file ") {
				delete(after.view, k)
			}
		}
	}
	if diff := cmp.Diff(before.view, after.view); diff != "" {
		t.Errorf("restored workspace differs (-before +after):\n%s", diff)
	}
	for id := range before.objects {
		if !after.objects[id] {
			t.Errorf("object %s was reachable before the reclaim, not after the restore", id)
		}
	}
}

func (w *world) do(s state) { w.log = append(w.log, s.name); s.apply(w) }

// roundTripPurge: someone opens the kept trash folder and makes more
// states there (on its detached HEAD); its purge must salvage them all:
// the latest salvage restores the trash as it was before the purge.
func roundTripPurge(t *testing.T, w *world, p *Provider, rec *ReclaimResult) {
	w.ws, w.sub, w.log = &fixtures.Repo{T: t, Dir: rec.TrashPath}, nil, nil
	// The history states want a clean tree, which the trash rarely is:
	// here a commit takes what is staged, on the detached HEAD.
	for range w.rng.IntN(5) {
		if w.rng.IntN(3) == 0 {
			w.do(trashCommit)
			continue
		}
		w.do(worktreeStates[w.rng.IntN(len(worktreeStates))])
	}
	t.Logf("in the kept trash: %s", strings.Join(w.log, ", "))
	before := observe(t, w.ws, nil)
	// A HEAD majlis detached, still where it was, stands for its branch.
	if r, err := p.claimOf("T-1", 1); err == nil {
		if ev := r.Events[EventReclaimed]; ev.Branch != "" && before.view["HEAD symbolic"] == "detached" && before.view["HEAD"] == ev.Head {
			before.view["HEAD symbolic"] = ev.Branch
		}
	}
	purged, err := p.PurgeDue(t.Context())
	if err != nil || len(purged.Purged) != 1 || len(purged.Left) != 0 {
		t.Fatalf("purge: %+v, %v", purged, err)
	}
	if _, err := os.Lstat(rec.TrashPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the trash is still there after its purge: %v", err)
	}
	if purged.Purged[0].SalvageRef == "" && rec.SalvageRef == nil {
		// Clean and untouched: its branch holds everything.
		after := observe(t, w.repo, nil)
		for id := range before.objects {
			if !after.objects[id] {
				t.Errorf("object %s was reachable before the purge, not after", id)
			}
		}
		return
	}
	res, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
	if err != nil {
		t.Fatalf("restore after the purge: %v", err)
	}
	after := observe(t, &fixtures.Repo{T: t, Dir: res.Workspace.Path}, nil)
	if diff := cmp.Diff(before.view, after.view); diff != "" {
		t.Errorf("restored workspace differs from the trash before its purge (-before +after):\n%s", diff)
	}
	for id := range before.objects {
		if !after.objects[id] {
			t.Errorf("object %s was reachable before the purge, not after the restore", id)
		}
	}
}

// trashCommit commits what is staged in a kept trash folder, and a new
// file, on its detached HEAD.
var trashCommit = state{"commit in the kept trash", func(w *world) {
	p := w.name("src/in-trash-")
	w.ws.WriteFile(p, "committed in the kept trash\n")
	w.ws.Git("add", "--", p)
	// Refused while a conflict is unresolved: the file stays staged.
	w.ws.TryGit("commit", "-q", "--no-verify", "-m", "made in the kept trash")
}}

// roundTripBranchMoved: the workspace's branch moves (a commit made on it
// in another worktree) while it waits in its kept trash; restore
// --from-trash gives it back on a detached HEAD where it was, everything
// else as it was, and leaves the branch where it moved to.
func roundTripBranchMoved(t *testing.T, w *world, p *Provider, before observation) {
	branch := strings.TrimPrefix(before.view["HEAD symbolic"], "refs/heads/")
	other := &fixtures.Repo{T: t, Dir: filepath.Join(fixtures.TempDir(t), "other")}
	w.repo.Git("worktree", "add", "-q", other.Dir, branch)
	other.WriteFile("moved-elsewhere.txt", "a commit on the branch, made elsewhere\n")
	moved := other.Commit("moved the branch")
	w.repo.Git("worktree", "remove", "--force", other.Dir)
	ws, err := p.RestoreFromTrash(t.Context(), "T-1", "")
	if err != nil {
		t.Fatalf("restore --from-trash: %v", err)
	}
	if ws.Branch != "" || ws.DetachedFrom != branch {
		t.Errorf("restored on %q, detached from %q; want a detached HEAD naming %s", ws.Branch, ws.DetachedFrom, branch)
	}
	after := observe(t, w.ws, w.sub)
	want := before.view
	want["HEAD symbolic"] = "detached"
	if diff := cmp.Diff(want, after.view); diff != "" {
		t.Errorf("restored workspace differs (-before +after):\n%s", diff)
	}
	for id := range before.objects {
		if !after.objects[id] {
			t.Errorf("object %s was reachable before the reclaim, not after the restore", id)
		}
	}
	if got := w.repo.RevParse("refs/heads/" + branch); got != moved {
		t.Errorf("branch %s is at %s, want %s", branch, got, moved)
	}
}

// submoduleWorkspaceNoAlloc is submoduleWorkspace without the allocation.
func submoduleWorkspaceNoAlloc(t *testing.T) (*fixtures.Repo, *Provider, struct{}) {
	t.Helper()
	lib := fixtures.NewRepo(t)
	repo := fixtures.NewRepoAt(t, filepath.Join(fixtures.TempDir(t), "app"))
	repo.AddSubmodule("lib", lib)
	if _, err := Init(t.Context(), repo.Dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := Open(t.Context(), repo.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return repo, p, struct{}{}
}

type observation struct {
	view    map[string]string
	objects map[string]bool
}

// observe records what the round trip must keep of the worktree ws (and
// of its submodule sub, whose objects only).
func observe(t *testing.T, ws, sub *fixtures.Repo) observation {
	t.Helper()
	o := observation{view: map[string]string{}, objects: map[string]bool{}}
	head, err := ws.TryGit("rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		head = "unborn" // a branch with no commit yet, or deleted under the worktree
	}
	o.view["HEAD"] = strings.TrimSpace(head)
	sym, err := ws.TryGit("symbolic-ref", "-q", "HEAD")
	if err != nil {
		sym = "detached"
	}
	o.view["HEAD symbolic"] = strings.TrimSpace(sym)
	o.view["index"] = ws.Git("ls-files", "-s", "-v")
	o.view["status"] = ws.Git("status", "--porcelain=v2", "--untracked-files=all", "--ignore-submodules=all")
	o.view["worktree refs"] = ws.Git("for-each-ref", "--format=%(refname) %(objectname)", "refs/worktree", "refs/bisect", "refs/rewritten")
	gitDir := ws.GitDir()
	var ops []string
	for _, f := range []string{"rebase-merge", "rebase-apply", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "BISECT_START", "ORIG_HEAD"} {
		if b, err := os.ReadFile(filepath.Join(gitDir, f)); err == nil {
			if f == "ORIG_HEAD" && strings.TrimSpace(string(b)) == o.view["HEAD"] {
				continue // git worktree add leaves it at HEAD: no information
			}
			ops = append(ops, f+"="+strings.TrimSpace(string(b)))
		} else if _, err := os.Stat(filepath.Join(gitDir, f)); err == nil {
			ops = append(ops, f+"/")
		}
	}
	o.view["operation"] = strings.Join(ops, "\n")
	subs := map[string]bool{}
	for _, rec := range strings.Split(ws.Git("ls-files", "-s"), "\n") {
		if strings.HasPrefix(rec, "160000 ") {
			_, path, _ := strings.Cut(rec, "\t")
			subs[path] = true
		}
	}
	err = filepath.WalkDir(ws.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(ws.Dir, p)
		rel = filepath.ToSlash(rel)
		// A checked-out submodule's files are its own; those of a folder
		// not checked out are the workspace's.
		_, populated := os.Lstat(filepath.Join(p, ".git"))
		if rel == ".git" || subs[rel] && populated == nil {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			o.view["file "+rel] = "symlink " + target
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			o.view["file "+rel] = fmt.Sprintf("%o %q", fi.Mode().Perm()&0o111, b)
			if perm := fi.Mode().Perm(); perm&0o044 != 0o044 {
				// Private: the exact bits must come back.
				o.view["file "+rel] += fmt.Sprintf(" private %04o", perm)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	for _, r := range []*fixtures.Repo{ws, sub} {
		if r == nil {
			continue
		}
		for _, line := range strings.Split(r.Git("rev-list", "--objects", "--all", "--reflog", "--indexed-objects"), "\n") {
			if id, _, _ := strings.Cut(line, " "); id != "" {
				o.objects[id] = true
			}
		}
	}
	return o
}

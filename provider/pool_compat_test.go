package provider

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/wire"
)

// poolFormatCommit is the commit that brought the warm pool and its
// claim format majlis.claim/2; the majlis before it reads only
// majlis.claim/1.
const poolFormatCommit = "3987e5c"

// TestPoolPreviousMajlis: the majlis built from the commit before the
// pool's state format, run on a repository with a filled pool, reports
// each pooled worktree's claim as damaged naming both formats, and acts
// on none: reclaim and gc refuse, allocation over a pooled worktree or
// inside it without --allow-nested is refused, and every ref, worktree,
// record and file of the pool is as it was. With --allow-nested it does
// allocate inside one (docs/pool.md says so): the newer majlis then
// never hands that pooled worktree out (set aside) and drain leaves it,
// and the workspace inside stays whole. The other pooled worktree is
// handed out as usual.
func TestPoolPreviousMajlis(t *testing.T) {
	t.Parallel()
	old := fixtures.PreviousBinary(t, poolFormatCommit+"^")
	repo, p, _, b := poolScene(t, 2)
	l, err := p.PoolList()
	if err != nil || len(l.Pool) != 2 {
		t.Fatalf("pool: %+v, %v", l, err)
	}
	first, second := l.Pool[0], l.Pool[1]
	before := poolSnapshot(t, p, repo, first, second)

	r := crashExec(t, old, repo.Dir, nil, "doctor", "--json")
	for _, w := range l.Pool {
		if !oldReportsDamaged(t, r, w.Name) {
			t.Errorf("the previous majlis does not report %s as damaged in both formats\n%s", w.Name, r)
		}
	}
	refusals := [][]string{
		{"workspace", "reclaim", first.Name, "--yes", "--json"},
		{"gc", "--preview", "--json"},
		{"workspace", "allocate", "T-over", "--path", first.Path, "--json"},
		{"workspace", "allocate", "T-inside", "--path", filepath.Join(first.Path, "x"), "--json"},
	}
	for _, args := range refusals {
		if r := crashExec(t, old, repo.Dir, nil, args...); r.exit == 0 || r.errorCode() == "" {
			t.Errorf("the previous majlis did not refuse\n%s", r)
		}
	}
	if r := crashExec(t, old, repo.Dir, nil, "workspace", "list", "--all", "--json"); r.exit != 0 || !strings.Contains(r.stdout, first.Name) {
		t.Errorf("the previous majlis's list\n%s", r)
	}
	if after := poolSnapshot(t, p, repo, first, second); !maps.Equal(before, after) {
		t.Fatalf("the previous majlis changed something:\n%s", snapshotDiff(before, after))
	}

	// --allow-nested: the previous majlis allocates inside the second.
	inside := filepath.Join(second.Path, "x")
	r = crashExec(t, old, repo.Dir, nil, "workspace", "allocate", "T-nested", "--allow-nested", "--path", inside, "--json")
	if r.exit != 0 {
		t.Fatalf("the previous majlis refuses --allow-nested inside a pooled worktree (docs/pool.md says it allocates):\n%s", r)
	}
	nestedFiles := treeFiles(t, inside)
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b})
	if ws.Pool == nil || !ws.Pool.Used || ws.Pool.Name != first.Name {
		t.Errorf("the pooled worktree the previous majlis left alone was not handed out: %+v", ws.Pool)
	}
	ws = mustAllocate(t, p, AllocateOptions{Binding: "T-2", Base: b})
	if ws.Pool == nil || ws.Pool.Used || ws.Pool.Reason != "checks_failed" {
		t.Errorf("the pooled worktree with a workspace inside: %+v", ws.Pool)
	}
	if d, err := p.PoolDrain(t.Context(), PoolDrainOptions{}); err != nil || len(d.Drained) != 0 || len(d.Left) != 1 {
		t.Errorf("drain: %+v, %v", d, err)
	}
	if l, _ := p.PoolList(); len(l.Pool) != 1 || l.Pool[0].State != wire.PoolAside {
		t.Errorf("pool: %+v", l)
	}
	st := strings.TrimSpace(gitOut(t, inside, "status", "--porcelain", "--ignored", "-uall"))
	if got := treeFiles(t, inside); st != "" || !maps.Equal(got, nestedFiles) {
		t.Errorf("the workspace inside the pooled worktree changed: status %q, files %v, were %v", st, got, nestedFiles)
	}
}

// oldReportsDamaged reports whether the previous majlis's doctor output
// has a record_damaged finding for binding naming both claim formats.
func oldReportsDamaged(t *testing.T, r crashRun, binding string) bool {
	var out struct {
		Doctor struct {
			Findings []struct {
				Code, Binding, Message string
			} `json:"findings"`
		} `json:"doctor"`
	}
	r.decode(t, &out)
	for _, f := range out.Doctor.Findings {
		if f.Code == "record_damaged" && f.Binding == binding &&
			strings.Contains(f.Message, `unknown format "majlis.claim/2"`) && strings.Contains(f.Message, `"majlis.claim/1"`) {
			return true
		}
	}
	return false
}

// poolSnapshot maps what must survive an older majlis to its content:
// every ref, git's worktrees, every file of the claims folder, and every
// file (and git entry) of the pooled worktrees.
func poolSnapshot(t *testing.T, p *Provider, repo *fixtures.Repo, pooled ...PoolWorktree) map[string]string {
	t.Helper()
	out := map[string]string{
		"refs":      repo.Git("for-each-ref", "--format=%(refname) %(objectname)"),
		"worktrees": repo.Git("worktree", "list", "--porcelain"),
	}
	claims := filepath.Dir(p.records.Dir("x"))
	for k, v := range treeFiles(t, claims) {
		out["claims/"+k] = v
	}
	for _, w := range pooled {
		for k, v := range treeFiles(t, w.Path) {
			out[w.Name+"/"+k] = v
		}
		dotgit, err := os.ReadFile(filepath.Join(w.Path, ".git"))
		if err != nil {
			t.Fatal(err)
		}
		entry := strings.TrimSpace(strings.TrimPrefix(string(dotgit), "gitdir:"))
		for k, v := range treeFiles(t, entry) {
			out[w.Name+"/.git/"+k] = v
		}
	}
	return out
}

// snapshotDiff names what differs between two snapshots.
func snapshotDiff(a, b map[string]string) string {
	var d []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			d = append(d, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "+"+k)
		}
	}
	return strings.Join(d, "\n")
}

package gitops

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Merged answers whether a branch's work is in another branch, for gc:
// merged by a merge or a fast-forward (its tip is an ancestor), or
// squash-merged (one commit on the other branch, since their merge base,
// carries the same change: the same patch-id, or the tip's very tree).
// It is conservative: anything it cannot establish answers "not merged".

// How a branch was found merged.
const (
	MergedAncestor = "ancestor" // its tip is reachable from the target
	MergedTree     = "tree"     // a commit of the target has the tip's tree
	MergedPatchID  = "patch-id" // a commit of the target has the branch's whole change as its patch
)

// MaxSquashScan bounds how many commits of the target, since the merge
// base, MergedInto compares with a branch: beyond, it answers not merged.
const MaxSquashScan = 1000

// MergedInto reports how tip is merged into target (both commit ids):
// MergedAncestor, MergedTree, MergedPatchID, or "" when it is not, or
// when that cannot be told (a history too long to scan, no merge base).
func (r *Reader) MergedInto(ctx context.Context, tip, target string) (string, error) {
	if ok, err := r.IsAncestor(ctx, tip, target); err != nil {
		return "", err
	} else if ok {
		return MergedAncestor, nil
	}
	o := r.opts(Cmd{ReadOnly: true, OKCodes: []int{1}})
	res, err := Run(ctx, r.dir, o, "merge-base", tip, target)
	if err != nil {
		return "", err
	}
	base := strings.TrimSpace(string(res.Stdout))
	if res.Code != 0 || !IsObjectID(base) {
		return "", nil // unrelated histories
	}
	// The target's commits since the merge base, with their trees.
	res, err = Run(ctx, r.dir, r.opts(Cmd{ReadOnly: true}), "rev-list", "--format=%H %T",
		"--max-count="+strconv.Itoa(MaxSquashScan+1), base+".."+target)
	if err != nil {
		return "", err
	}
	var commits []string
	trees := map[string]bool{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if strings.HasPrefix(line, "commit ") || line == "" {
			continue
		}
		c, t, ok := strings.Cut(line, " ")
		if !ok || !IsObjectID(c) || !IsObjectID(t) {
			return "", fmt.Errorf("gitops: rev-list printed %q", line)
		}
		commits = append(commits, c)
		trees[t] = true
	}
	if len(commits) > MaxSquashScan || len(commits) == 0 {
		return "", nil
	}
	tipTree, err := r.treeOf(ctx, tip)
	if err != nil {
		return "", err
	}
	if trees[tipTree] {
		return MergedTree, nil
	}
	// The branch's whole change, as one patch-id.
	res, err = Run(ctx, r.dir, r.opts(Cmd{ReadOnly: true}), "diff-tree", "-p", "--no-color", "--no-ext-diff", "--no-textconv", base, tip)
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(res.Stdout)) == 0 {
		return "", nil // no change at all: nothing to compare, keep it
	}
	want, err := r.patchIDs(ctx, res.Stdout)
	if err != nil || len(want) != 1 {
		return "", err
	}
	var branchID string
	for id := range want {
		branchID = id
	}
	// Each target commit's own patch-id.
	res, err = Run(ctx, r.dir, r.opts(Cmd{ReadOnly: true, Stdin: []byte(strings.Join(commits, "\n") + "\n")}),
		"diff-tree", "--stdin", "-p", "--no-color", "--no-ext-diff", "--no-textconv", "-r", "--root")
	if err != nil {
		return "", err
	}
	got, err := r.patchIDs(ctx, res.Stdout)
	if err != nil {
		return "", err
	}
	if got[branchID] {
		return MergedPatchID, nil
	}
	return "", nil
}

// patchIDs runs `git patch-id --stable` on a patch stream and returns the
// patch ids it printed.
func (r *Reader) patchIDs(ctx context.Context, patch []byte) (map[string]bool, error) {
	res, err := Run(ctx, r.dir, r.opts(Cmd{ReadOnly: true, Stdin: patch}), "patch-id", "--stable")
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		if id, _, ok := strings.Cut(line, " "); ok {
			out[id] = true
		}
	}
	return out, nil
}

func (r *Reader) treeOf(ctx context.Context, commit string) (string, error) {
	res, err := Run(ctx, r.dir, r.opts(Cmd{ReadOnly: true}), "rev-parse", "--verify", "--end-of-options", commit+"^{tree}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

// A RefCommit is a ref with what its commit is made of.
type RefCommit struct {
	Name    string
	ID      string
	Tree    string
	Parents []string
	When    time.Time // committer date
}

// RefCommits lists the refs under prefix that point at commits, with each
// commit's tree, parents and committer date, sorted by name.
func (r *Reader) RefCommits(ctx context.Context, prefix string) ([]RefCommit, error) {
	if !strings.HasPrefix(prefix, "refs/") || !strings.HasSuffix(prefix, "/") || strings.ContainsAny(prefix, "*?[\\ \x00\n") {
		return nil, fmt.Errorf("gitops: ref prefix %q must be a hierarchy such as refs/majlis/", prefix)
	}
	res, err := Run(ctx, r.dir, r.opts(Cmd{ReadOnly: true}), "for-each-ref",
		"--format=%(objecttype) %(objectname) %(tree) %(committerdate:unix) %(refname) %(parent)", "--", prefix)
	if err != nil {
		return nil, err
	}
	var out []RefCommit
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 || f[0] != "commit" {
			continue
		}
		sec, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("gitops: for-each-ref printed %q", line)
		}
		out = append(out, RefCommit{Name: f[4], ID: f[1], Tree: f[2], Parents: f[5:], When: time.Unix(sec, 0).UTC()})
	}
	return out, nil
}

// A CommitShape is what a commit is made of, without its message, author
// or dates: its tree and its parents.
type CommitShape struct {
	Tree    string
	Parents []string
}

// CommitShapes returns the tree and parents of each of the commits ids.
func (r *Reader) CommitShapes(ctx context.Context, ids []string) (map[string]CommitShape, error) {
	out := map[string]CommitShape{}
	if len(ids) == 0 {
		return out, nil
	}
	for _, id := range ids {
		if !IsObjectID(id) {
			return nil, fmt.Errorf("gitops: %q is not a full object id", id)
		}
	}
	res, err := Run(ctx, r.dir, r.opts(Cmd{ReadOnly: true, Stdin: []byte(strings.Join(ids, "\n") + "\n")}),
		"rev-list", "--no-walk=unsorted", "--stdin", "--format=%H %T %P")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if strings.HasPrefix(line, "commit ") || line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			return nil, fmt.Errorf("gitops: rev-list printed %q", line)
		}
		out[f[0]] = CommitShape{Tree: f[1], Parents: f[2:]}
	}
	return out, nil
}

// Upstream returns the full name of the ref that branch (a name under
// refs/heads/, without the prefix) tracks, as git's configuration says
// (branch.<name>.remote and .merge), or "" when it tracks none. The ref
// may not exist: callers resolve it and treat a failure as a doubt.
func (r *Reader) Upstream(ctx context.Context, branch string) (string, error) {
	if branch == "" || strings.ContainsAny(branch, "\x00\n*?[\\ ") {
		return "", fmt.Errorf("gitops: bad branch name %q", branch)
	}
	res, err := Run(ctx, r.dir, r.opts(Cmd{ReadOnly: true}), "for-each-ref", "--format=%(upstream)", "--", "refs/heads/"+branch)
	if err != nil {
		return "", err
	}
	up := strings.TrimSpace(string(res.Stdout))
	if strings.ContainsAny(up, "\n") {
		return "", Unexpected("git for-each-ref", "%q names more than one upstream", up)
	}
	return up, nil
}

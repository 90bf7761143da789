package provider

// Submodule keeping. A checked-out submodule of a workspace keeps its
// history (commits, branches, tags, stash) in the workspace's own git
// directory, <common dir>/worktrees/<id>/modules/, which removing the
// workspace deletes: a reclaim copies it into the repository first.

import (
	"context"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/gitops/salvage"
)

// keepSubmodules copies into the repository, under
// refs/majlis/salvage/<binding>/modules/<k>/<path>/, the HEAD, branches,
// tags, majlis refs, every stash entry (stash/<i> for stash@{i}) and the
// commits only its reflogs or per-worktree refs hold (pins/<i>) of every
// checked-out submodule of the workspace, after
// salvaging (with salvageDirty) the uncommitted work of dirty ones into
// their own refs/majlis/salvage/<binding>/<n>. It returns "path prefix"
// lines for the result.
func (p *Provider) keepSubmodules(ctx context.Context, rec *claimRecord, dirty []string, salvageDirty bool) ([]string, error) {
	c := rec.Claim
	owned, err := ownedSubmodules(ctx, c.Path)
	if err != nil || len(owned) == 0 {
		return nil, err
	}
	isDirty := map[string]bool{}
	for _, d := range dirty {
		isDirty[filepath.Join(c.Path, filepath.FromSlash(d))] = true
	}
	dirs := make([]string, 0, len(owned))
	for d := range owned {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	base, k, err := nextModulesSalvage(ctx, c)
	if err != nil {
		return nil, err
	}
	var kept []string
	for _, dir := range dirs {
		rel, _ := filepath.Rel(c.Path, dir)
		if isDirty[dir] && salvageDirty {
			snap, err := salvage.Snapshot(ctx, dir, "majlis reclaim of workspace "+c.Binding+", submodule "+filepath.ToSlash(rel))
			if err != nil {
				return nil, err
			}
			if !snap.Clean {
				ref := SalvagePrefix + c.Binding + "/" + strconv.FormatInt(time.Now().UnixNano(), 10)
				if err := gitops.UpdateRefCreate(ctx, dir, ref, snap.Commit); err != nil {
					return nil, err
				}
			}
		}
		prefix := base + strconv.Itoa(k) + "/" + refSafe(filepath.ToSlash(rel))
		// Every stash entry, not only stash@{0}: the older ones live in
		// the stash's reflog, which no refspec names.
		stashes, err := gitops.StashEntries(dir)
		if err != nil {
			return nil, err
		}
		specs := []string{"+HEAD:" + prefix + "/HEAD", "+refs/heads/*:" + prefix + "/heads/*",
			"+refs/tags/*:" + prefix + "/tags/*", "+refs/majlis/*:" + prefix + "/majlis/*"}
		for i, id := range stashes {
			specs = append(specs, "+"+id+":"+prefix+"/stash/"+strconv.Itoa(i))
		}
		// Commits that only the submodule's reflogs, per-worktree refs or
		// an interrupted operation hold, as salvage finds them for the
		// workspace itself.
		sv, err := salvage.SurveyWorktree(ctx, dir)
		if err != nil {
			return nil, err
		}
		for i, pin := range sv.Pins {
			if pin.Source != "HEAD" { // HEAD is fetched above
				specs = append(specs, "+"+pin.Commit+":"+prefix+"/pins/"+strconv.Itoa(i))
			}
		}
		if err := gitops.FetchInto(ctx, c.CommonDir, dir, specs...); err != nil {
			return nil, err
		}
		kept = append(kept, filepath.ToSlash(rel)+" "+prefix)
	}
	return kept, nil
}

// refSafe turns a path into ref name components: anything but letters,
// digits, '-' and '_' (and '.' inside a component) becomes '_'.
func refSafe(path string) string {
	parts := strings.Split(path, "/")
	for i, part := range parts {
		b := []byte(part)
		for j, ch := range b {
			ok := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.' && j > 0
			if !ok {
				b[j] = '_'
			}
		}
		s := strings.TrimSuffix(strings.ReplaceAll(string(b), "..", "__"), ".lock")
		if s == "" || strings.HasSuffix(s, ".") {
			s += "_"
		}
		parts[i] = s
	}
	return strings.Join(parts, "/")
}

// nextModulesSalvage returns where the submodules of c's binding are
// salvaged (refs/majlis/salvage/<binding>/modules/) and the number of the
// next salvage there: one more than the highest taken.
func nextModulesSalvage(ctx context.Context, c Claim) (string, int, error) {
	reader, err := gitops.OpenReader(ctx, c.CommonDir)
	if err != nil {
		return "", 0, err
	}
	base := SalvagePrefix + c.Binding + "/modules/"
	refs, err := reader.Refs(ctx, base)
	if err != nil {
		return "", 0, err
	}
	k := 0
	for _, r := range refs {
		n, _, _ := strings.Cut(strings.TrimPrefix(r.Name, base), "/")
		if v, err := strconv.Atoi(n); err == nil && v > k {
			k = v
		}
	}
	return base, k + 1, nil
}

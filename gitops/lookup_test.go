package gitops

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

func TestReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		setup     func(r *fixtures.Repo)
		inProcess bool
	}{
		{"go-git", func(r *fixtures.Repo) {}, true},
		{"worktreeConfig falls back to git", func(r *fixtures.Repo) {
			r.Config("core.repositoryFormatVersion", "1")
			r.Config("extensions.worktreeConfig", "true")
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := fixtures.NewRepo(t)
			first := r.Head()
			second := r.Commit("second")
			r.Git("tag", "light", first)
			r.Git("tag", "-a", "-m", "annotated", "annotated", second)
			r.Git("branch", "side", first)
			r.Git("checkout", "--quiet", "side")
			sideHead := r.Commit("on side")
			r.Git("checkout", "--quiet", "main")
			r.Git("update-ref", "refs/majlis/salvage/T-14/1", first)
			r.Git("update-ref", "refs/majlis/salvage/T-14/2", second)
			r.Git("update-ref", "refs/majlis/salvage/T-140/1", sideHead)
			r.Git("update-ref", "refs/majlis-other/x", first)
			r.Git("symbolic-ref", "refs/majlis/sym", "refs/heads/side")
			// A branch whose name looks like an abbreviated id: git prefers
			// the ref, so must ResolveCommit.
			short := second[:7]
			r.Git("branch", short, first)
			linked := r.NewWorktree("linked")
			linkedHead := linked.Commit("in linked worktree")
			tt.setup(r)

			for _, dir := range []string{r.Dir, r.Path(".git"), linked.Dir} {
				rd, err := OpenReader(ctx, dir)
				if err != nil {
					t.Fatal(err)
				}
				if rd.InProcess() != tt.inProcess {
					t.Errorf("OpenReader(%s).InProcess() = %v, want %v", dir, rd.InProcess(), tt.inProcess)
				}
			}
			rd, err := OpenReader(ctx, r.Dir)
			if err != nil {
				t.Fatal(err)
			}
			resolve := []struct {
				rev  string
				want string
			}{
				{"HEAD", second},
				{"main", second},
				{"refs/heads/main", second},
				{"heads/main", second},
				{"light", first},
				{"annotated", second},
				{"refs/tags/annotated", second},
				{second, second},
				{short, first},
				{second[:10], second},
				{"HEAD~1", first},
				{"side^", first},
				{"main@{0}", second},
				{"refs/majlis/sym", sideHead},
				{"linked", linkedHead},
			}
			for _, c := range resolve {
				got, err := rd.ResolveCommit(ctx, c.rev)
				if err != nil || got != c.want {
					t.Errorf("ResolveCommit(%q) = %q, %v; want %q", c.rev, got, err, c.want)
				}
			}
			for _, rev := range []string{"", "no-such-branch", "HEAD:README.md", second + "^{tree}", "0000000000000000000000000000000000000000", "-h", "refs/heads/../x", "FETCH_HEAD"} {
				if got, err := rd.ResolveCommit(ctx, rev); !errorsIs(err, ErrUnknownRevision) {
					t.Errorf("ResolveCommit(%q) = %q, %v; want ErrUnknownRevision", rev, got, err)
				}
			}

			// HEAD is per worktree.
			lrd, err := OpenReader(ctx, linked.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := lrd.ResolveCommit(ctx, "HEAD"); err != nil || got != linkedHead {
				t.Errorf("HEAD in the linked worktree = %q, %v; want %q", got, err, linkedHead)
			}

			refs, err := rd.Refs(ctx, "refs/majlis/salvage/T-14/")
			if err != nil {
				t.Fatal(err)
			}
			want := []Ref{{"refs/majlis/salvage/T-14/1", first}, {"refs/majlis/salvage/T-14/2", second}}
			if diff := cmp.Diff(want, refs); diff != "" {
				t.Errorf("Refs mismatch (-want +got):\n%s", diff)
			}
			refs, err = rd.Refs(ctx, "refs/majlis/")
			if err != nil {
				t.Fatal(err)
			}
			if len(refs) != 4 || refs[3] != (Ref{"refs/majlis/sym", sideHead}) {
				t.Errorf("Refs(refs/majlis/) = %v", refs)
			}
			if refs, err := rd.Refs(ctx, "refs/nothing/"); err != nil || refs == nil || len(refs) != 0 {
				t.Errorf("Refs of an empty hierarchy = %#v, %v; want an empty list", refs, err)
			}
			for _, bad := range []string{"refs/majlis", "majlis/", "refs/*/"} {
				if _, err := rd.Refs(ctx, bad); err == nil {
					t.Errorf("Refs(%q) succeeded", bad)
				}
			}

			ancestry := []struct {
				a, d string
				want bool
			}{
				{first, second, true},
				{second, first, false},
				{first, first, true},
				{first, sideHead, true},
				{second, sideHead, false},
				{"main", linkedHead, true},
			}
			for _, c := range ancestry {
				got, err := rd.IsAncestor(ctx, c.a, c.d)
				if err != nil || got != c.want {
					t.Errorf("IsAncestor(%s, %s) = %v, %v; want %v", c.a, c.d, got, err, c.want)
				}
			}
			if _, err := rd.IsAncestor(ctx, "nope", first); !errorsIs(err, ErrUnknownRevision) {
				t.Errorf("IsAncestor of an unknown revision: %v", err)
			}

			// Safe for concurrent use.
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if got, err := rd.ResolveCommit(ctx, "annotated"); err != nil || got != second {
						t.Errorf("concurrent ResolveCommit = %q, %v", got, err)
					}
					if _, err := rd.Refs(ctx, "refs/majlis/"); err != nil {
						t.Error(err)
					}
					if ok, err := rd.IsAncestor(ctx, first, second); err != nil || !ok {
						t.Errorf("concurrent IsAncestor = %v, %v", ok, err)
					}
				}()
			}
			wg.Wait()
		})
	}
}

func TestReaderDeepHistory(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	root := r.Head()
	// More commits than the in-process walk visits: git answers.
	var stream []byte
	stream = append(stream, "reset refs/heads/deep\nfrom "+root+"\n"...)
	for i := 0; i < maxAncestryWalk+10; i++ {
		stream = append(stream, "commit refs/heads/deep\ncommitter t <t@t> 1700000000 +0000\ndata 0\n\n"...)
	}
	if out, err := fixtures.GitStdin(t, r.Dir, stream, "fast-import", "--quiet"); err != nil {
		t.Fatal(out, err)
	}
	rd, err := OpenReader(ctx, r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := rd.IsAncestor(ctx, root, "deep"); err != nil || !ok {
		t.Errorf("IsAncestor(root, deep) = %v, %v; want true", ok, err)
	}
	if ok, err := rd.IsAncestor(ctx, "deep", root); err != nil || ok {
		t.Errorf("IsAncestor(deep, root) = %v, %v; want false", ok, err)
	}
	side := r.Commit("unrelated to deep")
	if ok, err := rd.IsAncestor(ctx, side, "deep"); err != nil || ok {
		t.Errorf("IsAncestor(side, deep) = %v, %v; want false", ok, err)
	}
}

func TestOpenReaderOutsideRepository(t *testing.T) {
	t.Parallel()
	_, err := OpenReader(ctx, fixtures.TempDir(t))
	gitError(t, err, ErrNotARepository)
}

func TestParseRefList(t *testing.T) {
	t.Parallel()
	const a = "78ab8055022746ff01257016035ce28d7608104d"
	tests := []struct {
		in   string
		want []Ref
		ok   bool
	}{
		{"", []Ref{}, true},
		{a + " refs/majlis/b\n" + a + " refs/majlis/a\n", []Ref{{"refs/majlis/a", a}, {"refs/majlis/b", a}}, true},
		{a + " refs/majlis/a", nil, false},
		{"78ab refs/majlis/a\n", nil, false},
		{a + " HEAD\n", nil, false},
		{a + "\n", nil, false},
		{a + " refs/a b\n", nil, false},
	}
	for _, tt := range tests {
		got, err := parseRefList([]byte(tt.in))
		if (err == nil) != tt.ok {
			t.Errorf("parseRefList(%q) error = %v, want ok %v", tt.in, err, tt.ok)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseRefList(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

package gitops

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

// brief is the part of a status entry a test can predict (ids vary).
type brief struct {
	Kind      string
	XY        string
	Sub       string
	Modes     string // head index worktree, for tracked entries
	Path      string
	OrigPath  string
	Submodule bool
}

func briefs(s *Status) []brief {
	var out []brief
	for _, e := range s.Entries {
		b := brief{Kind: e.Kind.String(), Path: e.Path, OrigPath: e.OrigPath}
		if e.Kind != Untracked && e.Kind != Ignored {
			b.XY = string([]byte{e.X, e.Y})
			b.Sub = e.Submodule.String()
		}
		if e.Kind == Ordinary || e.Kind == RenamedOrCopied {
			b.Modes = e.HeadMode.String() + " " + e.IndexMode.String() + " " + e.WorktreeMode.String()
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func TestReadStatus(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	for _, f := range []string{"modified", "staged", "both", "deleted", "removed", "renamed", "typechange", "chmod"} {
		r.WriteFile(f+".txt", f+"\n")
	}
	r.WriteGitignore("build/", "*.log")
	r.Commit("files")

	r.WriteFile("modified.txt", "changed\n")
	r.WriteFile("staged.txt", "changed\n")
	r.Git("add", "staged.txt")
	r.WriteFile("both.txt", "staged\n")
	r.Git("add", "both.txt")
	r.WriteFile("both.txt", "and again\n")
	r.Remove("deleted.txt")
	r.Git("rm", "--quiet", "removed.txt")
	r.WriteFile("added.txt", "new\n")
	r.Git("add", "added.txt")
	r.Git("mv", "renamed.txt", "renamed-to.txt")
	r.Symlink("README.md", "typechange.txt")
	r.Chmod("chmod.txt", 0o755)
	r.WriteFile("untracked/deep/file.txt", "u\n")
	r.WriteFile("build/out.o", "ignored\n")
	r.WriteFile("debug.log", "ignored\n")
	for _, name := range fixtures.OddNames() {
		r.WriteFile("odd/"+name, name)
	}

	const f, x, l = "100644", "100755", "120000"
	tracked := func(xy, path, modes string) brief {
		return brief{Kind: "ordinary", XY: xy, Sub: "N...", Modes: modes, Path: path}
	}
	want := []brief{
		{Kind: "ignored", Path: "build/out.o"},
		{Kind: "ignored", Path: "debug.log"},
		tracked("A.", "added.txt", "000000 "+f+" "+f),
		tracked("MM", "both.txt", f+" "+f+" "+f),
		tracked(".M", "chmod.txt", f+" "+f+" "+x),
		tracked(".D", "deleted.txt", f+" "+f+" 000000"),
		tracked(".M", "modified.txt", f+" "+f+" "+f),
		tracked("D.", "removed.txt", f+" 000000 000000"),
		{Kind: "renamed-or-copied", XY: "R.", Sub: "N...", Modes: f + " " + f + " " + f, Path: "renamed-to.txt", OrigPath: "renamed.txt"},
		tracked("M.", "staged.txt", f+" "+f+" "+f),
		tracked(".T", "typechange.txt", f+" "+f+" "+l),
		{Kind: "untracked", Path: "untracked/deep/file.txt"},
	}
	for _, name := range fixtures.OddNames() {
		want = append(want, brief{Kind: "untracked", Path: "odd/" + name})
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Path < want[j].Path })

	index := r.IndexBytes()
	got, err := ReadStatus(ctx, r.Dir, StatusOptions{Ignored: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, briefs(got)); diff != "" {
		t.Errorf("ReadStatus mismatch (-want +got):\n%s", diff)
	}
	if got.Head != r.Head() || got.Branch != "main" || got.Detached {
		t.Errorf("head = %q branch = %q detached = %v, want %s main false", got.Head, got.Branch, got.Detached, r.Head())
	}
	wantCounts := Counts{Modified: 4, Added: 1, Deleted: 2, Renamed: 1, TypeChanged: 1,
		Untracked: 1 + len(fixtures.OddNames()), Ignored: 2, Staged: 5}
	if diff := cmp.Diff(wantCounts, got.Counts()); diff != "" {
		t.Errorf("Counts mismatch (-want +got):\n%s", diff)
	}
	if got.Clean() {
		t.Errorf("Clean() = true for a dirty worktree")
	}
	fixtures.SameBytes(t, "index", index, r.IndexBytes())

	// Without the option, ignored files are not listed.
	got, err = ReadStatus(ctx, r.Dir, StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := got.Counts().Ignored; n != 0 {
		t.Errorf("ReadStatus without Ignored listed %d ignored files", n)
	}

	// Ids are those of HEAD and the index.
	for _, e := range got.Entries {
		if e.Path == "staged.txt" {
			if e.HeadID != r.RevParse("HEAD:staged.txt") || e.IndexID != r.RevParse(":staged.txt") {
				t.Errorf("staged.txt ids %s %s", e.HeadID, e.IndexID)
			}
		}
	}
}

func TestReadStatusClean(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.WriteGitignore("*.o")
	r.Commit("ignore")
	r.WriteFile("x.o", "ignored")
	got, err := ReadStatus(ctx, r.Dir, StatusOptions{Ignored: true})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Clean() || got.Counts().Total() != 0 || got.Counts().Ignored != 1 {
		t.Errorf("status of a clean worktree with an ignored file: %+v", got)
	}
	unborn := fixtures.InitRepo(t, fixtures.TempDir(t))
	got, err = ReadStatus(ctx, unborn.Dir, StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Head != "" || got.Branch != "main" || !got.Clean() {
		t.Errorf("status of an unborn branch: %+v", got)
	}
}

func TestReadStatusConflict(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.WriteFile("conflict.txt", "base\n")
	r.Commit("base")
	r.Git("checkout", "--quiet", "-b", "other")
	r.WriteFile("conflict.txt", "theirs\n")
	r.Commit("theirs")
	r.Git("checkout", "--quiet", "main")
	r.WriteFile("conflict.txt", "ours\n")
	r.Commit("ours")
	r.WriteFile("both-added.txt", "ours\n")
	r.Commit("ours")
	r.Git("checkout", "--quiet", "other")
	r.WriteFile("both-added.txt", "theirs\n")
	r.Commit("theirs, added")
	r.Git("checkout", "--quiet", "main")
	if _, err := r.TryGit("merge", "--quiet", "--no-edit", "other"); err == nil {
		t.Fatal("merge succeeded; the test needs a conflict")
	}
	got, err := ReadStatus(ctx, r.Dir, StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{
		{Kind: "unmerged", XY: "AA", Sub: "N...", Path: "both-added.txt"},
		{Kind: "unmerged", XY: "UU", Sub: "N...", Path: "conflict.txt"},
	}
	if diff := cmp.Diff(want, briefs(got)); diff != "" {
		t.Errorf("ReadStatus mismatch (-want +got):\n%s", diff)
	}
	e := got.Entries[1]
	wantStages := [3]Stage{
		{ModeFile, r.RevParse(":1:conflict.txt")},
		{ModeFile, r.RevParse(":2:conflict.txt")},
		{ModeFile, r.RevParse(":3:conflict.txt")},
	}
	if diff := cmp.Diff(wantStages, e.Stages); diff != "" || e.WorktreeMode != ModeFile {
		t.Errorf("stages mismatch (-want +got):\n%s\nworktree mode %s", diff, e.WorktreeMode)
	}
	if c := got.Counts(); c.Conflicted != 2 || c.Total() != 2 {
		t.Errorf("Counts = %+v, want 2 conflicted", c)
	}
}

func TestReadStatusSubmodules(t *testing.T) {
	t.Parallel()
	src := fixtures.NewRepo(t)
	r := fixtures.NewRepo(t)
	modified := r.AddSubmodule("sub/modified", src)
	untracked := r.AddSubmodule("sub/untracked", src)
	moved := r.AddSubmodule("sub/moved", src)
	r.AddSubmodule("sub/clean", src)
	r.NestedRepo("nested repo")

	modified.WriteFile("README.md", "changed inside\n")
	untracked.WriteFile("new.txt", "untracked inside\n")
	moved.WriteFile("more.txt", "committed inside\n")
	moved.Commit("move the submodule's HEAD")

	got, err := ReadStatus(ctx, r.Dir, StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sub := func(sub, path string) brief {
		return brief{Kind: "ordinary", XY: ".M", Sub: sub, Modes: "160000 160000 160000", Path: path}
	}
	want := []brief{
		{Kind: "untracked", Path: "nested repo/"},
		sub("S.M.", "sub/modified"),
		sub("SC..", "sub/moved"),
		sub("S..U", "sub/untracked"),
	}
	if diff := cmp.Diff(want, briefs(got)); diff != "" {
		t.Errorf("ReadStatus mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sub/modified", "sub/untracked"}, got.DirtySubmodules()); diff != "" {
		t.Errorf("DirtySubmodules mismatch (-want +got):\n%s", diff)
	}
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	const a = "78ab8055022746ff01257016035ce28d7608104d"
	const b = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
	ordinary := "1 .M N... 100644 100644 100644 " + a + " " + a + " "
	tests := []struct {
		name string
		in   string
		want *Status
		ok   bool
	}{
		{"empty", "", &Status{}, true},
		{"headers", "# branch.oid " + a + "\x00# branch.head main\x00# branch.upstream origin/main\x00# branch.ab +1 -2\x00# stash 3\x00",
			&Status{Head: a, Branch: "main"}, true},
		{"initial, detached", "# branch.oid (initial)\x00# branch.head (detached)\x00", &Status{Detached: true}, true},
		{"ordinary with spaces", ordinary + "a b  c\x00", &Status{Entries: []StatusEntry{{
			Kind: Ordinary, X: '.', Y: 'M', HeadMode: ModeFile, IndexMode: ModeFile, WorktreeMode: ModeFile,
			HeadID: a, IndexID: a, Path: "a b  c"}}}, true},
		{"renamed", "2 R. N... 100644 100644 100644 " + a + " " + b + " R87 new name\x00old\nname\x00", &Status{Entries: []StatusEntry{{
			Kind: RenamedOrCopied, X: 'R', Y: '.', HeadMode: ModeFile, IndexMode: ModeFile, WorktreeMode: ModeFile,
			HeadID: a, IndexID: b, Score: "R87", Path: "new name", OrigPath: "old\nname"}}}, true},
		{"unmerged", "u UU N... 100644 100755 120000 100644 " + a + " " + b + " " + a + " c\x00", &Status{Entries: []StatusEntry{{
			Kind: Unmerged, X: 'U', Y: 'U', WorktreeMode: ModeFile,
			Stages: [3]Stage{{ModeFile, a}, {ModeExecutable, b}, {ModeSymlink, a}}, Path: "c"}}}, true},
		{"submodule", "1 .M SCMU 160000 160000 160000 " + a + " " + a + " s\x00", &Status{Entries: []StatusEntry{{
			Kind: Ordinary, X: '.', Y: 'M', Submodule: SubmoduleState{true, true, true, true},
			HeadMode: ModeGitlink, IndexMode: ModeGitlink, WorktreeMode: ModeGitlink, HeadID: a, IndexID: a, Path: "s"}}}, true},
		{"untracked and ignored", "? dir/\x00! x.o\x00", &Status{Entries: []StatusEntry{
			{Kind: Untracked, Path: "dir/"}, {Kind: Ignored, Path: "x.o"}}}, true},
		{"unterminated", ordinary + "a", nil, false},
		{"empty path", ordinary + "\x00", nil, false},
		{"untracked without path", "? \x00", nil, false},
		{"unknown kind", "3 x\x00", nil, false},
		{"bad XY", "1 .Z N... 100644 100644 100644 " + a + " " + a + " p\x00", nil, false},
		{"bad unmerged XY", "u MM N... 100644 100644 100644 100644 " + a + " " + a + " " + a + " p\x00", nil, false},
		{"bad submodule", "1 .M SX.. 100644 100644 100644 " + a + " " + a + " p\x00", nil, false},
		{"bad mode", "1 .M N... 10064 100644 100644 " + a + " " + a + " p\x00", nil, false},
		{"non-octal mode", "1 .M N... 100648 100644 100644 " + a + " " + a + " p\x00", nil, false},
		{"short id", "1 .M N... 100644 100644 100644 78ab " + a + " p\x00", nil, false},
		{"uppercase id", "1 .M N... 100644 100644 100644 " + strings.ToUpper(a) + " " + a + " p\x00", nil, false},
		{"rename without original", "2 R. N... 100644 100644 100644 " + a + " " + b + " R100 p\x00", nil, false},
		{"bad score", "2 R. N... 100644 100644 100644 " + a + " " + b + " R101 p\x00o\x00", nil, false},
		{"score with sign", "2 R. N... 100644 100644 100644 " + a + " " + b + " R+1 p\x00o\x00", nil, false},
		{"header after entries", "? x\x00# branch.head main\x00", nil, false},
		{"bad branch.oid", "# branch.oid xyz\x00", nil, false},
		{"no space after kind", "?x\x00", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatus([]byte(tt.in))
			if (err == nil) != tt.ok {
				t.Fatalf("parseStatus(%q) error = %v, want ok %v", tt.in, err, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseStatus checks that the status parser never panics and that
// whatever it accepts, it renders back to the same bytes.
func FuzzParseStatus(f *testing.F) {
	const a = "78ab8055022746ff01257016035ce28d7608104d"
	f.Add([]byte("# branch.oid " + a + "\x00# branch.head main\x00" +
		"1 .M N... 100644 100644 100644 " + a + " " + a + " a b\x00" +
		"2 R. N... 100644 100644 100644 " + a + " " + a + " R100 new\x00old\x00" +
		"u UU N... 100644 100644 100644 100644 " + a + " " + a + " " + a + " c\x00" +
		"1 .M S.MU 160000 160000 160000 " + a + " " + a + " sub\x00" +
		"? new\nline\x00! ignored.o\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := parseStatus(in)
		if err != nil {
			return
		}
		// Headers are skipped when unknown, so compare the entries only.
		entries := in
		for len(entries) > 0 && entries[0] == '#' {
			i := strings.IndexByte(string(entries), 0)
			entries = entries[i+1:]
		}
		var out []byte
		for _, e := range s.Entries {
			out = appendStatusEntry(out, e)
		}
		if string(out) != string(entries) {
			t.Fatalf("round trip:\nin  %q\nout %q", entries, out)
		}
	})
}

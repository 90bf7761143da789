package salvage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/gitops"
)

func id(c byte) string { return strings.Repeat(string(c), 40) }

// rawCommit renders a commit object's content with these parents.
func rawCommit(parents []string, message string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "tree %s\n", id('e'))
	for _, p := range parents {
		fmt.Fprintf(&b, "parent %s\n", p)
	}
	b.WriteString("author a <a@b> 0 +0000\ncommitter a <a@b> 0 +0000\n\n")
	b.WriteString(message + "\n")
	return b.Bytes()
}

var testLayouts = []Layout{
	{Version: 2, Head: id('1'), Branch: "refs/heads/majlis/T-1", Index: id('2'), Untracked: id('3'), Meta: id('4')},
	{Version: 2, Head: id('1'), Index: id('2'), Untracked: id('3'), Meta: id('4'),
		Pins: []gitops.Pin{{Commit: id('5'), Source: "HEAD"}, {Commit: id('6'), Source: "refs/worktree/x"}, {Commit: id('7'), Source: "logs/HEAD"}}},
	{Version: 2, Index: id('2'), Untracked: id('3'), Meta: id('4')},                         // unborn
	{Version: 2, Head: id('1'), Branch: "refs/heads/x", Index: id('2'), Untracked: id('3')}, // no meta
	{Version: 2, Head: id('1'), Index: id('2'), Untracked: id('3'), Pins: []gitops.Pin{{Commit: id('5'), Source: "HEAD"}}},
}

// TestPlaceholderID checks the stand-in commit's id, computed in process,
// against git's.
func TestPlaceholderID(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	empty := strings.TrimSpace(r.Git("mktree"))
	got := strings.TrimSpace(r.GitEnv(placeholderEnv, "commit-tree", "-m", placeholderMessage, empty))
	if want := placeholderID(40); got != want {
		t.Errorf("git made %s, placeholderID says %s", got, want)
	}
	head, tree := r.Head(), r.RevParse("HEAD^{tree}")
	got = strings.TrimSpace(r.GitEnv(placeholderEnv, "commit-tree", "-p", head, "-m", indexMessage, tree))
	if want := indexCommitID(tree, head); got != want {
		t.Errorf("git made %s, indexCommitID says %s", got, want)
	}
}

func TestSalvageLayoutRoundTrip(t *testing.T) {
	t.Parallel()
	for i, l := range testLayouts {
		for _, msg := range []string{"majlis salvage", "majlis reclaim\n\nMajlis-Binding: T-1\nMajlis-Path: /x\n"} {
			raw := rawCommit(l.Parents(), l.Message(msg))
			got, err := ParseCommit(raw)
			if err != nil {
				t.Fatalf("layout %d: %v\n%s", i, err, raw)
			}
			want := l
			if strings.Contains(msg, "Majlis-Binding: T-1") {
				want.Binding = "T-1"
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("layout %d (-want +got):\n%s", i, diff)
			}
		}
	}
	// Version 1: a commit with HEAD as its only parent, no trailers.
	got, err := ParseCommit(rawCommit([]string{id('1')}, "majlis salvage\n\nMajlis-Binding: T-1"))
	if err != nil || got.Version != 1 || got.Head != id('1') {
		t.Errorf("version 1: %+v, %v", got, err)
	}
	// Trailers that disagree with the parents are refused.
	l := testLayouts[1]
	for name, raw := range map[string][]byte{
		"a parent missing":       rawCommit(l.Parents()[:4], l.Message("m")),
		"parents out of order":   rawCommit([]string{id('1'), id('3'), id('2'), id('4'), id('5'), id('6'), id('7')}, l.Message("m")),
		"unknown version":        rawCommit(l.Parents(), strings.Replace(l.Message("m"), "Majlis-Salvage: 2", "Majlis-Salvage: 3", 1)),
		"two parents, no layout": rawCommit([]string{id('1'), id('2')}, "m"),
	} {
		if _, err := ParseCommit(raw); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzParseSalvageCommit(f *testing.F) {
	for _, l := range testLayouts {
		f.Add(rawCommit(l.Parents(), l.Message("majlis salvage")))
	}
	f.Add(rawCommit([]string{id('1')}, "old"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		l, err := ParseCommit(raw)
		if err != nil {
			return
		}
		// What parses names exactly the commit's parents, in order.
		var parents []string
		hdr, _, _ := bytes.Cut(raw, []byte("\n\n"))
		for _, line := range strings.Split(string(hdr), "\n") {
			if p, ok := strings.CutPrefix(line, "parent "); ok {
				parents = append(parents, p)
			}
		}
		if l.Version == 2 && !cmp.Equal(parents, l.Parents()) {
			t.Fatalf("layout %+v, parents %v", l, parents)
		}
		if l.Version == 2 {
			again, err := ParseCommit(rawCommit(l.Parents(), l.Message("m")))
			if err != nil || !cmp.Equal(l, again) {
				t.Fatalf("layout %+v does not survive its own encoding: %+v, %v", l, again, err)
			}
		}
	})
}

func FuzzReadMetaTar(f *testing.F) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, n := range []string{"HEAD", "index", "refs/worktree/x", "rebase-merge/done"} {
		tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
		tw.Write([]byte("x\n"))
	}
	tw.Close()
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := readMetaTar(data)
		if err != nil {
			return
		}
		for n := range files {
			if n != path.Clean(n) || strings.HasPrefix(n, "/") || strings.HasPrefix(n, "../") {
				t.Fatalf("unsafe name %q accepted", n)
			}
		}
	})
}

// TestScanIndexFlags checks the flags gitops.ScanIndex reads against git's own
// listing: assume-unchanged, skip-worktree, intent-to-add, conflict stages.
func TestScanIndexFlags(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.WriteFiles(map[string]string{"au.txt": "a\n", "sw.txt": "s\n", "c.txt": "base\n"})
	r.Commit("files")
	r.Git("checkout", "--quiet", "-b", "side")
	r.WriteFile("c.txt", "theirs\n")
	r.Commit("theirs")
	r.Git("checkout", "--quiet", "main")
	r.WriteFile("c.txt", "ours\n")
	r.Commit("ours")
	if _, err := r.TryGit("merge", "side"); err == nil {
		t.Fatal("merge did not conflict")
	}
	r.Git("update-index", "--assume-unchanged", "au.txt")
	r.Git("update-index", "--skip-worktree", "sw.txt")
	r.WriteFile("ita.txt", "i\n")
	r.Git("add", "-N", "ita.txt")
	data := r.IndexBytes()
	got := map[string]string{}
	if err := gitops.ScanIndex(data, 20, func(e gitops.IndexEntry) {
		got[fmt.Sprintf("%s %d", e.Path, e.Stage)] = fmt.Sprintf("%s %s au=%t sw=%t ita=%t", e.Mode, e.ID, e.AssumeUnchanged, e.SkipWorktree, e.IntentToAdd)
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, rec := range strings.Split(strings.TrimSuffix(r.Git("ls-files", "-s", "-v", "-z"), "\x00"), "\x00") {
		meta, p, _ := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		tag := f[0]
		want[p+" "+f[3]] = fmt.Sprintf("%s %s au=%t sw=%t ita=%t", f[1], f[2], tag == "h", tag == "S", p == "ita.txt")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scanIndex (-git +scan):\n%s", diff)
	}
}

func FuzzParseReflogNew(f *testing.F) {
	f.Add([]byte(id('0') + " " + id('1') + " a <a@b> 0 +0000\tstash: one\n" + id('1') + " " + id('2') + " a <a@b> 1 +0000\tstash: two\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := gitops.ParseReflogNew(b)
		if err != nil {
			return
		}
		for _, x := range ids {
			if !gitops.IsObjectID(x) {
				t.Fatalf("id %q", x)
			}
		}
	})
}

func FuzzObjectIDs(f *testing.F) {
	f.Add([]byte("ref: refs/heads/main\n" + id('a') + " " + id('b') + "\tmsg " + id('c') + "x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, x := range objectIDs(b) {
			if !gitops.IsObjectID(x) || !bytes.Contains(b, []byte(x)) {
				t.Fatalf("id %q from %q", x, b)
			}
		}
	})
}

func TestObjectIDs(t *testing.T) {
	t.Parallel()
	got := objectIDs([]byte(id('a') + " " + id('b') + "\t" + id('c') + "x " + strings.Repeat("d", 41) + " " + strings.Repeat("e", 64) + "\n"))
	want := []string{id('a'), id('b'), strings.Repeat("e", 64)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objectIDs (-want +got):\n%s", diff)
	}
}

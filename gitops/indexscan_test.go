package gitops

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

// gitlinksByGit lists the gitlinks of r's index as git sees them.
func gitlinksByGit(r *fixtures.Repo) []string {
	var links []string
	for _, rec := range strings.Split(r.Git("ls-files", "-s", "-z"), "\x00") {
		if meta, path, ok := strings.Cut(rec, "\t"); ok && strings.HasPrefix(meta, "160000 ") {
			links = append(links, path)
		}
	}
	return links
}

func TestIndexGitlinks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		init    []string
		setup   func(r *fixtures.Repo)
		hashLen int
		wantErr error
	}{
		{"version 2", nil, func(r *fixtures.Repo) { r.Git("update-index", "--index-version", "2") }, 20, nil},
		{"version 3, intent to add", nil, func(r *fixtures.Repo) {
			r.WriteFile("ita.txt", "x")
			r.Git("add", "-N", "ita.txt")
		}, 20, nil},
		{"version 4", nil, func(r *fixtures.Repo) { r.Git("update-index", "--index-version", "4") }, 20, nil},
		{"sha256", []string{"--object-format=sha256"}, func(r *fixtures.Repo) {}, 32, nil},
		{"split index", nil, func(r *fixtures.Repo) { r.Git("update-index", "--split-index") }, 20, ErrSplitIndex},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixtures.TempDir(t)
			fixtures.Git(t, dir, append([]string{"init", "--quiet", "--initial-branch=main"}, tt.init...)...)
			r := &fixtures.Repo{T: t, Dir: dir}
			src := fixtures.NewRepo(t)
			r.WriteFile("a.txt", "a")
			r.WriteFile("dir/with a long name that v4 compresses/b.txt", "b")
			r.WriteFile("dir/with a long name that v4 compresses/c.txt", "c")
			for _, name := range fixtures.OddNames() {
				r.WriteFile("odd/"+name, name)
			}
			r.Commit("files")
			if tt.hashLen == 20 {
				r.AddSubmodule("dir/sub one", src)
				r.AddSubmodule("z/sub two ü", src)
			}
			tt.setup(r)
			data, err := os.ReadFile(filepath.Join(r.GitDir(), "index"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := IndexGitlinks(data, tt.hashLen)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("indexGitlinks error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(gitlinksByGit(r), got); diff != "" {
				t.Errorf("indexGitlinks mismatch (-git +got):\n%s", diff)
			}
			if _, err := IndexGitlinks(data, 52-tt.hashLen); err == nil {
				t.Errorf("indexGitlinks with the wrong hash length succeeded")
			}
			for _, n := range []int{0, 11, 12, len(data) / 2, len(data) - 21} {
				if _, err := IndexGitlinks(data[:n], tt.hashLen); err == nil {
					t.Errorf("indexGitlinks of %d of %d bytes succeeded", n, len(data))
				}
			}
		})
	}
}

func FuzzIndexGitlinks(f *testing.F) {
	for _, version := range []string{"2", "3", "4"} {
		dir := f.TempDir()
		mustGit := func(args ...string) {
			if out, err := (&fixtures.Repo{Dir: dir}).TryGit(args...); err != nil {
				f.Fatal(out, err)
			}
		}
		mustGit("init", "--quiet")
		for _, name := range []string{"a", "b/c", "b/d e"} {
			os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
			os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644)
		}
		mustGit("add", "-A")
		mustGit("update-index", "--add", "--cacheinfo", "160000,78ab8055022746ff01257016035ce28d7608104d,sub")
		mustGit("update-index", "--index-version", version)
		data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		links, err := IndexGitlinks(data, 20)
		if err == nil && len(links) > len(data)/62 {
			t.Fatalf("%d gitlinks from %d bytes", len(links), len(data))
		}
		// The same file read for salvage: entries with their flags, and the
		// cache-tree's root.
		end := -1
		if err := ScanIndexAt(data, 20, func(e IndexEntry) {
			if e.Stage < 0 || e.Stage > 3 || !IsObjectID(e.ID) {
				t.Fatalf("entry %+v", e)
			}
		}, &end); err == nil {
			if end < 12 || end > len(data)-20 {
				t.Fatalf("entries end at %d of %d bytes", end, len(data))
			}
			if root := CacheTreeRoot(data, 20, end); root != "" && !IsObjectID(root) {
				t.Fatalf("cache-tree root %q", root)
			}
		}
	})
}

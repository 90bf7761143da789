//go:build unix

package admission

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// physTempDir returns a fresh temporary directory by its physical path, so
// that expectations are not thrown off by a symlinked TMPDIR.
func physTempDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// makeTree creates entries under dir. A name ending in "/" is a directory;
// "name -> target" a symlink; "name => other" a hard link to the existing
// file other; "name |" a named pipe; anything else a file.
func makeTree(t testing.TB, dir string, entries ...string) {
	t.Helper()
	mkparent := func(p string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range entries {
		var err error
		switch {
		case strings.Contains(e, " -> "):
			name, target, _ := strings.Cut(e, " -> ")
			p := filepath.Join(dir, name)
			mkparent(p)
			err = os.Symlink(target, p)
		case strings.Contains(e, " => "):
			name, other, _ := strings.Cut(e, " => ")
			p := filepath.Join(dir, name)
			mkparent(p)
			err = os.Link(filepath.Join(dir, other), p)
		case strings.HasSuffix(e, " |"):
			p := filepath.Join(dir, strings.TrimSuffix(e, " |"))
			mkparent(p)
			err = syscall.Mkfifo(p, 0o644)
		case strings.HasSuffix(e, "/"):
			err = os.MkdirAll(filepath.Join(dir, e), 0o755)
		default:
			p := filepath.Join(dir, e)
			mkparent(p)
			err = os.WriteFile(p, []byte(e+"\n"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// testCheckout lays out a checkout at base/root with something to trip over
// for every rule, and returns base and the checkout.
func testCheckout(t testing.TB) (string, Checkout) {
	t.Helper()
	base := physTempDir(t)
	root := filepath.Join(base, "root")
	makeTree(t, base,
		"outside/secret",
		"outside/back -> "+root, // a way back in, from outside
		"root/.git/config",
		"root/.gitignore",
		"root/.github/workflows/ci.yml",
		"root/src/a.go",
		"root/src/sub/",
		"root/src/vendored/.git",
		"root/alias -> src",
		"root/absalias -> "+root+"/src",
		"root/filealias -> src/a.go",
		"root/chain1 -> chain2",
		"root/chain2 -> chain3",
		"root/chain3 -> src",
		"root/toroot -> .",
		"root/meta -> .git",
		"root/escape -> ../outside",
		"root/absescape -> "+base+"/outside",
		"root/escfile -> ../outside/secret",
		"root/viaout -> ../outside/back",
		"root/dangling -> nowhere",
		"root/danglingdir -> src/nowhere/deeper",
		"root/loop -> loop",
		"root/loopa -> loopb",
		"root/loopb -> loopa",
		"root/hard1",
		"root/hard2 => root/hard1",
		"root/single",
		"root/pipe |",
		"rootlink -> root",
	)
	return base, Checkout{Root: root}
}

// checkUnsafe fails the test unless err is an unsafe-path refusal of raw
// whose reason mentions every one of reasons.
func checkUnsafe(t *testing.T, err error, raw string, reasons ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want an unsafe path refusal")
	}
	if !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("error %q does not match ErrUnsafePath", err)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %q is a %T, not an *Error", err, err)
	}
	if e.Op != "path" || e.Path != raw || e.Reason == "" || e.Hint == "" {
		t.Errorf("error %#v: want Op path, Path %q, a reason and a hint", e, raw)
	}
	for _, r := range reasons {
		if !strings.Contains(e.Reason, r) {
			t.Errorf("reason %q does not mention %q", e.Reason, r)
		}
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	base, c := testCheckout(t)
	root := c.Root
	tests := []struct {
		name      string
		cwd, raw  string
		file      bool
		want      string
		wantErr   bool
		reasonHas []string // when wantErr: fragments of the reason
	}{
		{name: "file", raw: "src/a.go", file: true, want: "src/a.go"},
		{name: "dots and slashes", raw: "./src//./a.go", file: true, want: "src/a.go"},
		{name: "trailing slash", raw: "src/", want: "src"},
		{name: "dotfile is not .git", raw: ".gitignore", file: true, want: ".gitignore"},
		{name: ".github is not .git", raw: ".github/workflows/ci.yml", file: true, want: ".github/workflows/ci.yml"},
		{name: "absolute", raw: root + "/src/a.go", file: true, want: "src/a.go"},
		{name: "absolute through a symlink to the root", raw: base + "/rootlink/src/a.go", file: true, want: "src/a.go"},
		{name: "absolute through a symlink from outside back in", raw: base + "/outside/back/src/a.go", file: true, want: "src/a.go"},

		// Aliases: the key is the physical target's.
		{name: "directory alias", raw: "alias/a.go", file: true, want: "src/a.go"},
		{name: "absolute directory alias", raw: "absalias/a.go", file: true, want: "src/a.go"},
		{name: "file alias", raw: "filealias", file: true, want: "src/a.go"},
		{name: "directory alias as intent", raw: "alias", want: "src"},
		{name: "symlink chain", raw: "chain1/a.go", file: true, want: "src/a.go"},
		{name: "alias of the root", raw: "toroot/toroot/src/a.go", file: true, want: "src/a.go"},
		{name: "absolute path with an alias", raw: root + "/alias/sub", want: "src/sub"},

		// Absent paths: named through the closest existing ancestor.
		{name: "absent file", raw: "src/new.go", file: true, want: "src/new.go"},
		{name: "absent directories", raw: "src/new/dir/f.go", file: true, want: "src/new/dir/f.go"},
		{name: "absent directory as intent", raw: "gen/out", want: "gen/out"},
		{name: "absent under a directory alias", raw: "alias/new/f.go", file: true, want: "src/new/f.go"},
		{name: "absent under a symlink chain", raw: "chain1/new", want: "src/new"},
		{name: "absent, absolute, through the root link", raw: base + "/rootlink/alias/n", file: true, want: "src/n"},

		// The root.
		{name: "root as intent", raw: ".", want: ""},
		{name: "absolute root as intent", raw: root, want: ""},
		{name: "root through its link as intent", raw: base + "/rootlink/", want: ""},
		{name: "root for a file lease", raw: ".", file: true, wantErr: true, reasonHas: []string{"checkout root"}},
		{name: "root alias for a file lease", raw: "toroot", file: true, wantErr: true, reasonHas: []string{"checkout root"}},

		// Directories and special files.
		{name: "directory for a file lease", raw: "src/sub", file: true, wantErr: true, reasonHas: []string{root + "/src/sub", "directory"}},
		{name: "directory alias for a file lease", raw: "alias", file: true, wantErr: true, reasonHas: []string{root + "/src", "directory"}},
		{name: "directory as intent", raw: "src/sub", want: "src/sub"},
		{name: "pipe for a file lease", raw: "pipe", file: true, wantErr: true, reasonHas: []string{"named pipe"}},
		{name: "pipe as intent", raw: "pipe", want: "pipe"},

		// Hard links.
		{name: "hard link", raw: "hard1", file: true, wantErr: true, reasonHas: []string{root + "/hard1", "2 links"}},
		{name: "other name of the hard link", raw: "hard2", file: true, wantErr: true, reasonHas: []string{"hard-linked"}},
		{name: "hard link as literal intent", raw: "hard2", wantErr: true, reasonHas: []string{"hard-linked"}},
		{name: "single link", raw: "single", file: true, want: "single"},

		// Traversal, as written.
		{name: "dotdot inside", raw: "src/../src/a.go", file: true, wantErr: true, reasonHas: []string{"'..'"}},
		{name: "dotdot out", raw: "../outside/secret", file: true, wantErr: true, reasonHas: []string{"'..'"}},
		{name: "dotdot alone", raw: "..", wantErr: true, reasonHas: []string{"'..'"}},
		{name: "dotdot last", raw: "src/..", wantErr: true, reasonHas: []string{"'..'"}},
		{name: "a/../b", raw: "a/../b", file: true, wantErr: true, reasonHas: []string{"a/../b"}},
		{name: "dotdot in absolute path", raw: root + "/a/../src/a.go", file: true, wantErr: true, reasonHas: []string{"'..'"}},
		{name: "dotdot from a cwd", cwd: root + "/src", raw: "../src/a.go", file: true, wantErr: true, reasonHas: []string{"'..'"}},
		{name: "three dots is a name", raw: "src/...", want: "src/..."},

		// Outside.
		{name: "absolute outside", raw: base + "/outside/secret", file: true, wantErr: true, reasonHas: []string{"outside the checkout"}},
		{name: "absolute sharing a prefix", raw: root + "x/f", file: true, wantErr: true, reasonHas: []string{"outside the checkout"}},
		{name: "the file system root", raw: "/", wantErr: true, reasonHas: []string{"outside the checkout"}},
		{name: "absent absolute", raw: "/nonexistent/dir/f", file: true, wantErr: true, reasonHas: []string{"outside the checkout"}},
		{name: "escaping symlink", raw: "escape/secret", file: true, wantErr: true, reasonHas: []string{root + "/escape", base + "/outside"}},
		{name: "escaping symlink, absent child", raw: "escape/new", file: true, wantErr: true, reasonHas: []string{root + "/escape"}},
		{name: "absolute escaping symlink", raw: "absescape", wantErr: true, reasonHas: []string{root + "/absescape"}},
		{name: "escaping file symlink", raw: "escfile", file: true, wantErr: true, reasonHas: []string{root + "/escfile", base + "/outside"}},
		{name: "out and back in", raw: "viaout/src/a.go", file: true, wantErr: true, reasonHas: []string{root + "/viaout"}},
		{name: "absolute escaping symlink through the root link", raw: base + "/rootlink/escape/secret", file: true, wantErr: true, reasonHas: []string{"escape"}},

		// Symlinks that do not resolve.
		{name: "dangling", raw: "dangling", file: true, wantErr: true, reasonHas: []string{root + "/dangling"}},
		{name: "under dangling", raw: "dangling/x", file: true, wantErr: true, reasonHas: []string{root + "/dangling"}},
		{name: "dangling into absent directories", raw: "danglingdir", wantErr: true, reasonHas: []string{root + "/danglingdir"}},
		{name: "loop", raw: "loop", file: true, wantErr: true, reasonHas: []string{"symlinks"}},
		{name: "two-link loop", raw: "loopa/x", file: true, wantErr: true, reasonHas: []string{"symlinks"}},

		// Git's own data.
		{name: ".git", raw: ".git", wantErr: true, reasonHas: []string{".git"}},
		{name: ".git/config", raw: ".git/config", file: true, wantErr: true, reasonHas: []string{".git"}},
		{name: "absent in .git", raw: ".git/new", file: true, wantErr: true, reasonHas: []string{".git"}},
		{name: "absolute in .git", raw: root + "/.git/config", file: true, wantErr: true, reasonHas: []string{".git"}},
		{name: "alias of .git", raw: "meta/config", file: true, wantErr: true, reasonHas: []string{".git"}},
		{name: ".git in another case", raw: ".GIT/config", file: true, wantErr: true, reasonHas: []string{".GIT"}},
		{name: "nested repository", raw: "src/vendored/.git", file: true, wantErr: true, reasonHas: []string{".git"}},
		{name: "from a cwd in .git", cwd: root + "/.git", raw: "config", file: true, wantErr: true, reasonHas: []string{".git"}},

		// Other failures.
		{name: "empty", raw: "", wantErr: true, reasonHas: []string{"empty"}},
		{name: "NUL", raw: "src/a\x00.go", wantErr: true, reasonHas: []string{"NUL"}},
		{name: "file used as a directory", raw: "src/a.go/x", file: true, wantErr: true, reasonHas: []string{"not a directory"}},

		// The working directory.
		{name: "cwd is the root", cwd: root, raw: "src/a.go", file: true, want: "src/a.go"},
		{name: "cwd inside", cwd: root + "/src", raw: "a.go", file: true, want: "src/a.go"},
		{name: "cwd inside, dot", cwd: root + "/src", raw: ".", want: "src"},
		{name: "cwd inside, absolute path ignores it", cwd: root + "/src", raw: root + "/single", file: true, want: "single"},
		{name: "cwd through a directory alias", cwd: root + "/alias/sub", raw: "f", file: true, want: "src/sub/f"},
		{name: "cwd through the root link", cwd: base + "/rootlink/src", raw: "a.go", file: true, want: "src/a.go"},
		{name: "cwd outside, back in through a link", cwd: base + "/outside/back/src", raw: "a.go", file: true, want: "src/a.go"},
		{name: "cwd with dotdot", cwd: root + "/alias/sub/..", raw: "a.go", file: true, want: "src/a.go"},
		{name: "cwd absent inside", cwd: root + "/src/new", raw: "f", file: true, want: "src/new/f"},
		{name: "cwd outside: relative to the root", cwd: base + "/outside", raw: "src/a.go", file: true, want: "src/a.go"},
		{name: "cwd outside, absent", cwd: "/nonexistent", raw: "src/a.go", file: true, want: "src/a.go"},
		{name: "cwd inside as written, outside resolved", cwd: root + "/escape", raw: "secret", file: true, wantErr: true, reasonHas: []string{root + "/escape"}},
		{name: "cwd under a dangling symlink", cwd: root + "/dangling/x", raw: "f", file: true, wantErr: true, reasonHas: []string{root + "/dangling"}},
		{name: "cwd inside, escaping symlink", cwd: root + "/src", raw: "../escape/secret", file: true, wantErr: true, reasonHas: []string{"'..'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Key(tt.cwd, tt.raw, tt.file)
			if tt.wantErr {
				checkUnsafe(t, err, tt.raw, tt.reasonHas...)
				if got != "" {
					t.Errorf("refusal returned key %q", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Key(%q, %q, %v): %v", tt.cwd, tt.raw, tt.file, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Key(%q, %q, %v) (-want +got):\n%s", tt.cwd, tt.raw, tt.file, diff)
			}
		})
	}
}

// TestKeyFold checks the keys of a checkout whose file system folds case,
// simulated on this case-keeping one: spellings differing only in case get
// one key, and .git is recognised in any case.
func TestKeyFold(t *testing.T) {
	t.Parallel()
	_, c := testCheckout(t)
	c.Fold = true
	tests := []struct {
		raw     string
		file    bool
		want    string
		wantErr bool
	}{
		{raw: "src/a.go", file: true, want: "src/a.go"},
		{raw: "src/A.GO", file: true, want: "src/a.go"},
		{raw: "Src/New.go", file: true, want: "src/new.go"},
		{raw: "alias/README.md", file: true, want: "src/readme.md"},
		{raw: c.Root + "/src/Sub", want: "src/sub"},
		{raw: ".GIT/config", file: true, wantErr: true},
		{raw: ".Git", wantErr: true},
		{raw: "hard1", file: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := c.Key("", tt.raw, tt.file)
			if tt.wantErr {
				checkUnsafe(t, err, tt.raw)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Key(%q) (-want +got):\n%s", tt.raw, diff)
			}
		})
	}
}

// TestKeyLinkedWorktree checks a checkout whose .git is a file, as in a
// linked worktree, including a second name for it.
func TestKeyLinkedWorktree(t *testing.T) {
	t.Parallel()
	root := physTempDir(t)
	makeTree(t, root, ".git", "src/a.go", "alt => .git")
	c, err := OpenCheckout(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Key("", "src/a.go", true); err != nil || got != "src/a.go" {
		t.Errorf("Key(src/a.go) = %q, %v; want src/a.go", got, err)
	}
	for _, tt := range []struct{ raw, reason string }{
		{".git", ".git"},
		{".git/x", ".git"},
		{"alt", "under the name alt"},
	} {
		_, err := c.Key("", tt.raw, true)
		checkUnsafe(t, err, tt.raw, tt.reason)
	}
}

func TestKeyZeroCheckout(t *testing.T) {
	t.Parallel()
	_, err := Checkout{}.Key("", "src/a.go", true)
	checkUnsafe(t, err, "src/a.go", "not an absolute path")
}

// TestKeyRootMoved checks that a checkout whose root was replaced by a
// symlink after it was opened refuses instead of naming files elsewhere.
func TestKeyRootMoved(t *testing.T) {
	t.Parallel()
	base, c := testCheckout(t)
	if err := os.Rename(c.Root, base+"/moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base+"/moved", c.Root); err != nil {
		t.Fatal(err)
	}
	_, err := c.Key("", "src/a.go", true)
	checkUnsafe(t, err, "src/a.go", base+"/moved")
}

func TestKeyErrorMessage(t *testing.T) {
	t.Parallel()
	_, c := testCheckout(t)
	_, err := c.Key("", "hard1", true)
	want := "path: unsafe path: " + c.Root + "/hard1 is a hard-linked file with 2 links; " +
		"a hard-linked file is reachable under another name; copy it instead of linking"
	if diff := cmp.Diff(want, fmt.Sprint(err)); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestOpenCheckout(t *testing.T) {
	t.Parallel()
	base := physTempDir(t)
	makeTree(t, base,
		"repo/.git/HEAD",
		"repo/src/a.go",
		"linked/.git",
		"plain/",
		"file",
		"repolink -> repo",
		"dangling -> nowhere",
	)
	tests := []struct {
		name, root string
		want       Checkout
		wantErr    bool
	}{
		{name: "main worktree", root: base + "/repo", want: Checkout{Root: base + "/repo"}},
		{name: "linked worktree", root: base + "/linked", want: Checkout{Root: base + "/linked"}},
		{name: "no .git: probed with a file", root: base + "/plain", want: Checkout{Root: base + "/plain"}},
		{name: "through a symlink", root: base + "/repolink", want: Checkout{Root: base + "/repo"}},
		{name: "unclean", root: base + "//repo/./", want: Checkout{Root: base + "/repo"}},
		{name: "missing", root: base + "/missing", wantErr: true},
		{name: "a file", root: base + "/file", wantErr: true},
		{name: "dangling symlink", root: base + "/dangling", wantErr: true},
		{name: "empty", root: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := entries(t, base)
			got, err := OpenCheckout(tt.root)
			if tt.wantErr {
				checkUnsafe(t, err, tt.root)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("OpenCheckout(%q) (-want +got):\n%s", tt.root, diff)
			}
			// The probe leaves nothing behind.
			if diff := cmp.Diff(before, entries(t, base)); diff != "" {
				t.Errorf("OpenCheckout changed the tree (-before +after):\n%s", diff)
			}
		})
	}
}

// entries lists every path under dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	var list []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		list = append(list, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func TestOpenCheckoutUnwritable(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only directories")
	}
	dir := physTempDir(t)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	// Without a .git entry only a probe file can tell, and it cannot be
	// created: fail closed.
	_, err := OpenCheckout(dir)
	checkUnsafe(t, err, dir, "folds letter case")
}

// TestCaseFolds checks the read-only probe on the ".git" entry, with a
// folding file system simulated by an lstat that finds ".git" under
// ".GIT", and the cases where it must defer to a probe file.
func TestCaseFolds(t *testing.T) {
	t.Parallel()
	folding := func(name string) (fs.FileInfo, error) {
		return os.Lstat(strings.Replace(name, ".GIT", ".git", 1))
	}
	tests := []struct {
		name  string
		tree  []string
		lstat func(string) (fs.FileInfo, error)
		want  bool
	}{
		{name: ".git directory, keeping case", tree: []string{".git/"}, lstat: os.Lstat, want: false},
		{name: ".git file, keeping case", tree: []string{".git"}, lstat: os.Lstat, want: false},
		{name: ".git and a distinct .GIT", tree: []string{".git/", ".GIT/"}, lstat: os.Lstat, want: false},
		// A case-keeping directory where .GIT is a second name of the
		// .git file: the probe file must decide, and it says no folding.
		{name: ".GIT hard link of .git", tree: []string{".git", ".GIT => .git"}, lstat: os.Lstat, want: false},
		{name: "no .git", tree: []string{"x"}, lstat: os.Lstat, want: false},
		{name: ".git directory, folding", tree: []string{".git/"}, lstat: folding, want: true},
		{name: ".git file, folding", tree: []string{".git"}, lstat: folding, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := physTempDir(t)
			makeTree(t, dir, tt.tree...)
			got, err := caseFolds(dir, tt.lstat)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("caseFolds = %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzKey checks that whatever the caller writes, a key is never a way
// out of the checkout: no ".." component, no leading "/", clean, nothing of
// .git, and it names itself (Key of a key is the key).
func FuzzKey(f *testing.F) {
	base, c := testCheckout(f)
	cwds := []string{"", c.Root, c.Root + "/src", c.Root + "/alias", base + "/outside", base + "/rootlink/src", c.Root + "/escape", "rel"}
	for _, raw := range []string{
		"src/a.go", "a/../b", "../x", "..", ".", "/", "alias/new", "escape/secret", "dangling",
		"loop", "hard1", ".git/config", ".GIT", "toroot/toroot", c.Root + "/src/a.go",
		c.Root + "/a/../b", base + "/rootlink/alias", "//", "./", "src/...", "\x00", "a\\..\\b",
	} {
		f.Add(raw, uint8(0), false)
		f.Add(raw, uint8(2), true)
	}
	f.Fuzz(func(t *testing.T, raw string, sel uint8, file bool) {
		cwd := cwds[int(sel)%len(cwds)]
		key, err := c.Key(cwd, raw, file)
		if err != nil {
			var e *Error
			if !errors.Is(err, ErrUnsafePath) || !errors.As(err, &e) || e.Path != raw || e.Reason == "" {
				t.Fatalf("Key(%q, %q, %v): malformed refusal %#v", cwd, raw, file, err)
			}
			return
		}
		if strings.HasPrefix(key, "/") {
			t.Fatalf("Key(%q, %q, %v) = %q: leading /", cwd, raw, file, key)
		}
		for comp := range strings.SplitSeq(key, "/") {
			if comp == ".." || strings.EqualFold(comp, ".git") {
				t.Fatalf("Key(%q, %q, %v) = %q: has component %q", cwd, raw, file, key, comp)
			}
		}
		if key != "" && path.Clean(key) != key {
			t.Fatalf("Key(%q, %q, %v) = %q: not clean", cwd, raw, file, key)
		}
		if file && key == "" {
			t.Fatalf("Key(%q, %q, true) = the root", cwd, raw)
		}
		self := key
		if self == "" {
			self = "."
		}
		again, err := c.Key("", self, file)
		if err != nil || again != key {
			t.Fatalf("Key(%q, %q, %v) = %q, but Key of that = %q, %v", cwd, raw, file, key, again, err)
		}
	})
}

func ExampleCheckout_Key() {
	dir, err := os.MkdirTemp("", "admission-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// A checkout with a file, a symlink to its directory, and a symlink
	// leading out.
	repo := filepath.Join(dir, "repo")
	for _, d := range []string{".git", "src/auth"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			log.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "src/auth/session.go"), nil, 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.Symlink("src/auth", filepath.Join(repo, "auth")); err != nil {
		log.Fatal(err)
	}
	if err := os.Symlink(os.TempDir(), filepath.Join(repo, "tmp")); err != nil {
		log.Fatal(err)
	}

	c, err := OpenCheckout(repo)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range []string{"src/auth/session.go", "auth/session.go", "auth/new.go", "src/../src/auth/session.go", "tmp/x"} {
		key, err := c.Key("", p, true)
		if err != nil {
			fmt.Printf("%s: refused\n", p)
			continue
		}
		fmt.Printf("%s: %q\n", p, key)
	}
	// Output:
	// src/auth/session.go: "src/auth/session.go"
	// auth/session.go: "src/auth/session.go"
	// auth/new.go: "src/auth/new.go"
	// src/../src/auth/session.go: refused
	// tmp/x: refused
}

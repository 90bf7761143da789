package pathid

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestConfine(t *testing.T) {
	t.Parallel()
	base := tempDir(t)
	root := filepath.Join(base, "root")
	src := filepath.Join(root, "src")
	layout(t, base,
		"outside/secret",
		"outside/back -> "+src, // a way back in, from outside
		"root/src/a.go",
		"root/src/sub/",
		"root/alias -> src",
		"root/absalias -> "+src,
		"root/src/uplink -> ../src/sub",
		"root/deeplink -> src/sub",
		"root/toroot -> .",
		"root/updown -> ../root/src", // leaves root only through its parent
		"root/escape -> ../outside",
		"root/absescape -> "+filepath.Join(base, "outside"),
		"root/toparent -> ..",
		"root/viaout -> ../outside/back",
		"root/src/escapefile -> ../../outside/secret",
		"root/dangling -> nowhere",
		"root/loop -> loop",
		"rootlink -> root",
	)
	tests := []struct {
		name, root, path string
		want             string
		wantErr          []error
	}{
		{name: "file", path: "src/a.go", want: src + "/a.go"},
		{name: "absent file", path: "src/new.go", want: src + "/new.go"},
		{name: "absent directories", path: "src/new/dir/f", want: src + "/new/dir/f"},
		{name: "root itself", path: ".", want: root},
		{name: "dots and slashes", path: "./src//./a.go", want: src + "/a.go"},
		{name: "relative alias", path: "alias/a.go", want: src + "/a.go"},
		{name: "absolute alias, absent child", path: "absalias/new.go", want: src + "/new.go"},
		{name: "alias with dotdot inside root", path: "src/uplink", want: src + "/sub"},
		{name: "alias of root", path: "toroot/src/a.go", want: src + "/a.go"},
		{name: "alias through the root's parent", path: "updown/a.go", want: src + "/a.go"},
		{name: "absolute path", path: src + "/a.go", want: src + "/a.go"},
		{name: "absolute path through root link", path: base + "/rootlink/src/a.go", root: base + "/rootlink", want: src + "/a.go"},
		{name: "absolute physical path, root as link", path: src + "/a.go", root: base + "/rootlink", want: src + "/a.go"},
		{name: "root reached through a link", root: base + "/rootlink", path: "alias/new", want: src + "/new"},
		// Lexically root/deeplink/.. is root, but physically it is src.
		{name: "root with dotdot after a link", root: root + "/deeplink/..", path: "a.go", want: src + "/a.go"},
		{name: "absolute path in the physical root with dotdot", root: root + "/deeplink/..", path: src + "/a.go", want: src + "/a.go"},
		{name: "absolute path in the lexical root with dotdot", root: root + "/deeplink/..", path: root + "/alias/a.go",
			wantErr: []error{ErrNotConfined}},

		{name: "traversal out", path: "../outside/secret", wantErr: []error{ErrTraversal}},
		{name: "traversal that stays inside", path: "src/../src/a.go", wantErr: []error{ErrTraversal}},
		{name: "traversal in absolute path", path: root + "/src/../src/a.go", wantErr: []error{ErrTraversal}},
		{name: "symlink escaping", path: "escape/secret", wantErr: []error{ErrNotConfined}},
		{name: "symlink escaping, absent child", path: "escape/new", wantErr: []error{ErrNotConfined}},
		{name: "absolute symlink escaping", path: "absescape", wantErr: []error{ErrNotConfined}},
		{name: "file symlink escaping", path: "src/escapefile", wantErr: []error{ErrNotConfined}},
		{name: "symlink to root's parent", path: "toparent", wantErr: []error{ErrNotConfined}},
		// Comes back into root, but only by way of a directory outside it.
		{name: "symlink to root's parent and back", path: "toparent/root/src/a.go", wantErr: []error{ErrNotConfined}},
		{name: "symlink through outside", path: "viaout/a.go", wantErr: []error{ErrNotConfined}},
		{name: "dangling symlink", path: "dangling", wantErr: []error{ErrDanglingSymlink}},
		{name: "under dangling symlink", path: "dangling/new", wantErr: []error{ErrDanglingSymlink}},
		{name: "symlink loop", path: "loop/x", wantErr: []error{ErrSymlinkLoop, syscall.ELOOP}},
		{name: "absolute path outside", path: base + "/outside/secret", wantErr: []error{ErrNotConfined}},
		{name: "absolute path sharing a prefix", path: root + "x/f", wantErr: []error{ErrNotConfined}},
		{name: "file as directory", path: "src/a.go/x", wantErr: []error{syscall.ENOTDIR}},
		{name: "empty path", path: "", wantErr: []error{ErrInvalidPath}},
		{name: "missing root", root: base + "/nothere", path: "x", wantErr: []error{fs.ErrNotExist}},
		{name: "root is a file", root: src + "/a.go", path: "x", wantErr: []error{syscall.ENOTDIR}},
		{name: "dangling root", root: root + "/dangling", path: "x", wantErr: []error{ErrDanglingSymlink}},
	}
	batch := NewResolver()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.root
			if r == "" {
				r = root
			}
			got, err := Confine(r, tt.path)
			checkErr(t, err, tt.wantErr...)
			if got != tt.want {
				t.Errorf("Confine(%q, %q) = %q, want %q", r, tt.path, got, tt.want)
			}
			// A batch gives the same answer, alone and after every other
			// case has filled its lookups.
			for _, res := range []*Resolver{NewResolver(), batch} {
				got, err := res.Confine(r, tt.path)
				checkErr(t, err, tt.wantErr...)
				if got != tt.want {
					t.Errorf("Resolver.Confine(%q, %q) = %q, want %q", r, tt.path, got, tt.want)
				}
			}
		})
	}
}

func TestConfineRelativeRoot(t *testing.T) {
	base := tempDir(t)
	layout(t, base, "root/src/")
	t.Chdir(base)
	got, err := Confine("root", "src/f")
	checkErr(t, err)
	if want := filepath.Join(base, "root/src/f"); got != want {
		t.Errorf("Confine = %q, want %q", got, want)
	}
}

// A refusal names the path, the root and the offending symlink, and says
// what to do.
func TestConfineErrorExplains(t *testing.T) {
	t.Parallel()
	base := tempDir(t)
	root := filepath.Join(base, "root")
	layout(t, base, "outside/", "root/escape -> ../outside")
	_, err := Confine(root, "escape/f")
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a *pathid.Error", err)
	}
	want := Error{
		Op: "confine", Path: "escape/f", Root: root, At: root + "/escape",
		Reason: "symlink " + root + "/escape leads to " + base + "/outside, outside " + root,
		Kind:   ErrNotConfined,
	}
	if diff := cmp.Diff(want, *pe, cmpopts.EquateErrors()); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
	msg := err.Error()
	for _, part := range []string{"escape/f", "escapes its root", "outside " + root, "must point inside it too"} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q lacks %q", msg, part)
		}
	}
}

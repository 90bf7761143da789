package pathid

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// physicalLayout is shared by the physical-form tests.
func physicalLayout(t *testing.T) string {
	root := tempDir(t)
	layout(t, root,
		"real/sub/",
		"real/file",
		"abs -> "+filepath.Join(root, "real"), // absolute target
		"rel -> real",                         // relative target
		"chain1 -> chain2",                    // a chain of three links
		"chain2 -> rel",
		"real/sub/up -> ..", // a symlink to its parent
		"deep -> real/sub",
		"loop1 -> loop2",
		"loop2 -> loop1",
		"self -> self",
		"dangling -> nowhere",
		"deepdangling -> real/nothere/x",
		"chaindangling -> dangling",
		"tofile -> real/file",
	)
	return root
}

func TestPhysicalFrom(t *testing.T) {
	t.Parallel()
	root := physicalLayout(t)
	real := filepath.Join(root, "real")
	tests := []struct {
		name, path string
		want       string
		wantErr    []error
	}{
		{name: "plain directory", path: "real", want: real},
		{name: "trailing slash", path: "real/", want: real},
		{name: "double slash", path: "real//sub", want: real + "/sub"},
		{name: "bind-free alias", path: "real/../real/./sub/", want: real + "/sub"},
		{name: "absolute target", path: "abs", want: real},
		{name: "under absolute target", path: "abs/sub", want: real + "/sub"},
		{name: "relative target", path: "rel/sub", want: real + "/sub"},
		{name: "chain", path: "chain1/sub", want: real + "/sub"},
		{name: "symlink to parent", path: "real/sub/up", want: real},
		{name: "through symlink to parent", path: "real/sub/up/sub/up/file", want: real + "/file"},
		// The kernel resolves ".." from the symlink's target, not
		// lexically from the directory holding the link.
		{name: "dotdot after symlink is physical", path: "deep/..", want: real},
		{name: "dotdot after parent link", path: "real/sub/up/..", want: root},
		{name: "symlink to file", path: "tofile", want: real + "/file"},
		{name: "absent child", path: "real/new", want: real + "/new"},
		{name: "absent children of symlinked ancestor", path: "rel/new/child", want: real + "/new/child"},
		{name: "absent child of absolute link", path: "abs/sub/new/", want: real + "/sub/new"},
		{name: "absent with dots", path: "new/./child//", want: root + "/new/child"},
		{name: "absolute input", path: root + "/chain1//sub/", want: real + "/sub"},

		{name: "loop", path: "loop1", wantErr: []error{ErrSymlinkLoop, syscall.ELOOP}},
		{name: "under loop", path: "loop2/x", wantErr: []error{ErrSymlinkLoop, syscall.ELOOP}},
		{name: "self loop", path: "self", wantErr: []error{ErrSymlinkLoop}},
		{name: "dangling", path: "dangling", wantErr: []error{ErrDanglingSymlink}},
		{name: "under dangling", path: "dangling/new", wantErr: []error{ErrDanglingSymlink}},
		{name: "dangling deep target", path: "deepdangling", wantErr: []error{ErrDanglingSymlink}},
		{name: "chain to dangling", path: "chaindangling/x", wantErr: []error{ErrDanglingSymlink}},
		{name: "dotdot after absent", path: "new/../real", wantErr: []error{ErrUnresolvable}},
		{name: "dotdot after absent through link", path: "rel/new/x/../..", wantErr: []error{ErrUnresolvable}},
		{name: "file as directory", path: "real/file/x", wantErr: []error{syscall.ENOTDIR}},
		{name: "dotdot after file", path: "real/file/..", wantErr: []error{syscall.ENOTDIR}},
		{name: "link to file as directory", path: "tofile/x", wantErr: []error{syscall.ENOTDIR}},
		{name: "empty", path: "", wantErr: []error{ErrInvalidPath}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PhysicalFrom(root, tt.path)
			checkErr(t, err, tt.wantErr...)
			if len(tt.wantErr) == 0 && got != tt.want {
				t.Errorf("PhysicalFrom(root, %q) = %q, want %q", tt.path, got, tt.want)
			}
			if len(tt.wantErr) > 0 && errors.Is(err, fs.ErrNotExist) {
				t.Errorf("error %q claims the path does not exist", err)
			}
		})
	}
}

// For paths that exist, the physical form must agree with the standard
// library's own resolution.
func TestPhysicalAgreesWithEvalSymlinks(t *testing.T) {
	t.Parallel()
	root := physicalLayout(t)
	for _, p := range []string{"real", "abs/sub", "chain1", "real/sub/up", "real/sub/up/sub/up/file", "tofile", "deep/.."} {
		want, err := filepath.EvalSymlinks(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		// EvalSymlinks cleans its input before walking, so "deep/.." would
		// differ; compare such paths with what the kernel opens instead.
		if p == "deep/.." {
			want = filepath.Join(root, "real")
		}
		got, err := PhysicalFrom(root, p)
		checkErr(t, err)
		if got != want {
			t.Errorf("PhysicalFrom(root, %q) = %q, EvalSymlinks says %q", p, got, want)
		}
		gotID, err := Stat(got)
		checkErr(t, err)
		kernelID, err := Stat(root + "/" + p) // unjoined: Join would clean away the ".."
		checkErr(t, err)
		if !gotID.Equal(kernelID) {
			t.Errorf("%q resolved to %q, but the kernel opens another file (%v, want %v)", p, got, gotID, kernelID)
		}
	}
}

func TestPhysicalUsesWorkingDirectory(t *testing.T) {
	root := physicalLayout(t)
	t.Chdir(root)
	got, err := Physical("rel/new")
	checkErr(t, err)
	if want := filepath.Join(root, "real/new"); got != want {
		t.Errorf("Physical(%q) = %q, want %q", "rel/new", got, want)
	}
}

// Errors other than "does not exist" must be returned, not taken to mean
// that the path is absent. Tests run as root here, so the permission error
// is injected.
func TestPhysicalReturnsOSErrors(t *testing.T) {
	t.Parallel()
	root := physicalLayout(t)
	denied := filepath.Join(root, "real")
	w := newWalker("resolve", "rel/new")
	w.lstat = func(p string) (fs.FileInfo, error) {
		if p == denied {
			return nil, &fs.PathError{Op: "lstat", Path: p, Err: syscall.EACCES}
		}
		return os.Lstat(p)
	}
	_, err := w.walk("/", segment{rest: root + "/rel/new"})
	checkErr(t, err, fs.ErrPermission)
	if errors.Is(err, fs.ErrNotExist) {
		t.Errorf("permission error reported as absence: %v", err)
	}

	w = newWalker("resolve", "rel")
	w.readlink = func(string) (string, error) {
		return "", &fs.PathError{Op: "readlink", Path: "rel", Err: syscall.EIO}
	}
	_, err = w.walk("/", segment{rest: root + "/rel"})
	checkErr(t, err, syscall.EIO)
}

func TestPhysicalPermissionDenied(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root bypasses permission checks; TestPhysicalReturnsOSErrors injects the error instead")
	}
	root := physicalLayout(t)
	locked := filepath.Join(root, "locked")
	if err := os.Mkdir(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	_, err := PhysicalFrom(root, "locked/x/y")
	checkErr(t, err, fs.ErrPermission)
}

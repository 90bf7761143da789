package pathid

import (
	"errors"
	"io/fs"
	"syscall"
	"testing"
)

func TestErrorMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		err   *Error
		want  string
		match []error
	}{
		{
			name: "refusal with root, reason and hint",
			err:  &Error{Op: "confine", Path: "../x", Root: "/repo", Reason: "'..' is not allowed in a confined path", Kind: ErrTraversal},
			want: "pathid: confine ../x in root /repo: path contains parent traversal (..): '..' is not allowed in a confined path; " +
				"write the path relative to the root without '..' components",
			match: []error{ErrTraversal},
		},
		{
			name: "sentinel with OS error",
			err:  &Error{Op: "resolve", Path: "/a/l", At: "/a/l", Reason: "reached /a/l after following 40 symlinks", Kind: ErrSymlinkLoop, Err: syscall.ELOOP},
			want: "pathid: resolve /a/l: symlink cycle or overlong chain: reached /a/l after following 40 symlinks: " +
				"too many levels of symbolic links; break the symlink cycle, then retry",
			match: []error{ErrSymlinkLoop, syscall.ELOOP},
		},
		{
			name:  "plain OS error",
			err:   osError("stat", "/x", &fs.PathError{Op: "stat", Path: "/x", Err: syscall.ENOENT}),
			want:  "pathid: stat /x: no such file or directory",
			match: []error{fs.ErrNotExist},
		},
		{
			name:  "OS error about another path keeps that path",
			err:   osError("stat", "/x", &fs.PathError{Op: "lstat", Path: "/y", Err: syscall.EACCES}),
			want:  "pathid: stat /x: lstat /y: permission denied",
			match: []error{fs.ErrPermission},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() =\n%s\nwant\n%s", got, tt.want)
			}
			var err error = tt.err
			for _, m := range tt.match {
				if !errors.Is(err, m) {
					t.Errorf("errors.Is(%v, %v) = false", err, m)
				}
			}
			if errors.Is(err, ErrNotConfined) {
				t.Errorf("errors.Is(%v, ErrNotConfined) = true", err)
			}
		})
	}
}

// Every sentinel says what to do about it.
func TestEverySentinelHasAHint(t *testing.T) {
	t.Parallel()
	for _, s := range []error{ErrInvalidPath, ErrTraversal, ErrNotConfined, ErrDanglingSymlink, ErrSymlinkLoop, ErrUnresolvable, ErrNotRegular, ErrNoIdentity} {
		if hint(s) == "" {
			t.Errorf("no hint for %v", s)
		}
	}
}

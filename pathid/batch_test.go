package pathid

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A Resolver answers exactly as Resolve does, identities included, for
// every kind of path, whatever order the batch takes them in.
func TestResolverAgreesWithResolve(t *testing.T) {
	t.Parallel()
	root := overlapLayout(t)
	layout(t, root, "chain -> alias", "loop1 -> loop2", "loop2 -> loop1", "ws/up -> ..")
	paths := []string{
		root, root + "/ws", root + "/ws/inner", root + "/wsx", root + "/alias", root + "/alias/inner",
		root + "/aliasinner", root + "/absalias/inner/new/file", root + "/alias/new/x", root + "/chain/inner",
		root + "/ws/up/wsx", root + "/ws/up/alias/..", root + "/missing/a/b", root + "/dangling",
		root + "/ws/dangling/x", root + "/loop1", root + "/loop1/x", root + "/ws/./inner/../inner",
	}
	for _, order := range [][]string{paths, reversed(paths)} {
		r := NewResolver()
		for _, p := range order {
			want, wantErr := Resolve(p)
			got, gotErr := r.Resolve(p)
			if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
				t.Errorf("%s: Resolver error %v, Resolve error %v", p, gotErr, wantErr)
				continue
			}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(Resolved{}, dirID{})); diff != "" {
				t.Errorf("%s: Resolver disagrees with Resolve (-Resolve +Resolver):\n%s", p, diff)
			}
			wantP, wantErr := Physical(p)
			gotP, gotErr := r.Physical(p)
			if gotP != wantP || (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
				t.Errorf("%s: Resolver.Physical = %q, %v; Physical = %q, %v", p, gotP, gotErr, wantP, wantErr)
			}
		}
	}
}

// A Resolver looks each directory up once: a path that changes during the
// batch keeps the answer the batch first saw, which is why a Resolver
// serves one check only.
func TestResolverLooksOnce(t *testing.T) {
	t.Parallel()
	root := overlapLayout(t)
	r := NewResolver()
	if _, err := r.Resolve(filepath.Join(root, "later", "x")); err != nil {
		t.Fatal(err)
	}
	layout(t, root, "later -> ws")
	got, err := r.Resolve(filepath.Join(root, "later", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "later", "x"); got.Physical != want {
		t.Errorf("Physical = %s, want the batch's first answer %s", got.Physical, want)
	}
	fresh, err := NewResolver().Resolve(filepath.Join(root, "later", "x"))
	if err != nil || fresh.Physical != filepath.Join(root, "ws", "x") {
		t.Errorf("a new Resolver sees the symlink: %v, %v", fresh.Physical, err)
	}
	if _, err := NewResolver().Resolve(""); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("empty path: %v, want ErrInvalidPath", err)
	}
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

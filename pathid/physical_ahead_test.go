package pathid

import (
	"errors"
	"path/filepath"
	"testing"
)

// PhysicalAhead follows a symlink whose target does not exist yet to
// where the target will be; it agrees with Physical wherever Physical
// answers, and still refuses what no creation can settle.
func TestPhysicalAhead(t *testing.T) {
	t.Parallel()
	root := physicalLayout(t)
	for _, tc := range []struct {
		in, want string
		err      error
	}{
		{"dangling", "nowhere", nil},
		{"dangling/a/b", "nowhere/a/b", nil},
		{"deepdangling/y", "real/nothere/x/y", nil},
		{"chaindangling/y", "nowhere/y", nil},
		{"rel/sub/new", "real/sub/new", nil},   // as Physical
		{"deep/../new", "real/new", nil},       // as Physical
		{"dangling/../x", "", ErrUnresolvable}, // ".." after what does not exist
		{"loop1/x", "", ErrSymlinkLoop},        // no creation settles a loop
	} {
		got, err := PhysicalAhead(root + "/" + tc.in)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("PhysicalAhead(%s) = %q, %v; want %v", tc.in, got, err, tc.err)
			}
			continue
		}
		if want := filepath.Join(root, tc.want); err != nil || got != want {
			t.Errorf("PhysicalAhead(%s) = %q, %v; want %q", tc.in, got, err, want)
		}
		if phys, perr := Physical(root + "/" + tc.in); perr == nil && phys != got {
			t.Errorf("PhysicalAhead(%s) = %q, Physical %q", tc.in, got, phys)
		}
	}
}

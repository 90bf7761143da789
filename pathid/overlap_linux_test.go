package pathid

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCompareBindMount checks the identity form against a real bind mount,
// where the process is allowed to make one (root, or CAP_SYS_ADMIN).
func TestCompareBindMount(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root; TestCompareByIdentity covers the logic")
	}
	root := tempDir(t)
	layout(t, root, "src/inner/", "mnt/")
	src, mnt := filepath.Join(root, "src"), filepath.Join(root, "mnt")
	if err := syscall.Mount(src, mnt, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount here: %v", err)
	}
	// Registered after t.TempDir's cleanup, so it runs before it.
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})

	got, err := Compare(mnt+"/inner/new", src)
	checkErr(t, err)
	want := Overlap{Relation: BContainsA, Form: FormIdentity, A: mnt + "/inner/new", B: src, AliasA: mnt, AliasB: src}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Compare through a bind mount mismatch (-want +got):\n%s", diff)
	}
}

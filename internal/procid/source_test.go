package procid

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUse: a process whose identity source names files registers their
// ids; a bad file is refused before anything is read, and the source
// cannot change once set. It runs in a child: the source is the
// process's.
func TestUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	machine, boot := write("machine-id", "m-host-two\n"), write("boot-id", "boot-two\n")
	for _, bad := range []string{"relative/machine-id", filepath.Join(dir, "missing"), write("empty", "\n"), write("two", "a b\n")} {
		if err := CheckIDFile(bad); err == nil {
			t.Errorf("%s was taken", bad)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUseChild$", "-test.v")
	cmd.Env = append(os.Environ(), "PROCID_TEST_MACHINE="+machine, "PROCID_TEST_BOOT="+boot)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestUseChild") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func TestUseChild(t *testing.T) {
	machine, boot := os.Getenv("PROCID_TEST_MACHINE"), os.Getenv("PROCID_TEST_BOOT")
	if machine == "" {
		t.Skip("run by TestUse")
	}
	if err := Use(Source{MachineIDFile: machine, BootIDFile: boot}); err != nil {
		t.Fatal(err)
	}
	me, err := Self()
	if err != nil || me.MachineID != "m-host-two" || me.BootID != "boot-two" {
		t.Fatalf("identity %+v, %v", me, err)
	}
	if err := Use(Source{MachineIDFile: machine}); err == nil {
		t.Fatal("the source changed after the identity was read")
	}
	// The system's processes are another machine's to this one.
	if l, _ := Judge(Owner{MachineID: "m-host-one", BootID: me.BootID, PID: 1}); l != Unknown {
		t.Fatalf("another machine's process judged %v", l)
	}
}

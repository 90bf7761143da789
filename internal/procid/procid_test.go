package procid

import (
	"os"
	"os/exec"
	"testing"
)

func TestIsSelfOrAncestor(t *testing.T) {
	t.Parallel()
	self, err := Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !IsSelfOrAncestor(self) {
		t.Error("the process itself is not its own ancestor-or-self")
	}
	parent, err := Of(os.Getppid())
	if err != nil {
		t.Fatal(err)
	}
	if !IsSelfOrAncestor(parent) {
		t.Error("the parent process is not an ancestor")
	}
	wrong := parent
	wrong.StartTime++
	if IsSelfOrAncestor(wrong) {
		t.Error("a parent pid with another start time (a reused pid) was taken for an ancestor")
	}
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	c, err := Of(child.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if IsSelfOrAncestor(c) {
		t.Error("a child process was taken for an ancestor")
	}
}

// Judge answers Dead only with proof: a process that exited, a pid now
// held by another process, a boot that has ended. Another machine or pid
// namespace is Unknown, never Dead.
func TestJudge(t *testing.T) {
	t.Parallel()
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	running, err := Of(child.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	gone := self
	gone.PID, gone.StartTime = exited.Process.Pid, 1
	// Should the pid be reused already, its new process's start time is
	// not 1: still proven dead.
	reused := self
	reused.StartTime++
	otherBoot := running
	otherBoot.BootID = "00000000-0000-0000-0000-000000000000"
	otherMachine := running
	otherMachine.MachineID = "0123456789abcdef0123456789abcdef"
	otherNS := running
	otherNS.PIDNamespace = "pid:[1]"
	cases := []struct {
		name string
		o    Owner
		want Liveness
	}{
		{"self", self, Alive},
		{"running child", running, Alive},
		{"exited", gone, Dead},
		{"pid reused", reused, Dead},
		{"other boot", otherBoot, Dead},
		{"other machine", otherMachine, Unknown},
		{"other pid namespace", otherNS, Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, why := Judge(c.o); got != c.want {
				t.Errorf("Judge = %s (%s), want %s", got, why, c.want)
			}
		})
	}
	child.Process.Kill()
	child.Wait()
	if got, why := Judge(running); got != Dead {
		t.Errorf("a killed, reaped child: %s (%s), want dead", got, why)
	}
}

// parseStat reads what the kernel writes; a command name may hold spaces
// and parentheses.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("4242 (a) b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615"))
	f.Add([]byte("1 (init) S 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := parseStat(1, b)
		if err == nil && info.State == 0 {
			t.Fatalf("accepted a stat line without a state: %q", b)
		}
	})
}

func TestParseStat(t *testing.T) {
	t.Parallel()
	info, err := parseStat(4242, []byte("4242 (a) b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615\n"))
	if err != nil {
		t.Fatal(err)
	}
	if info != (Info{State: 'S', StartTime: 987654, PPID: 17}) {
		t.Errorf("%+v", info)
	}
}

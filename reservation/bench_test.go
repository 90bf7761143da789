package reservation

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
	"golang.org/x/sys/unix"
)

// floorRecord is about the size of a real lease record.
var floorRecord = make([]byte, 620)

// floorOnce does, with bare syscalls, what an acquire+release must do at
// the least: create, write and fsync a file, link it to the lease name,
// unlink the temporary name, fsync the directory; then unlink the lease
// and fsync the directory. With contend, a taken name is retried with the
// same backoff Acquire uses.
func floorOnce(dir string, df *os.File, res string, contend bool) error {
	name := filepath.Join(dir, res+".floor")
	backoff := time.Millisecond
	for {
		tmp := filepath.Join(dir, "."+res+"."+strconv.FormatUint(rand.Uint64(), 16)+".floortmp")
		fd, err := unix.Open(tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		if _, err := unix.Write(fd, floorRecord); err != nil {
			return err
		}
		if err := unix.Fsync(fd); err != nil {
			return err
		}
		err = unix.Link(tmp, name)
		unix.Unlink(tmp)
		if errors.Is(err, unix.EEXIST) && contend {
			unix.Close(fd)
			time.Sleep(backoff/2 + rand.N(backoff))
			backoff = min(2*backoff, 64*time.Millisecond)
			continue
		}
		if err != nil {
			return err
		}
		if err := df.Sync(); err != nil {
			return err
		}
		if err := unix.Unlink(name); err != nil {
			return err
		}
		if err := df.Sync(); err != nil {
			return err
		}
		return unix.Close(fd)
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	d := openTestDir(b)
	req := Request{Resource: "bench", Purpose: "bench", TTL: time.Minute}
	ctx := b.Context()
	for b.Loop() {
		l, err := d.Acquire(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFloorSyscalls(b *testing.B) {
	d := openTestDir(b)
	for b.Loop() {
		if err := floorOnce(d.path, d.df, "bench", false); err != nil {
			b.Fatal(err)
		}
	}
}

// contended runs op in this process while 4 helper processes run the same
// kind of operation on the same resource, and reports the total rate.
func contended(b *testing.B, mode string, op func(d *Dir) error) {
	d := openTestDir(b)
	env := []string{"LEASE_DIR=" + d.path, "LEASE_RES=bench"}
	var kids []*fixtures.Helper
	for range 4 {
		kids = append(kids, startChild(b, mode, env))
	}
	for _, k := range kids {
		k.Send("go")
	}
	start := time.Now()
	n := 0
	for b.Loop() {
		if err := op(d); err != nil {
			b.Fatal(err)
		}
		n++
	}
	elapsed := time.Since(start)
	b.StopTimer()
	total := n
	for _, k := range kids {
		k.CloseStdin()
		var r childReply
		k.Recv(&r)
		if !r.OK {
			b.Fatalf("child: %s", r.Err)
		}
		total += r.Count
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "total-ops/s")
}

func BenchmarkAcquireReleaseContended4(b *testing.B) {
	req := Request{Resource: "bench", Purpose: "bench", TTL: time.Minute, Wait: time.Hour}
	contended(b, "bench-acquire", func(d *Dir) error {
		l, err := d.Acquire(b.Context(), req)
		if err != nil {
			return err
		}
		return l.Release()
	})
}

func BenchmarkFloorSyscallsContended4(b *testing.B) {
	contended(b, "bench-floor", func(d *Dir) error { return floorOnce(d.path, d.df, "bench", true) })
}
